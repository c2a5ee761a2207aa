// Stepping through a step: all ranks stop in lockstep before the same compute
// op; next op / unit / phase / step move them together; next action also stops
// at frees of gathered parameters and at collective launches; breakpoints stop
// on an op kind (a free, a launch) or a unit; the ledger at a stop shows the
// gathered parameters of the unit being computed; cancel works while stopped;
// a stepped modeled run writes the same trace as one run straight through.
#include <QtTest>

#include <chrono>
#include <thread>

#include <sstream>

#include "common/errors.h"
#include "engine/run.h"
#include "trace/chrome_trace_writer.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {

RunConfig zero3() {
  RunConfig c;
  c.strategy = Strategy::Zero3;
  c.ranks = 4;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 8;
  c.steps = 2;
  return c;
}

// Waits (bounded) for the next all-ranks stop after `after`; returns the points.
std::vector<GatePoint> nextStop(Run& run, uint64_t& after) {
  std::vector<GatePoint> points;
  uint64_t id = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline && !run.finished()) {
    if (run.gate().stopped(&points, &id) && id != after) {
      after = id;
      return points;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

void expectLockstep(const std::vector<GatePoint>& points) {
  QVERIFY(!points.empty());
  for (const GatePoint& p : points) QCOMPARE(p, points.front());
}

}  // namespace

class TestStepGate : public QObject {
  Q_OBJECT

 private slots:
  void stepsThroughAnFsdpStep() {
    Run run(zero3());
    run.gate().enable();
    run.gate().pause();
    run.start();
    uint64_t stop = 0;
    auto points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].kind, EventKind::Forward);  // the first op: the root's input projection
    QCOMPARE(points[0].block, 0);
    QCOMPARE(points[0].unit, 0);

    run.gate().step(StepMode::NextOp);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].kind, EventKind::Forward);
    QCOMPARE(points[0].unit, 1);  // block 0's unit
    // Stopped before unit 1 computes: its parameters are gathered on every rank.
    for (int r = 0; r < 4; ++r) QVERIFY(run.ledger(r).current[size_t(Category::Gathered)] > 0);

    run.gate().step(StepMode::NextUnit);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].unit, 2);

    run.gate().step(StepMode::NextPhase);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].kind, EventKind::Backward);
    QCOMPARE(points[0].step, 0);
    // Backward: the unit's full gradient exists next to its gathered params.
    run.gate().step(StepMode::NextUnit);
    points = nextStop(run, stop);
    QCOMPARE(points[0].kind, EventKind::Backward);
    for (int r = 0; r < 4; ++r) QVERIFY(run.ledger(r).current[size_t(Category::GradFull)] > 0);

    run.gate().step(StepMode::NextPhase);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].kind, EventKind::OptimizerStep);

    run.gate().step(StepMode::NextStep);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].step, 1);
    QCOMPARE(points[0].kind, EventKind::Forward);

    run.gate().resume();
    const RunResult r = run.wait();
    QCOMPARE(int(r.losses.size()), 2);
  }

  void breakpointsOnKindAndUnit() {
    Run run(zero3());
    run.gate().enable();
    run.gate().setBreakpoints({EventKind::OptimizerStep}, {3});
    run.start();
    uint64_t stop = 0;
    std::vector<std::pair<EventKind, int>> seen;
    for (int i = 0; i < 8; ++i) {
      const auto points = nextStop(run, stop);
      if (points.empty()) break;
      expectLockstep(points);
      seen.emplace_back(points[0].kind, points[0].unit);
      run.gate().resume();
    }
    run.wait();
    // Per step: unit 3 forward, unit 3 backward, the optimizer.
    const std::vector<std::pair<EventKind, int>> expected{
        {EventKind::Forward, 3}, {EventKind::Backward, 3}, {EventKind::OptimizerStep, -1},
        {EventKind::Forward, 3}, {EventKind::Backward, 3}, {EventKind::OptimizerStep, -1}};
    QCOMPARE(seen, expected);
  }

  void ddpStopsToo() {
    RunConfig c = zero3();
    c.strategy = Strategy::Ddp;
    Run run(c);
    run.gate().enable();
    run.gate().setBreakpoints({EventKind::Backward}, {});
    run.start();
    uint64_t stop = 0;
    int stops = 0;
    while (true) {
      const auto points = nextStop(run, stop);
      if (points.empty()) break;
      expectLockstep(points);
      ++stops;
      run.gate().resume();
      if (stops == 2 * 6) break;
    }
    run.wait();
    QCOMPARE(stops, 2 * 6);  // input, 4 blocks, head per step
  }

  void pauseFromAFreeRunStopsInLockstep() {
    // Running freely the ranks drift apart by an op or more; Pause must
    // still stop them all at one point (the furthest rank's next).
    for (int attempt = 0; attempt < 5; ++attempt) {
      RunConfig c = zero3();
      c.steps = 1000;
      Run run(c);
      run.gate().enable();
      run.start();
      while (run.stepsDone() < 1 && !run.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(attempt * 3));
      run.gate().pause();
      uint64_t stop = 0;
      expectLockstep(nextStop(run, stop));
      run.cancel();
      QVERIFY_THROWS_EXCEPTION(RunAborted, run.wait());
    }
  }

  void replicatedRanksStopTogether() {
    // 64 meta ranks are simulated once: the copies stop where rank 0 stops.
    RunConfig c = zero3();
    c.backend = Backend::Meta;
    c.clock = ClockKind::Modeled;
    c.ranks = 64;
    c.batch = 64;
    Run run(c);
    QVERIFY(run.replicated());
    run.gate().enable();
    run.gate().pause();
    run.start();
    uint64_t stop = 0;
    auto points = nextStop(run, stop);
    QCOMPARE(points.size(), size_t{64});
    expectLockstep(points);
    run.gate().step(StepMode::NextUnit);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[63].unit, 1);
    run.gate().resume();
    QCOMPARE(int(run.wait().losses.size()), 2);
  }

  void stepByActionStopsAtFreesAndLaunches() {
    RunConfig c = zero3();
    c.prefetch = Prefetch::None;
    c.steps = 1;
    Run run(c);
    run.gate().enable();
    run.gate().pause();
    run.start();
    uint64_t stop = 0;
    std::vector<std::pair<EventKind, int>> seen;
    for (auto points = nextStop(run, stop); !points.empty(); points = nextStop(run, stop)) {
      expectLockstep(points);
      const GatePoint& p = points[0];
      seen.emplace_back(p.kind, p.unit);
      if (p.kind == EventKind::Free) {
        // Before the free the unit's gathered parameters are still there.
        for (int r = 0; r < 4; ++r) QVERIFY(run.ledger(r).current[size_t(Category::Gathered)] > 0);
      }
      run.gate().step(StepMode::NextAction);
    }
    run.wait();
    // The first pause is at the first compute op; then, without prefetch, each
    // unit's gather launch, its forward and its free (unit 1 first).
    const auto at = [&](EventKind k, int unit) {
      return std::find(seen.begin(), seen.end(), std::make_pair(k, unit)) - seen.begin();
    };
    QVERIFY(at(EventKind::AllGather, 1) < at(EventKind::Forward, 1));
    QVERIFY(at(EventKind::Forward, 1) < at(EventKind::Free, 1));
    QVERIFY(at(EventKind::Free, 1) < at(EventKind::AllGather, 2));
    QVERIFY(at(EventKind::ReduceScatter, 4) < static_cast<std::ptrdiff_t>(seen.size()));
    const auto count = [&](EventKind k) { return std::count_if(seen.begin(), seen.end(), [k](const auto& e) { return e.first == k; }); };
    QCOMPARE(count(EventKind::ReduceScatter), 5);  // every unit's gradients, root included
    QCOMPARE(count(EventKind::Free), 10);          // forward (4 blocks + root) and backward (5)
    QCOMPARE(count(EventKind::OptimizerStep), 1);

    // A breakpoint on frees stops only there; by op steps over them.
    Run frees(c);
    frees.gate().enable();
    frees.gate().setBreakpoints(breakEventKinds({BreakOp::Free}), {});
    frees.start();
    stop = 0;
    int free_stops = 0;
    for (auto points = nextStop(frees, stop); !points.empty(); points = nextStop(frees, stop)) {
      QCOMPARE(points[0].kind, EventKind::Free);
      ++free_stops;
      frees.gate().step(StepMode::NextOp);
      points = nextStop(frees, stop);
      if (points.empty()) break;
      QVERIFY(isComputeGate(points[0].kind) || points[0].kind == EventKind::Free);
      if (points[0].kind == EventKind::Free) ++free_stops;
      frees.gate().resume();
    }
    frees.wait();
    QVERIFY(free_stops >= 5);

    // ZeRO: the all-gather of the updated parameters is launched after the optimizer.
    RunConfig z = zero3();
    z.strategy = Strategy::Zero1;
    z.steps = 1;
    Run zero(z);
    zero.gate().enable();
    zero.gate().setBreakpoints(breakEventKinds({BreakOp::AllGather, BreakOp::OptimizerStep}), {});
    zero.start();
    stop = 0;
    std::vector<EventKind> kinds;
    for (auto points = nextStop(zero, stop); !points.empty(); points = nextStop(zero, stop)) {
      kinds.push_back(points[0].kind);
      zero.gate().resume();
    }
    zero.wait();
    QCOMPARE(kinds, (std::vector<EventKind>{EventKind::OptimizerStep, EventKind::AllGather}));
  }

  void steppedModeledRunWritesTheSameTrace() {
    // Gate points cost nothing on the modeled clock: a run stepped by action
    // through its first step writes the trace a straight run writes.
    RunConfig c = zero3();
    c.clock = ClockKind::Modeled;
    c.profile = "h100-sxm";
    c.prefetch = Prefetch::None;
    const auto traceText = [](Run& run) {
      std::ostringstream out;
      writeChromeTrace(run.trace(), out);
      return out.str();
    };
    Run straight(c);
    straight.execute();
    Run stepped(c);
    stepped.gate().enable();
    stepped.gate().pause();
    stepped.start();
    uint64_t stop = 0;
    for (int i = 0; i < 40; ++i) {
      if (nextStop(stepped, stop).empty()) break;
      stepped.gate().step(StepMode::NextAction);
    }
    stepped.gate().resume();
    stepped.wait();
    QVERIFY(traceText(stepped) == traceText(straight));
  }

  void cancelWhileStopped() {
    Run run(zero3());
    run.gate().enable();
    run.gate().pause();
    run.start();
    uint64_t stop = 0;
    QVERIFY(!nextStop(run, stop).empty());
    const auto t0 = Clock::now();
    run.cancel();
    QVERIFY_THROWS_EXCEPTION(RunAborted, run.wait());
    QVERIFY(std::chrono::duration<double>(Clock::now() - t0).count() < 2.0);
  }
};

QTEST_APPLESS_MAIN(TestStepGate)
#include "test_step_gate.moc"
