// Stepping a pipeline: its stages stop at slots of the schedule's unit-time
// order (PipelineScheduleOrder::slot), never in lockstep on one op. Each stop
// holds every stage before its first pass at or after the stop's slot, with
// every pass before it done (no stage waits on another while stopped); next
// op moves one slot on, next phase to the step's flush, next step to the next
// step's first passes; a stepped run gives the straight run's losses (CPU
// ranks) and trace (modeled clock), for GPipe, 1F1B and interleaved. Each
// pass's phase (warm-up, steady state, cool-down) is read from the order.
#include <QtTest>

#include <chrono>
#include <map>
#include <set>
#include <tuple>
#include <sstream>
#include <thread>

#include "engine/run.h"
#include "parallel/pipeline_schedule.h"
#include "trace/chrome_trace_writer.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {

RunConfig pipeline(PipelineSchedule schedule) {
  RunConfig c;
  c.strategy = Strategy::Zero1;
  c.ranks = 4;
  c.pp = 2;
  c.microbatches = 4;
  c.pp_schedule = schedule;
  c.model.layers = 4;
  c.model.hidden = 32;
  c.model.io_dim = 16;
  c.batch = 8;
  c.steps = 2;
  return c;
}

// The next all-ranks stop after `after` (bounded wait); empty once the run ended.
std::vector<GatePoint> nextPipelineStop(Run& run, uint64_t& after) {
  std::vector<GatePoint> points;
  uint64_t id = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline && !run.finished()) {
    if (run.gate().stopped(&points, &id) && id != after) {
      after = id;
      return points;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

int64_t minSlot(const std::vector<GatePoint>& points) {
  int64_t m = INT64_MAX;
  for (const GatePoint& p : points) m = std::min(m, p.slot);
  return m;
}

std::string traceText(const Run& run) {
  std::ostringstream out;
  writeChromeTrace(run.trace(), out);
  return out.str();
}

}  // namespace

class TestPipelineStepping : public QObject {
  Q_OBJECT

 private slots:
  void slotsFollowTheSchedulesDependencies() {
    // Every pass's inputs come from a smaller slot: the order stops can use.
    for (PipelineSchedule kind : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB, PipelineSchedule::Interleaved}) {
      const PipelineScheduleOrder order(kind, 4, 8, 2);
      std::map<std::tuple<int, int, int>, int64_t> slot_of;  // (pass, microbatch, chunk)
      for (int s = 0; s < order.stages(); ++s) {
        const auto& actions = order.actions(s);
        for (size_t i = 0; i < actions.size(); ++i) {
          const PipelineAction& a = actions[i];
          slot_of[{static_cast<int>(a.pass), a.microbatch, a.chunk}] = order.slot(s, i);
          if (i > 0) QVERIFY(order.slot(s, i) > order.slot(s, i - 1));  // a stage runs one pass at a time
          QVERIFY(order.slot(s, i) < order.slotsPerStep() - 1);  // the flush comes after every pass
        }
      }
      const int F = static_cast<int>(PipelineAction::Pass::Forward), B = static_cast<int>(PipelineAction::Pass::Backward);
      for (const auto& [key, slot] : slot_of) {
        const auto [pass, mb, chunk] = key;
        if (pass == F && chunk > 0) QVERIFY(slot_of.at({F, mb, chunk - 1}) < slot);
        if (pass == B) {
          QVERIFY(slot_of.at({F, mb, chunk}) < slot);
          if (chunk + 1 < order.chunks()) QVERIFY(slot_of.at({B, mb, chunk + 1}) < slot);
        }
      }
    }
    // 1F1B on 2 stages, 2 microbatches, forward 1 and backward 2 slots:
    // stage 0 runs F0@0 F1@1 B0@4 (after stage 1's B0, 2–4) B1@7 (after its
    // B1, 5–7), ending at 9; stage 1 F0@1 B0@2 F1@4 B1@5. The flush is slot 9.
    const PipelineScheduleOrder two(PipelineSchedule::OneFOneB, 2, 2);
    const std::vector<int64_t> stage0 = {0, 1, 4, 7}, stage1 = {1, 2, 4, 5};
    for (size_t i = 0; i < 4; ++i) {
      QCOMPARE(two.slot(0, i), stage0[i]);
      QCOMPARE(two.slot(1, i), stage1[i]);
    }
    QCOMPARE(two.slotsPerStep(), int64_t(10));
  }

  void phasesAreTheSchedulesOwn() {
    // 1F1B, 4 stages, 8 microbatches: stage k warms up with S − k − 1 forwards
    // and cools down with as many backwards; the last stage has neither.
    const PipelineScheduleOrder f1b(PipelineSchedule::OneFOneB, 4, 8);
    for (int k = 0; k < 4; ++k) {
      QCOMPARE(f1b.warmUpForwards(k), 3 - k);
      QCOMPARE(f1b.coolDownBackwards(k), 3 - k);
    }
    QCOMPARE(f1b.phaseOf(0, 2), PipelinePhase::WarmUp);  // F2
    QCOMPARE(f1b.phaseOf(0, 3), PipelinePhase::Steady);  // F3, then B0
    QCOMPARE(f1b.phaseOf(0, 12), PipelinePhase::Steady);  // B4
    QCOMPARE(f1b.phaseOf(0, 13), PipelinePhase::CoolDown);  // B5
    QCOMPARE(f1b.actionIndex(0, {PipelineAction::Pass::Backward, 0, 0}), 4);
    QCOMPARE(f1b.actionIndex(0, {PipelineAction::Pass::Backward, 9, 0}), -1);
    // Fewer microbatches than the warm-up: every forward leads.
    const PipelineScheduleOrder short_run(PipelineSchedule::OneFOneB, 4, 2);
    QCOMPARE(short_run.warmUpForwards(0), 2);
    QCOMPARE(short_run.coolDownBackwards(0), 2);
    // GPipe: all M forwards, then all M backwards.
    const PipelineScheduleOrder gpipe(PipelineSchedule::GPipe, 4, 8);
    QCOMPARE(gpipe.warmUpForwards(2), 8);
    QCOMPARE(gpipe.phaseOf(2, 8), PipelinePhase::CoolDown);
    // Megatron-LM's interleaved warm-up: (S − k − 1)·2 + (V − 1)·S chunk forwards.
    const PipelineScheduleOrder inter(PipelineSchedule::Interleaved, 4, 8, 2);
    for (int k = 0; k < 4; ++k) QCOMPARE(inter.warmUpForwards(k), (4 - k - 1) * 2 + (2 - 1) * 4);
  }

  void nextOpWalksTheScheduleSlotBySlot_data() {
    QTest::addColumn<int>("schedule");
    QTest::newRow("gpipe") << static_cast<int>(PipelineSchedule::GPipe);
    QTest::newRow("1f1b") << static_cast<int>(PipelineSchedule::OneFOneB);
    QTest::newRow("interleaved") << static_cast<int>(PipelineSchedule::Interleaved);
  }

  void nextOpWalksTheScheduleSlotBySlot() {
    QFETCH(int, schedule);
    const RunConfig c = pipeline(static_cast<PipelineSchedule>(schedule));
    Run straight(c);
    straight.execute();
    Run stepped(c);
    stepped.gate().enable();
    stepped.gate().pause();
    stepped.start();
    uint64_t stop = 0;
    int stops = 0;
    int64_t last = -1;
    for (;;) {
      const std::vector<GatePoint> points = nextPipelineStop(stepped, stop);
      if (points.empty()) break;
      ++stops;
      QCOMPARE(points.size(), size_t(4));
      const int64_t at = minSlot(points);
      QVERIFY2(at > last, "a stop must be further on than the last");
      last = at;
      for (const GatePoint& p : points) {
        QVERIFY(p.slot >= 0);
        // The two ranks of a stage (its data-parallel pair) stop at one point.
        QVERIFY(p.step >= 0 && p.step < c.steps);
      }
      QCOMPARE(points[0], points[1]);
      QCOMPARE(points[2], points[3]);
      QVERIFY(stops < 400);
      stepped.gate().step(StepMode::NextOp);
    }
    stepped.wait();  // throws RunError if the run failed
    // One stop per distinct slot the stages start a pass at, plus the flushes.
    const PipelineScheduleOrder order(c.pipelineSchedule(), c.pp, c.microbatchCount(), c.virtualStages());
    std::set<int64_t> starts;
    for (int s = 0; s < c.pp; ++s)
      for (size_t i = 0; i < order.actions(s).size(); ++i) starts.insert(order.slot(s, i));
    QCOMPARE(stops, c.steps * (static_cast<int>(starts.size()) + 1));
    QCOMPARE(stepped.losses(), straight.losses());
  }

  void nextPhaseStopsAtTheFlushAndNextStepAtTheStep() {
    RunConfig c = pipeline(PipelineSchedule::OneFOneB);
    c.steps = 3;
    Run run(c);
    run.gate().enable();
    run.gate().pause();
    run.start();
    uint64_t stop = 0;
    std::vector<GatePoint> points = nextPipelineStop(run, stop);
    QVERIFY(!points.empty());
    QCOMPARE(points[0].kind, EventKind::Forward);  // stage 0 before its first forward
    QCOMPARE(points[0].microbatch, 0);
    QCOMPARE(points[0].slot, int64_t(0));
    run.gate().step(StepMode::NextPhase);
    points = nextPipelineStop(run, stop);
    QVERIFY(!points.empty());
    const PipelineScheduleOrder order(PipelineSchedule::OneFOneB, 2, 4);
    for (const GatePoint& p : points) {  // every stage at the flush of step 0
      QCOMPARE(p.kind, EventKind::OptimizerStep);
      QCOMPARE(p.step, 0);
      QCOMPARE(p.microbatch, -1);
      QCOMPARE(p.slot, order.slotsPerStep() - 1);
    }
    run.gate().step(StepMode::NextStep);
    points = nextPipelineStop(run, stop);
    QVERIFY(!points.empty());
    for (const GatePoint& p : points) QCOMPARE(p.step, 1);
    QCOMPARE(minSlot(points), order.slotsPerStep());  // step 1's first slot
    QCOMPARE(points[0].kind, EventKind::Forward);
    run.gate().resume();
    run.wait();  // throws RunError if the run failed
    QCOMPARE(run.losses().size(), size_t(3));
  }

  void pauseFromAFreeRunStops() {
    RunConfig c = pipeline(PipelineSchedule::OneFOneB);
    c.steps = 4;
    Run run(c);
    run.gate().enable();
    run.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    run.gate().pause();
    uint64_t stop = 0;
    const std::vector<GatePoint> points = nextPipelineStop(run, stop);
    if (!points.empty()) {  // a fast machine may finish first
      QVERIFY(minSlot(points) >= 0);
      run.gate().resume();
    }
    run.wait();  // throws RunError if the run failed
  }

  void steppedModeledRunWritesTheSameTrace() {
    // Meta ranks on the modeled clock: one simulated rank per stage, stepped
    // by op, write the trace of the straight run.
    RunConfig c = pipeline(PipelineSchedule::Interleaved);
    c.backend = Backend::Meta;
    c.clock = ClockKind::Modeled;
    c.profile = "h100-sxm";
    c.ranks = 8;
    c.tp = 2;
    Run straight(c);
    straight.execute();
    Run stepped(c);
    stepped.gate().enable();
    stepped.gate().pause();
    stepped.start();
    uint64_t stop = 0;
    while (!nextPipelineStop(stepped, stop).empty()) stepped.gate().step(StepMode::NextOp);
    stepped.wait();  // throws RunError if the run failed
    QVERIFY(traceText(stepped) == traceText(straight));
  }
};

QTEST_GUILESS_MAIN(TestPipelineStepping)
#include "test_pipeline_stepping.moc"
