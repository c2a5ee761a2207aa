// Legends and slides (issue 31, defect 10): every mark the timeline draws has
// a legend entry — each kind it draws (the broadcast box was missing), folded
// boxes and the pale waiting part of a collective — and the exported units
// slide speaks to the audience (no "cursor" or other internal wording); the
// units grid names every state in its cells, or none.
#include <QtTest>

#include <QFile>
#include <QTemporaryDir>
#include <qcustomplot.h>

#include "engine_bridge.h"
#include "experiment_panel.h"
#include "figure_export.h"
#include "inspect/event_store.h"
#include "main_window.h"
#include "palette.h"
#include "timeline_plottable.h"
#include "timeline_view.h"
#include "units_view.h"

using namespace shardscope;

namespace {

Event box(EventKind kind, Lane lane, int64_t begin, int64_t end, int64_t value = 0) {
  Event e;
  e.rank = 0;
  e.kind = kind;
  e.lane = lane;
  e.begin_ns = begin;
  e.end_ns = end;
  e.value = value;
  return e;
}

}  // namespace

class TestLegendsAndSlides : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_legends_and_slides"));
  }

  // Every kind the plottable can draw is one the legend names.
  void everyDrawnKindHasALegendEntry() {
    const std::vector<EventKind> legend = TimelineView::legendOrder();
    for (int k = 0; k < kEventKindCount; ++k) {
      const auto kind = static_cast<EventKind>(k);
      if (!TimelinePlottable::drawsKind(kind)) continue;
      QVERIFY2(std::find(legend.begin(), legend.end(), kind) != legend.end(),
               qPrintable(QStringLiteral("%1 is drawn but not in the legend").arg(Palette::kindTitle(kind))));
    }
  }

  // A run's marks on screen: the broadcast box, a collective that waited, folds.
  void marksOnScreenAreInTheLegend() {
    EventStore store;
    RunTrace meta;
    meta.ranks = 1;
    store.reset(meta);
    std::vector<Event> events;
    events.push_back(box(EventKind::Broadcast, Lane::Comm, 0, 400'000));
    for (int i = 0; i < 400; ++i)  // ops far narrower than a pixel: folded
      events.push_back(box(EventKind::Forward, Lane::Compute, 500'000 + i * 1'000, 500'000 + i * 1'000 + 800));
    events.push_back(box(EventKind::AllReduce, Lane::Comm, 1'000'000, 3'000'000, 1'000'000));  // half of it waiting
    store.appendEvents(0, events);
    TimelineView view(&store);
    view.resize(900, 500);
    view.refresh();
    view.zoomToFit();
    view.grab();
    QCoreApplication::processEvents();  // the legend follows the paint (queued)
    view.grab();
    const QStringList names = view.legendNames();
    for (const QString& wanted : {Palette::kindTitle(EventKind::Broadcast), Palette::kindTitle(EventKind::AllReduce),
                                  QStringLiteral("folded: several short ops"),
                                  QStringLiteral("pale part: waiting for the slowest peer")})
      QVERIFY2(names.contains(wanted), qPrintable(QStringLiteral("'%1' missing from: %2").arg(wanted, names.join(" | "))));
  }

  // The units grid names every state in its cells or none (the legend names
  // them): at 8 ranks "computing" no longer fit while "sharded" did, so the
  // computing cell alone went unnamed.
  void unitCellsNameEveryStateOrNone() {
    QFont font;
    font.setPointSizeF(7.5);
    const QFontMetricsF fm(font);
    double widest = 0;
    for (int s = 0; s < kUnitStateCount; ++s)
      widest = std::max(widest, fm.horizontalAdvance(Palette::unitStateTitle(static_cast<UnitState>(s))));
    const double sharded = fm.horizontalAdvance(Palette::unitStateTitle(UnitState::Sharded));
    QVERIFY(widest > sharded + 2);
    const QSizeF narrow((sharded + widest) / 2 + 4, 20);  // "sharded" fits, "computing" does not
    QVERIFY(!UnitsView::cellLabelFont({font}, narrow));
    QVERIFY(UnitsView::cellLabelFont({font}, QSizeF(widest + 6, 20)));
    QFont small = font;
    small.setPointSizeF(5);
    QCOMPARE(UnitsView::cellLabelFont({font, small}, narrow), std::optional<QFont>(small));
  }

  // The units slide after an FSDP run: its text is for the audience.
  void unitsSlideSpeaksToTheAudience() {
    MainWindow w;
    w.setPersistSettings(false);
    RunConfig c;
    c.strategy = Strategy::Zero3;
    c.ranks = 4;
    c.model.layers = 4;
    c.model.hidden = 64;
    c.model.io_dim = 32;
    c.batch = 8;
    c.steps = 2;
    c.unit_blocks = 1;
    c.clock = ClockKind::Modeled;
    c.profile = "h100-sxm";
    w.experimentPanel()->setConfig(c);
    QVERIFY2(w.experimentPanel()->isValid(), qPrintable(w.experimentPanel()->errorText()));
    QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
    QString error;
    QVERIFY2(w.startRun(&error), qPrintable(error));
    QVERIFY(finished.wait(120000));
    QVERIFY(finished.at(0).at(0).toBool());
    w.setCursorTime(std::nullopt);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("units.svg"));
    FigureOptions slide;
    slide.slide = true;
    QVERIFY2(w.exportViewFigure(QStringLiteral("units"), path, 1920, 1080, &error, slide), qPrintable(error));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QString svg = QString::fromUtf8(file.readAll());
    QVERIFY(svg.contains(QStringLiteral("FSDP unit states")));
    for (const char* internal : {"cursor", "no cursor", "middle unit's forward)", "TODO", "debug"})
      QVERIFY2(!svg.contains(QLatin1String(internal), Qt::CaseInsensitive), internal);
  }
};

QTEST_MAIN(TestLegendsAndSlides)
#include "test_legends_and_slides.moc"
