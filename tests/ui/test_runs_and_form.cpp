// The Runs table, the form and the screen agree: bringing a run back sets the
// form to its config and highlights its row; the row follows the run on
// screen; two runs never share a name (table or loss legend); an opened trace
// joins the table, and a CPU run's losses come back with its trace; an empty
// trace says why in a dialog. A hung run's stuck collective is on the
// timeline (hatched red from its start to the stop, "waiting for rank 1", on
// every waiting rank), and the red banner goes when the config is edited.
// Messages for the banner speak the form's words; each strategy has its own
// walkthrough text (ZeRO-1 frees no gradients; zero3 and fsdp say they are one).
#include <QDir>
#include <QFile>
#include <QMessageBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "config/config_json.h"
#include "engine_bridge.h"
#include "experiment_panel.h"
#include "loss_view.h"
#include "main_window.h"
#include "preset.h"
#include "run_files.h"
#include "run_history_model.h"
#include "timeline_plottable.h"
#include "timeline_view.h"
#include "walkthrough_model.h"

using namespace shardscope;

namespace {

constexpr int kWaitMs = 120000;

RunConfig small(Strategy strategy) {
  RunConfig c;
  c.strategy = strategy;
  c.ranks = 2;
  c.model.layers = 2;
  c.model.hidden = 32;
  c.batch = 4;
  c.steps = 3;
  c.clock = ClockKind::Modeled;
  c.profile = "h100-sxm";
  c.timeout_ms = 20000;
  return c;
}

bool runToEnd(MainWindow& w, const RunConfig& c, QString* message = nullptr) {
  w.experimentPanel()->setConfig(c);
  QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
  QString error;
  if (!w.startRun(&error)) {
    if (message) *message = error;
    return false;
  }
  if (!finished.wait(kWaitMs)) return false;
  if (message) *message = finished.at(0).at(1).toString();
  return finished.at(0).at(0).toBool();
}

int selectedRow(const MainWindow& w) {
  const QModelIndexList rows = w.runsTable()->selectionModel()->selectedRows();
  return rows.size() == 1 ? rows.front().row() : -1;
}

}  // namespace

class TestRunsAndForm : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_runs_and_form"));
  }

  void theRunsTableTheFormAndTheScreenAgree() {
    MainWindow w;
    w.setPersistSettings(false);
    QString message;
    const RunConfig ddp = small(Strategy::Ddp);
    QVERIFY2(runToEnd(w, ddp, &message), qPrintable(message));
    QVERIFY2(runToEnd(w, ddp, &message), qPrintable(message));  // the same experiment again
    const RunConfig zero3 = small(Strategy::Zero3);
    QVERIFY2(runToEnd(w, zero3, &message), qPrintable(message));
    RunHistoryModel* history = w.history();
    QCOMPARE(history->runCount(), 3);
    // Distinct names, in the table and in the loss legend.
    QVERIFY(history->run(0).label != history->run(1).label);
    QVERIFY2(history->run(1).label.endsWith(QStringLiteral("(2)")), qPrintable(history->run(1).label));
    QCOMPARE(w.lossView()->runCount(), 3);
    QStringList legend;
    for (int i = 0; i < w.lossView()->runCount(); ++i) legend << w.lossView()->runLabel(i);
    legend.removeDuplicates();
    QCOMPARE(legend.size(), 3);
    // The last run is on screen: its row is highlighted.
    QCOMPARE(selectedRow(w), 2);

    // Bring run 1 back: every view shows it, the form holds its config (Run
    // would repeat it), and its row is the highlighted one.
    QVERIFY(configJsonText(history->run(0).config) != configJsonText(history->run(2).config));
    QVERIFY(w.showHistoryRun(0));
    QCOMPARE(configJsonText(w.experimentPanel()->config()), configJsonText(history->run(0).config));
    QCOMPARE(w.experimentPanel()->config().strategy, Strategy::Ddp);
    QCOMPARE(selectedRow(w), 0);
    QCOMPARE(w.inspection().run().historyRow, 0);
    QVERIFY(w.showHistoryRun(2));
    QCOMPARE(configJsonText(w.experimentPanel()->config()), configJsonText(history->run(2).config));
    QCOMPARE(w.experimentPanel()->config().strategy, zero3.strategy);
    QCOMPARE(selectedRow(w), 2);
  }

  void openedTracesJoinTheTableWithTheirLosses() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("zero2.trace.json"));
    std::vector<double> losses;
    {
      MainWindow w;
      w.setPersistSettings(false);
      QString message;
      QVERIFY2(runToEnd(w, small(Strategy::Zero2), &message), qPrintable(message));
      losses = w.store().losses();
      QCOMPARE(losses.size(), size_t{3});
      QVERIFY2(w.exportTrace(path, &message), qPrintable(message));
    }
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY2(w.openTrace(path, &error), qPrintable(error));
    QCOMPARE(w.history()->runCount(), 1);
    QCOMPARE(w.history()->run(0).label, QStringLiteral("zero2.trace.json"));
    QCOMPARE(selectedRow(w), 0);
    // The CPU run's losses are in its trace: the loss view draws them.
    QCOMPARE(w.store().losses(), losses);
    QCOMPARE(w.lossView()->pointCount(), 3);
    QCOMPARE(w.history()->run(0).losses, losses);
    // Opened twice: two rows, two names.
    QVERIFY2(w.openTrace(path, &error), qPrintable(error));
    QCOMPARE(w.history()->runCount(), 2);
    QVERIFY(w.history()->run(1).label != w.history()->run(0).label);
    QCOMPARE(selectedRow(w), 1);
  }

  void anEmptyTraceSaysWhyInADialog() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("empty.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"traceEvents\":[]}");
    f.close();
    MainWindow w;
    w.setPersistSettings(false);
    w.show();
    QString error;
    QVERIFY2(w.openTrace(path, &error), qPrintable(error));
    QVERIFY(w.store().empty());
    QVERIFY2(w.files()->notice().contains(QStringLiteral("no events")), qPrintable(w.files()->notice()));
    auto* box = w.findChild<QMessageBox*>(QStringLiteral("traceNotice"));
    QVERIFY(box);
    QVERIFY(box->isVisible());
    QVERIFY(!box->isModal());
    QCOMPARE(box->text(), w.files()->notice());
    QCOMPARE(w.history()->runCount(), 0);  // nothing to bring back
  }

  void aHangIsOnTheTimelineAndTheBannerGoesOnEdit() {
    RunConfig c;
    c.strategy = Strategy::Ddp;
    c.ranks = 4;
    c.model.layers = 4;
    c.model.hidden = 64;
    c.batch = 8;
    c.steps = 2;
    c.bucket_mb = 0.05;
    c.first_bucket_mb = 0.02;
    c.inject_branch = InjectBranch{1, 2};
    c.timeout_ms = 1500;
    c.clock = ClockKind::Modeled;
    c.profile = "h100-sxm";
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    QString message;
    QVERIFY(!runToEnd(w, c, &message));
    QVERIFY2(message.contains(QStringLiteral("waiting for rank 1")), qPrintable(message));
    QVERIFY(w.bannerText().contains(QStringLiteral("Run stopped")));
    TimelineView* timeline = w.timeline();
    const std::vector<StuckCollective>& stuck = timeline->stuckCollectives();
    QVERIFY(!stuck.empty());
    // The view that followed the run shows the stuck span to its end.
    QVERIFY2(timeline->plot()->xAxis->range().upper * 1e6 >= double(stuck.front().until_ns),
             qPrintable(QStringLiteral("view ends at %1 ms, the stuck span at %2 ms")
                            .arg(timeline->plot()->xAxis->range().upper)
                            .arg(double(stuck.front().until_ns) * 1e-6)));
    timeline->zoomToFit();
    std::set<int> waiting;
    for (const StuckCollective& s : stuck) {
      waiting.insert(s.rank);
      QCOMPARE(s.waiting_for, std::vector<int>{1});
      QVERIFY(s.until_ns > s.begin_ns);
      QVERIFY(s.until_ns >= w.store().endNs());
      QCOMPARE(w.store().events(s.rank)[size_t(s.event)].kind, EventKind::AllReduce);
    }
    QStringList seen;
    for (const StuckCollective& s : stuck)
      seen << QStringLiteral("rank %1 event %2 (%3)")
                  .arg(s.rank)
                  .arg(s.event)
                  .arg(QString::fromUtf8(eventKindName(w.store().events(s.rank)[size_t(s.event)].kind).data()));
    QVERIFY2(waiting == (std::set<int>{0, 2, 3}), qPrintable(seen.join(QStringLiteral("; "))));  // every waiting rank, not rank 1
    // Drawn: hatched red over its span, its tooltip names the missing rank.
    QCustomPlot* plot = timeline->plot();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    auto* drawn = static_cast<TimelinePlottable*>(plot->plottable(0));
    const QRectF rect = drawn->stuckRect(stuck.front());
    QVERIFY(rect.width() > 20);
    const QImage image = plot->toPixmap(plot->width(), plot->height()).toImage();
    int red = 0, all = 0;
    for (int x = int(rect.left()) + 1; x < int(rect.right()); ++x)
      for (int y = int(rect.top()) + 1; y < int(rect.bottom()); ++y, ++all) {
        const QColor p = image.pixelColor(x, y);
        red += p.red() > 150 && p.green() < 120 && p.blue() < 120;
      }
    QVERIFY2(red > all / 20, qPrintable(QStringLiteral("%1 of %2 pixels of the stuck box red").arg(red).arg(all)));
    const QPoint inside = rect.center().toPoint() + QPoint(int(rect.width() / 4), 0);
    const QString tip = timeline->tooltipAt(inside);
    QVERIFY2(tip.contains(QStringLiteral("waiting for rank 1")),
             qPrintable(QStringLiteral("at %1,%2 in box %3,%4 %5x%6 (axis rect %7,%8 %9x%10): '%11'")
                            .arg(inside.x()).arg(inside.y()).arg(rect.x()).arg(rect.y()).arg(rect.width()).arg(rect.height())
                            .arg(plot->axisRect()->rect().x()).arg(plot->axisRect()->rect().y())
                            .arg(plot->axisRect()->rect().width()).arg(plot->axisRect()->rect().height()).arg(tip)));

    // The user edits the experiment: the red banner is about the last run, it goes.
    auto* ranks = w.experimentPanel()->findChild<QSpinBox*>(QStringLiteral("ranks"));
    ranks->setValue(2);
    QVERIFY(w.bannerText().isEmpty());
  }

  void theHangPresetShowsItsStuckSpan() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    QSignalSpy done(&w, &MainWindow::presetFinished);
    QString error;
    QVERIFY2(w.runPreset(findPreset(QStringLiteral("rank-dependent-hang")), &error), qPrintable(error));
    QVERIFY(done.wait(kWaitMs));
    QTest::qWait(200);
    const std::vector<StuckCollective>& stuck = w.timeline()->stuckCollectives();
    QVERIFY(!stuck.empty());
    QVERIFY2(w.timeline()->plot()->xAxis->range().upper * 1e6 >= double(stuck.front().until_ns),
             qPrintable(QStringLiteral("view ends at %1 ms, the stuck span at %2 ms")
                            .arg(w.timeline()->plot()->xAxis->range().upper)
                            .arg(double(stuck.front().until_ns) * 1e-6)));
  }

  void messagesSpeakTheFormsWords() {
    QCOMPARE(ExperimentPanel::guiWords(QStringLiteral("--batch 15 must be a multiple of --ranks 8")),
             QStringLiteral("Global batch 15 must be a multiple of ranks 8"));
    QCOMPARE(ExperimentPanel::guiWords(QStringLiteral("nothing to translate")), QStringLiteral("nothing to translate"));
  }

  void eachStrategyHasItsOwnWalkthrough() {
    const Algorithm zero1 = WalkthroughModel::algorithm(Strategy::Zero1);
    const Algorithm zero2 = WalkthroughModel::algorithm(Strategy::Zero2);
    QVERIFY(zero1.title.contains(QStringLiteral("ZeRO-1")));
    QVERIFY(zero2.title.contains(QStringLiteral("ZeRO-2")));
    for (const QString& line : zero1.lines)
      QVERIFY2(!line.contains(QStringLiteral("free the bucket's full gradients")), qPrintable(line));
    QVERIFY(std::find(zero2.lines.begin(), zero2.lines.end(),
                      QStringLiteral("free the bucket's full gradients; only the owned shard stays")) != zero2.lines.end());
    QVERIFY(WalkthroughModel::algorithm(Strategy::Hsdp).title.contains(QStringLiteral("HSDP")));
    for (Strategy s : {Strategy::Zero3, Strategy::Fsdp})
      QVERIFY(WalkthroughModel::algorithm(s).note.contains(QStringLiteral("zero3 and fsdp are the same algorithm")));
    QVERIFY(WalkthroughModel::algorithm(Strategy::Zero3).lines == WalkthroughModel::algorithm(Strategy::Fsdp).lines);
  }
};

QTEST_MAIN(TestRunsAndForm)
#include "test_runs_and_form.moc"
