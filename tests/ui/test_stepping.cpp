// Stepping through a step in the window: Step with no run starts the
// experiment paused before the first op; every stop holds all ranks in
// lockstep, moves the shared cursor to the gate and shows there exactly what
// the engine's ledger holds; stepping by op through an FSDP forward makes each
// unit's gathered parameters appear and vanish; breakpoints on a unit stop
// there; Pause stops a free run; Stop while paused returns to idle.
#include <QAction>
#include <QLabel>
#include <QMenu>
#include <qcustomplot.h>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>

#include "engine_bridge.h"
#include "experiment_panel.h"
#include "main_window.h"
#include "memory_view.h"
#include "step_walkthrough.h"
#include "stepping_controls.h"
#include "inspect/unit_states.h"
#include "walkthrough_model.h"
#include "units_view.h"
#include "timeline_view.h"
#include "common/units.h"

using namespace shardscope;

namespace {

RunConfig fsdpConfig() {
  RunConfig c;
  c.strategy = Strategy::Zero3;
  c.ranks = 4;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 8;
  c.steps = 2;
  c.unit_blocks = 1;
  c.prefetch = Prefetch::Both;
  c.clock = ClockKind::Modeled;
  c.profile = "h100-sxm";
  c.timeout_ms = 20000;
  return c;
}

constexpr int kWaitMs = 60000;

// Waits for the next stop; after it, lets the other streams settle (a
// prefetched gather may still be finishing): the store must hold every event
// the ranks published, and that count and rank 0's books must stay put. The
// engine runs at a low priority, so on a loaded machine this can take a while.
bool waitStop(MainWindow& w, QSignalSpy& stops) {
  const int before = stops.count();
  if (!QTest::qWaitFor([&] { return stops.count() > before || !w.bridge()->isRunning(); }, kWaitMs)) return false;
  if (!w.bridge()->gateStop()) return false;
  size_t seen = 0;
  std::array<int64_t, kCategoryCount> books{};
  QElapsedTimer clock;
  clock.start();
  for (int stable = 0; stable < 5 && clock.elapsed() < kWaitMs;) {
    QTest::qWait(40);
    const size_t now = w.store().eventCount();
    const auto ledger = w.bridge()->ledgerNow(0).current;
    stable = now == seen && now == w.bridge()->recordedEvents() && ledger == books ? stable + 1 : 0;
    seen = now;
    books = ledger;
  }
  return w.bridge()->gateStop().has_value();
}

}  // namespace

class TestStepping : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_stepping"));
  }

  void stepThroughAnFsdpForward() {
    MainWindow w;
    w.setPersistSettings(false);
    w.experimentPanel()->setConfig(fsdpConfig());
    QVERIFY2(w.experimentPanel()->isValid(), qPrintable(w.experimentPanel()->errorText()));
    QSignalSpy stops(w.bridge(), &EngineBridge::gateStopped);
    QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
    SteppingControls* stepping = w.stepping();
    QVERIFY(stepping->stepAction()->isEnabled());
    stepping->setGranularity(StepMode::NextOp);

    stepping->stepAction()->trigger();  // no run yet: starts paused
    QVERIFY(waitStop(w, stops));
    auto stop = *w.bridge()->gateStop();
    QVERIFY(stop.lockstep);
    QCOMPARE(stop.points.size(), size_t{4});
    QCOMPARE(stop.points[0].kind, EventKind::Forward);
    QCOMPARE(stop.points[0].unit, 0);  // the root: input projection first
    QCOMPARE(w.cursorTime(), std::optional<int64_t>(stop.at_ns));
    QVERIFY(w.bannerText().contains(QStringLiteral("Paused")));
    QVERIFY(!stepping->pauseAction()->isEnabled());
    QVERIFY(stepping->continueAction()->isEnabled());

    // Forward through the block units: at each stop the unit about to compute
    // is gathered on every rank, the unit two back has been freed again, and
    // the memory view at the cursor equals the engine's ledger at the gate.
    const int units = 1 + 4;
    std::vector<int64_t> gathered_at_unit;
    for (int u = 1; u < units; ++u) {
      stepping->stepAction()->trigger();
      QVERIFY(waitStop(w, stops));
      stop = *w.bridge()->gateStop();
      QVERIFY(stop.lockstep);
      QCOMPARE(stop.points[0].kind, EventKind::Forward);
      QCOMPARE(stop.points[0].unit, u);
      QCOMPARE(w.cursorTime(), std::optional<int64_t>(stop.at_ns));
      for (int r = 0; r < 4; ++r) {
        const auto shown = w.memoryView()->barBytes(r);
        const LedgerSnapshot engine = w.bridge()->ledgerNow(r);
        // The compute stream's own books are exact at its gate. Gathered
        // memory also moves on the gather stream, whose threads may already
        // have begun the next prefetch that the timeline places just after
        // the gate: the view shows no more than the engine holds.
        for (Category c : {Category::Param, Category::Activation, Category::Gathered}) {
          const int64_t view = shown[size_t(c)], books = engine.current[size_t(c)];
          QVERIFY2(c == Category::Gathered ? view > 0 && view <= books : view == books,
                   qPrintable(QStringLiteral("rank %1 %2: view %3 B, engine %4 B at the stop before unit %5")
                                  .arg(r)
                                  .arg(QString::fromUtf8(categoryName(c).data(), qsizetype(categoryName(c).size())))
                                  .arg(view)
                                  .arg(books)
                                  .arg(u)));
        }
        const UnitState here = w.unitsView()->cellState(r, u);
        QVERIFY2(here == UnitState::Gathered || here == UnitState::Computing,
                 qPrintable(QStringLiteral("unit %1 on rank %2 is %3 at its forward")
                                .arg(u)
                                .arg(r)
                                .arg(static_cast<int>(here))));
        if (u >= 3) QVERIFY(w.unitsView()->cellState(r, u - 2) != UnitState::Gathered);
      }
      gathered_at_unit.push_back(w.memoryView()->barBytes(0)[size_t(Category::Gathered)]);
      // The walkthrough lights the line the engine is about to run: FSDP line 3, "run the unit".
      const auto& lit = w.walkthrough()->litLines();
      QVERIFY(std::any_of(lit.begin(), lit.end(), [](const LitLine& l) { return l.line == 2 && l.primary; }));
    }
    // Reshard after forward: gathered memory stays bounded (root + at most two
    // block units with prefetch), it never grows with the unit index.
    for (int64_t g : gathered_at_unit) QVERIFY(g > 0 && g <= gathered_at_unit.front() * 2);

    // Phase: the head (root unit's second use) and then backward.
    stepping->setGranularity(StepMode::NextPhase);
    stepping->stepAction()->trigger();
    QVERIFY(waitStop(w, stops));
    QCOMPARE(w.bridge()->gateStop()->points[0].kind, EventKind::Backward);
    const auto& lit = w.walkthrough()->litLines();
    QVERIFY(std::any_of(lit.begin(), lit.end(), [](const LitLine& l) { return l.line == 6 && l.primary; }));
    QVERIFY(w.bridge()->ledgerNow(0).current[size_t(Category::GradFull)] >= 0);

    stepping->continueAction()->trigger();
    QVERIFY(finished.wait(kWaitMs));
    QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));
    QVERIFY(!w.bridge()->gateStop());
    QVERIFY(!w.bannerText().contains(QStringLiteral("Paused")));
  }

  // Issue 31, defect 5: at every stop the timeline shows the cursor (it
  // follows the stop), the units view names the step the ranks are in (not
  // "between steps" during step 0), and Ctrl+1…5 pick the step sizes in the
  // order the Step by menu lists them.
  void everyStopIsInViewAndNamed() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.experimentPanel()->setConfig(fsdpConfig());
    QSignalSpy stops(w.bridge(), &EngineBridge::gateStopped);
    QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
    SteppingControls* stepping = w.stepping();
    stepping->setGranularity(StepMode::NextAction);
    stepping->stepAction()->trigger();
    int seen = 0;
    for (; seen < 40 && waitStop(w, stops); ++seen) {
      const auto stop = *w.bridge()->gateStop();
      const QCPRange shown = w.timeline()->plot()->xAxis->range();
      const double at = static_cast<double>(stop.at_ns) / kNsPerMs;
      QVERIFY2(shown.contains(at), qPrintable(QStringLiteral("stop %1 at %2 ms, the timeline shows %3–%4 ms")
                                                  .arg(seen)
                                                  .arg(at)
                                                  .arg(shown.lower)
                                                  .arg(shown.upper)));
      if (stop.points[0].step == 0)
        QVERIFY2(w.unitsView()->infoText().startsWith(QStringLiteral("step 0")),
                 qPrintable(QStringLiteral("stop %1: %2").arg(seen).arg(w.unitsView()->infoText())));
      stepping->stepAction()->trigger();
    }
    QVERIFY(seen >= 10);
    if (w.bridge()->isRunning()) {
      w.stepping()->continueAction()->trigger();
      QVERIFY(finished.count() == 1 || finished.wait(kWaitMs));
    }

    // The menu's order: op, action, unit, phase, training step = Ctrl+1 … Ctrl+5.
    QMenu* by = nullptr;
    for (QMenu* m : w.findChildren<QMenu*>())
      if (m->title().remove(QLatin1Char('&')) == QStringLiteral("Step by")) by = m;
    QVERIFY(by);
    const QList<QAction*> items = by->actions();
    QCOMPARE(items.size(), 5);
    const StepMode order[] = {StepMode::NextOp, StepMode::NextAction, StepMode::NextUnit, StepMode::NextPhase,
                              StepMode::NextStep};
    for (int i = 0; i < 5; ++i) {
      QCOMPARE(items[i]->shortcut(), QKeySequence(QStringLiteral("Ctrl+%1").arg(i + 1)));
      items[i]->trigger();
      QCOMPARE(stepping->granularity(), order[i]);
    }
  }

  void breakpointOnAUnitStopsThere() {
    MainWindow w;
    w.setPersistSettings(false);
    w.experimentPanel()->setConfig(fsdpConfig());
    w.stepping()->setBreakpoints({}, {2});
    QSignalSpy stops(w.bridge(), &EngineBridge::gateStopped);
    QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
    QString error;
    QVERIFY2(w.startRun(&error), qPrintable(error));
    std::vector<std::pair<EventKind, int>> seen;
    while (waitStop(w, stops)) {
      const auto& stop = *w.bridge()->gateStop();
      QVERIFY(stop.lockstep);
      seen.emplace_back(stop.points[0].kind, stop.points[0].unit);
      w.stepping()->continueAction()->trigger();
    }
    QVERIFY(finished.count() == 1 || finished.wait(kWaitMs));
    const std::vector<std::pair<EventKind, int>> expected{
        {EventKind::Forward, 2}, {EventKind::Backward, 2}, {EventKind::Forward, 2}, {EventKind::Backward, 2}};
    QCOMPARE(seen, expected);
  }

  void pauseStopsAFreeRunAndStopReturnsToIdle() {
    MainWindow w;
    w.setPersistSettings(false);
    RunConfig c = fsdpConfig();
    c.clock = ClockKind::Measured;
    c.profile.reset();
    c.steps = 100000;  // still running when paused
    w.experimentPanel()->setConfig(c);
    QSignalSpy stops(w.bridge(), &EngineBridge::gateStopped);
    QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
    QString error;
    QVERIFY2(w.startRun(&error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(w.bridge()->stepsDone() >= 1, kWaitMs);
    QVERIFY(w.stepping()->pauseAction()->isEnabled());
    w.stepping()->pauseAction()->trigger();
    QVERIFY(waitStop(w, stops));
    const auto stop = *w.bridge()->gateStop();
    QVERIFY(stop.lockstep);
    QCOMPARE(w.cursorTime(), std::optional<int64_t>(stop.at_ns));
    // Measured clock: the cursor is the last rank's arrival, so every rank's
    // events up to the gate are in the store.
    for (int r = 0; r < 4; ++r) QVERIFY(stop.times_ns[size_t(r)] <= stop.at_ns);

    QElapsedTimer idle;
    idle.start();
    QMetaObject::invokeMethod(w.bridge(), &EngineBridge::cancel);
    QVERIFY(finished.wait(kWaitMs));
    QCOMPARE(finished.at(0).at(0).toBool(), false);
    QVERIFY(!w.bridge()->isRunning());
    qInfo("stop while paused: idle after %lld ms", static_cast<long long>(idle.elapsed()));
    QVERIFY(w.stepping()->stepAction()->isEnabled());  // ready to start again
  }
};

QTEST_MAIN(TestStepping)
#include "test_stepping.moc"
