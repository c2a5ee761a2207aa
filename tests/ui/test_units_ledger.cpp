// Stepping an FSDP step of the fsdp-prefetch-on-off preset action by action
// (ops, frees, launches), the units grid, the memory ledger and the engine
// agree at every stop: the units drawn gathering, gathered or computing are
// exactly the ledger's gathered bytes on every rank, the unit the engine is
// about to compute or free is gathered, the root stays gathered through the
// forward, and the banner and the grid's header name the same bytes. The
// walkthrough lights "free the gathered parameters" at a free. A stop on a
// paused zero1 run keeps the ledger view: the memory view still shows the
// model state that was allocated.
#include <QLabel>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>
#include <qcustomplot.h>

#include "engine_bridge.h"
#include "experiment_panel.h"
#include "inspect/unit_states.h"
#include "main_window.h"
#include "memory_view.h"
#include "model/model_spec.h"
#include "parallel/fsdp_units.h"
#include "preset.h"
#include "step_walkthrough.h"
#include "stepping_controls.h"
#include "units_view.h"

using namespace shardscope;

namespace {

constexpr int kWaitMs = 60000;

// The next stop, with every stream settled (see test_stepping.cpp).
bool waitStop(MainWindow& w, QSignalSpy& stops) {
  const int before = stops.count();
  if (!QTest::qWaitFor([&] { return stops.count() > before || !w.bridge()->isRunning(); }, kWaitMs)) return false;
  if (!w.bridge()->gateStop()) return false;
  size_t seen = 0;
  std::array<int64_t, kCategoryCount> books{};
  QElapsedTimer clock;
  clock.start();
  for (int stable = 0; stable < 4 && clock.elapsed() < kWaitMs;) {
    QTest::qWait(30);
    const size_t now = w.store().eventCount();
    const auto ledger = w.bridge()->ledgerNow(0).current;
    stable = now == seen && now == w.bridge()->recordedEvents() && ledger == books ? stable + 1 : 0;
    seen = now;
    books = ledger;
  }
  return w.bridge()->gateStop().has_value();
}

QString mibText(int64_t bytes) { return QString::number(static_cast<double>(bytes) / (1024.0 * 1024.0), 'f', 2); }

}  // namespace

class TestUnitsLedger : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_units_ledger"));
  }

  void everyStopOfAnFsdpStepAgrees_data() {
    QTest::addColumn<int>("run");
    QTest::newRow("prefetch none") << 0;
    QTest::newRow("prefetch both") << 1;
  }
  void everyStopOfAnFsdpStepAgrees() {
    QFETCH(int, run);
    const Preset preset = findPreset(QStringLiteral("fsdp-prefetch-on-off"));
    QVERIFY(preset.runs.size() == 2);
    const RunConfig config = preset.runs[static_cast<size_t>(run)].config;
    const ModelSpec spec(config.model);
    const FsdpUnits fsdp(spec, config.unitBlocks(), config.shardGroupSize());
    std::vector<int64_t> bytes;
    for (const FsdpUnit& u : fsdp.units()) bytes.push_back(u.padded * 2);

    MainWindow w;
    w.setPersistSettings(false);
    w.experimentPanel()->setConfig(config);
    QVERIFY2(w.experimentPanel()->isValid(), qPrintable(w.experimentPanel()->errorText()));
    QSignalSpy stops(w.bridge(), &EngineBridge::gateStopped);
    QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
    w.stepping()->setGranularity(StepMode::NextAction);
    w.stepping()->stepAction()->trigger();  // starts paused

    std::set<EventKind> kinds_seen;
    bool free_lit = false;
    int checked = 0;
    // Step 0 and the start of step 1: "Step twice or more".
    while (waitStop(w, stops)) {
      const auto stop = *w.bridge()->gateStop();
      const GatePoint& p = stop.points.front();
      if (p.step >= 1 && p.kind == EventKind::Backward) break;
      QVERIFY(stop.lockstep);
      QCOMPARE(w.cursorTime(), std::optional<int64_t>(stop.at_ns));
      kinds_seen.insert(p.kind);
      const UnitsView* units = w.unitsView();
      QCOMPARE(units->shownTime(), stop.at_ns);
      QCOMPARE(units->states().unitCount(), static_cast<int>(bytes.size()));
      const QString where = SteppingControls::describe(stop.points, true, w.store());
      for (int r = 0; r < config.ranks; ++r) {
        int64_t grid = 0;
        for (int u = 0; u < units->states().unitCount(); ++u)
          if (holdsParameters(units->cellState(r, u))) grid += bytes[static_cast<size_t>(units->states().unitId(u))];
        const int64_t ledger = w.memoryView()->barBytes(r)[size_t(Category::Gathered)];
        const int64_t engine = w.bridge()->ledgerNow(r).current[size_t(Category::Gathered)];
        QVERIFY2(grid + units->states().unattributedBytes(r, stop.at_ns) == ledger,
                 qPrintable(QStringLiteral("%1: rank %2's grid holds %3 B, the ledger view %4 B")
                                .arg(where)
                                .arg(r)
                                .arg(grid)
                                .arg(ledger)));
        // The engine may already be gathering the next prefetch (placed just
        // after the gate on the modeled clock): never less than the view.
        QVERIFY2(ledger <= engine, qPrintable(QStringLiteral("%1: rank %2 view %3 B > engine %4 B").arg(where).arg(r).arg(ledger).arg(engine)));
        if (p.unit >= 0) {
          const UnitState at = units->cellState(r, units->states().indexOf(p.unit));
          // Computing, freeing or reducing a unit needs its gathered copy; a
          // gather launch (no prefetch) comes before it.
          if (p.kind == EventKind::AllGather)
            QVERIFY2(!holdsParameters(at), qPrintable(where + QStringLiteral(": already gathered on rank %1").arg(r)));
          else
            QVERIFY2(holdsParameters(at), qPrintable(where + QStringLiteral(": not gathered on rank %1 (state %2)")
                                                             .arg(r)
                                                             .arg(static_cast<int>(at))));
        }
        // The root (input projection and head) stays gathered for the whole
        // forward, from its gather to its free after the loss.
        if (p.kind == EventKind::Forward && p.unit > 0)
          QVERIFY2(holdsParameters(units->cellState(r, units->states().indexOf(0))),
                   qPrintable(where + QStringLiteral(": root not gathered on rank %1").arg(r)));
      }
      // One number for rank 0: the banner's, the grid header's and the ledger's.
      const QString held = mibText(w.memoryView()->barBytes(0)[size_t(Category::Gathered)]);
      QVERIFY2(w.bannerText().contains(held + QStringLiteral(" MiB of gathered")), qPrintable(w.bannerText()));
      QVERIFY2(units->infoText().contains(held + QStringLiteral(" MiB gathered")), qPrintable(units->infoText()));
      if (p.kind == EventKind::Free)
        for (const LitLine& l : w.walkthrough()->litLines()) free_lit = free_lit || ((l.line == 3 || l.line == 8) && l.primary);
      ++checked;
      w.stepping()->stepAction()->trigger();
    }
    QVERIFY(checked > 50);
    QVERIFY(kinds_seen.count(EventKind::Free));
    QVERIFY(kinds_seen.count(EventKind::ReduceScatter));
    if (run == 0) QVERIFY(kinds_seen.count(EventKind::AllGather));  // launches wait for compute only without prefetch
    QVERIFY(free_lit);
    QMetaObject::invokeMethod(w.bridge(), &EngineBridge::cancel);
    QVERIFY(finished.count() == 1 || finished.wait(kWaitMs));
  }

  void afterARunTheHeaderNamesTheLedgersBytes() {
    const Preset preset = findPreset(QStringLiteral("fsdp-prefetch-on-off"));
    MainWindow w;
    w.setPersistSettings(false);
    w.experimentPanel()->setConfig(preset.runs[1].config);
    QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
    QString error;
    QVERIFY2(w.startRun(&error), qPrintable(error));
    QVERIFY(finished.wait(kWaitMs));
    QVERIFY(finished.at(0).at(0).toBool());
    UnitsView* units = w.unitsView();
    units->refresh(true);
    // No cursor: the middle unit's forward; then a few other moments.
    for (std::optional<int64_t> t : {std::optional<int64_t>(), std::optional<int64_t>(units->shownTime() / 2),
                                     std::optional<int64_t>(w.store().endNs())}) {
      w.setCursorTime(t);
      const int64_t at = units->shownTime();
      w.memoryView()->setCursorTime(at);
      const int64_t ledger = w.memoryView()->barBytes(0)[size_t(Category::Gathered)];
      QVERIFY2(units->infoText().contains(mibText(ledger) + QStringLiteral(" MiB gathered")), qPrintable(units->infoText()));
      const UnitState root = units->cellState(0, units->states().indexOf(0));
      QCOMPARE(holdsParameters(root), units->states().heldBytes(0, units->states().indexOf(0), at) > 0);
    }
  }

  void stopWhilePausedKeepsTheLedger() {
    RunConfig c;
    c.strategy = Strategy::Zero1;
    c.ranks = 4;
    c.model.layers = 4;
    c.model.hidden = 64;
    c.batch = 8;
    c.steps = 3;
    c.clock = ClockKind::Modeled;
    c.profile = "h100-sxm";
    c.timeout_ms = 20000;
    MainWindow w;
    w.setPersistSettings(false);
    w.experimentPanel()->setConfig(c);
    QSignalSpy stops(w.bridge(), &EngineBridge::gateStopped);
    QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
    w.stepping()->setGranularity(StepMode::NextOp);
    w.stepping()->stepAction()->trigger();
    QVERIFY(waitStop(w, stops));
    for (int i = 0; i < 3; ++i) {
      w.stepping()->stepAction()->trigger();
      QVERIFY(waitStop(w, stops));
    }
    const LedgerSnapshot engine = w.bridge()->ledgerNow(0);
    int64_t state = 0;
    for (Category k : {Category::Param, Category::Grad, Category::Master, Category::AdamM, Category::AdamV})
      state += engine.current[size_t(k)];
    QVERIFY(state > 0);
    QMetaObject::invokeMethod(w.bridge(), &EngineBridge::cancel);
    QVERIFY(finished.wait(kWaitMs));
    QCOMPARE(finished.at(0).at(0).toBool(), false);
    w.memoryView()->refresh(true);
    // The stopped run's ledger: its peak model state is what the engine held.
    const MemorySample* peak = w.memoryView()->series().peakModelState(0);
    QVERIFY(peak);
    QCOMPARE(peak->modelState(), state);
    w.setCursorTime(std::nullopt);
    int64_t shown = 0;
    for (Category k : {Category::Param, Category::Grad, Category::Master, Category::AdamM, Category::AdamV})
      shown += w.memoryView()->barBytes(0)[size_t(k)];
    QCOMPARE(shown, state);
    // Nothing freed below zero or at t = 0: every sample's model state is >= 0
    // and the last one still holds it.
    for (const MemorySample& s : w.memoryView()->series().samples(0)) QVERIFY(s.modelState() >= 0);
    QCOMPARE(w.memoryView()->series().samples(0).back().modelState(), state);
  }
};

QTEST_MAIN(TestUnitsLedger)
#include "test_units_ledger.moc"
