// The window made of pages: every preset view is a page by its name, the
// Inspection's cursor and selection reach the pages without the window in
// between, a shown run is one record (source, label, preset, config), and a
// page with no run to draw says so.
#include <QtTest>

#include <QSignalSpy>

#include "inspection.h"
#include "main_window.h"
#include "memory_view.h"
#include "page_registry.h"
#include "preset.h"
#include "timeline_view.h"
#include "units_view.h"

using namespace shardscope;

class TestPages : public QObject {
  Q_OBJECT

 private slots:
  void everyPresetViewIsAPage() {
    MainWindow w;
    w.setPersistSettings(false);
    QStringList names = w.pages().names();
    // The capacity calculator and the trace diff are pages too, needing no run (no preset shows them).
    QStringList views = presetViews() << QStringLiteral("capacity") << QStringLiteral("diff");
    names.sort();
    views.sort();
    QCOMPARE(names, views);
    for (const QString& view : presetViews()) {
      Page* page = w.pages().find(view);
      QVERIFY2(page, qPrintable(view));
      QCOMPARE(page->name(), view);
      QVERIFY(page->widget());
      // Nothing to draw yet: every page says why, in the words --figure prints.
      QCOMPARE(page->unavailable(), QStringLiteral("there is no run to draw: run a preset or open a trace first"));
      QCOMPARE(w.figureUnavailable(view), page->unavailable());
    }
    QVERIFY(!w.pages().find(QStringLiteral("runs")));
    QString error;
    QVERIFY(!w.exportViewFigure(QStringLiteral("nope"), QStringLiteral("/tmp/x.png"), 800, 600, &error));
    QVERIFY2(error.startsWith(QStringLiteral("unknown view 'nope': use one of timeline, memory")), qPrintable(error));
  }

  void cursorAndSelectionReachThePages() {
    MainWindow w;
    w.setPersistSettings(false);
    Inspection& in = w.inspection();
    QSignalSpy cursor(&in, &Inspection::cursorChanged);
    in.setCursor(1'500'000);
    QCOMPARE(cursor.count(), 1);
    QCOMPARE(w.timeline()->cursorTime(), std::optional<int64_t>(1'500'000));
    QCOMPARE(w.cursorTime(), std::optional<int64_t>(1'500'000));
    // The units page asks for a cursor (its slider): the Inspection takes it, the timeline follows.
    emit w.unitsView()->cursorRequested(2'000'000);
    QCOMPARE(in.cursor(), std::optional<int64_t>(2'000'000));
    QCOMPARE(w.timeline()->cursorTime(), std::optional<int64_t>(2'000'000));
    w.setCursorTime(std::nullopt);
    QCOMPARE(w.timeline()->cursorTime(), std::optional<int64_t>());
    // Clicking an op of rank 2 on the timeline selects rank 2 for every page.
    QSignalSpy rank(&in, &Inspection::rankSelected);
    emit w.timeline()->rankClicked(2);
    QCOMPARE(in.selectedRank(), 2);
    QCOMPARE(rank.count(), 1);
    QCOMPARE(rank.at(0).at(0).toInt(), 2);
  }

  void aLiveRunIsOneShownRun() {
    MainWindow w;
    w.setPersistSettings(false);
    Preset preset = findPreset(QStringLiteral("fsdp-prefetch-on-off"));
    QCOMPARE(preset.runs.size(), size_t(2));
    QSignalSpy shown(&w.inspection(), &Inspection::runShown);
    QSignalSpy done(&w, &MainWindow::presetFinished);
    // The live run as its last run ends (the lesson then ends compared, showing run 1).
    std::optional<ShownRun> live;
    QString liveTitle;
    std::optional<Prefetch> livePrefetch;
    QStringList unavailable;
    int finished = 0;
    connect(&w, &MainWindow::runFinished, this, [&] {
      if (++finished != 2) return;
      live = w.inspection().run();
      liveTitle = w.windowTitle();
      if (w.inspection().runConfig()) livePrefetch = w.inspection().runConfig()->prefetchMode();
      for (const QString& view : {QStringLiteral("timeline"), QStringLiteral("units"), QStringLiteral("comm"),
                                  QStringLiteral("buckets")})
        unavailable << w.figureUnavailable(view);
      QCOMPARE(shown.count(), 2);
    });
    QString error;
    QVERIFY2(w.runPreset(preset, &error), qPrintable(error));
    QVERIFY(done.wait(120000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    QVERIFY(live);
    const ShownRun& run = *live;
    QCOMPARE(run.kind, ShownRun::Kind::Live);
    QVERIFY(run.done && run.ok && run.error.isEmpty());
    QCOMPARE(run.label, preset.runs[1].label);
    QCOMPARE(run.preset, preset.name);
    QCOMPARE(run.runOf, QStringLiteral("run 2 of 2"));
    QCOMPARE(run.source, QStringLiteral("preset %1, run 2/2: %2").arg(preset.name, preset.runs[1].label));
    QVERIFY(livePrefetch);
    QCOMPARE(*livePrefetch, preset.runs[1].config.prefetchMode());
    QCOMPARE(liveTitle, QStringLiteral("ShardScope — ") + run.source);
    QVERIFY(!w.presetRunning());
    for (int i = 0; i < 3; ++i) QVERIFY2(unavailable[i].isEmpty(), qPrintable(unavailable[i]));
    QVERIFY(!unavailable[3].isEmpty());  // fsdp has units, not buckets
    QVERIFY(w.inspection().comparing());  // the lesson ends compared
    // A run of the Runs table replaces it whole: no field of the live run is left behind.
    QVERIFY(w.showHistoryRun(0));
    const ShownRun& first = w.inspection().run();
    QCOMPARE(first.kind, ShownRun::Kind::History);
    QCOMPARE(first.label, preset.runs[0].label);
    QVERIFY(first.runOf.isEmpty());
    QCOMPARE(first.source, QStringLiteral("run 1: %1").arg(preset.runs[0].label));
    QCOMPARE(w.inspection().runConfig()->prefetchMode(), preset.runs[0].config.prefetchMode());
  }
};

QTEST_MAIN(TestPages)
#include "test_pages.moc"
