// The pipeline schedule view's model (PipelineBoxes) on meta runs with the
// modeled clock, for every schedule: each stage has one box per microbatch,
// pass and chunk (2·M·V), its chunk on that stage; every send is matched to
// its receive and goes between the stages the schedule says; the microbatches
// in flight measured from the boxes equal the schedule's count; the bubble and
// the activation peak equal what the run itself measured (RunResult); under
// full recompute every backward box holds its recompute; a run without
// pipeline stages gives no boxes.
#include <QtTest>

#include <cmath>
#include <set>
#include <tuple>

#include "engine/run.h"
#include "inspect/event_store.h"
#include "inspect/pipeline_boxes.h"

using namespace shardscope;

namespace {

RunConfig metaPipeline(int ranks, int pp, int microbatches, PipelineSchedule schedule, int virtual_stages = 1) {
  RunConfig c;
  c.backend = Backend::Meta;
  c.clock = ClockKind::Modeled;
  c.model.kind = ModelKind::Gpt;
  c.model.layers = 16;
  c.model.hidden = 1024;
  c.model.heads = 16;
  c.model.seq = 512;
  c.model.vocab = 256;
  c.ranks = ranks;
  c.pp = pp;
  c.microbatches = microbatches;
  c.pp_schedule = schedule;
  if (schedule == PipelineSchedule::Interleaved) c.virtual_stages = virtual_stages;
  c.batch = microbatches * (ranks / pp);
  c.steps = 2;
  return c;
}

RunResult runInto(const RunConfig& c, EventStore& store) {
  Run run(c);
  RunResult result = run.execute();
  RunTrace trace = run.trace();
  trace.config = c;
  store.setFromTrace(std::move(trace));
  return result;
}

}  // namespace

class TestPipelineBoxes : public QObject {
  Q_OBJECT

 private slots:
  void boxesArrowsAndCounts_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("stages");
    QTest::addColumn<int>("microbatches");
    QTest::addColumn<int>("schedule");
    QTest::addColumn<int>("virtualStages");
    QTest::addRow("gpipe S4 M8") << 4 << 4 << 8 << int(PipelineSchedule::GPipe) << 1;
    QTest::addRow("1f1b S4 M8") << 4 << 4 << 8 << int(PipelineSchedule::OneFOneB) << 1;
    QTest::addRow("1f1b S2 M4 x2 dp") << 4 << 2 << 4 << int(PipelineSchedule::OneFOneB) << 1;
    QTest::addRow("interleaved S4 M8 V2") << 4 << 4 << 8 << int(PipelineSchedule::Interleaved) << 2;
  }

  void boxesArrowsAndCounts() {
    QFETCH(int, ranks);
    QFETCH(int, stages);
    QFETCH(int, microbatches);
    QFETCH(int, schedule);
    QFETCH(int, virtualStages);
    const RunConfig c = metaPipeline(ranks, stages, microbatches, static_cast<PipelineSchedule>(schedule), virtualStages);
    EventStore store;
    const RunResult result = runInto(c, store);
    PipelineBoxes boxes;
    boxes.build(store);
    QCOMPARE(boxes.step(), c.steps - 1);
    QCOMPARE(boxes.stages(), stages);
    QCOMPARE(boxes.microbatches(), microbatches);
    QCOMPARE(boxes.virtualStages(), virtualStages);
    QCOMPARE(static_cast<int>(boxes.boxes().size()), 2 * microbatches * virtualStages * stages);
    for (int s = 0; s < stages; ++s) {
      std::set<std::tuple<int, int, int>> seen;  // (pass, microbatch, chunk)
      for (const PipelineBox& b : boxes.boxes()) {
        if (b.stage != s) continue;
        QCOMPARE(b.action.chunk % stages, s);
        QVERIFY(b.end_ns > b.begin_ns);
        QVERIFY(b.busy_ns <= b.end_ns - b.begin_ns);
        seen.insert({int(b.action.pass), b.action.microbatch, b.action.chunk});
      }
      QCOMPARE(static_cast<int>(seen.size()), 2 * microbatches * virtualStages);
      const PipelineRow& row = boxes.rows()[static_cast<size_t>(s)];
      QCOMPARE(row.rank, s * (ranks / stages));
      QCOMPARE(row.last_rank, row.first_rank + ranks / stages - 1);
      QCOMPARE(row.in_flight, row.schedule_in_flight);
      QCOMPARE(row.activation_peak_bytes,
               result.ranks[static_cast<size_t>(row.rank)].ledger.peak[static_cast<size_t>(Category::Activation)]);
      QVERIFY(row.activation_peak_bytes > 0);
    }
    // Every boundary between consecutive chunks carries each microbatch's activations one way and its gradient back.
    const int transfers = 2 * microbatches * (stages * virtualStages - 1);
    QCOMPARE(boxes.sends(), transfers);
    QCOMPARE(static_cast<int>(boxes.arrows().size()), transfers);
    for (const PipelineArrow& a : boxes.arrows()) {
      QVERIFY(a.recv_end_ns >= a.send_ns);
      QCOMPARE(a.to_stage, (a.from_stage + (a.gradient ? stages - 1 : 1)) % stages);
      QVERIFY(a.bytes > 0);
    }
    // The bubble is the run's own measurement; the idle spans cover what the boxes leave of the window.
    QCOMPARE(boxes.timing().bubble, result.pipeline.bubble);
    QCOMPARE(boxes.timing().formula_bubble, result.pipeline.formula_bubble);
    // Without tensor parallelism a pass's spans leave no gaps: the idle between passes is the bubble measured.
    QVERIFY(std::abs(boxes.idleShare() - boxes.timing().bubble) < 0.02);
    for (const PipelineRow& row : boxes.rows()) {
      int64_t idle = 0, covered = 0;
      for (const auto& [b, e] : row.idle) idle += e - b;
      for (const PipelineBox& b : boxes.boxes())
        if (b.stage == row.stage) covered += b.end_ns - b.begin_ns;
      QCOMPARE(idle + covered, boxes.windowEnd() - boxes.windowBegin());
    }
    QCOMPARE(QString::fromStdString(boxes.label(boxes.boxes().front())),
             virtualStages > 1 ? QStringLiteral("F0.0") : QStringLiteral("F0"));
  }

  void recomputeInsideBackward() {
    RunConfig c = metaPipeline(2, 2, 4, PipelineSchedule::OneFOneB);
    c.model.checkpointing = Checkpointing::Full;
    EventStore store;
    runInto(c, store);
    PipelineBoxes boxes;
    boxes.build(store);
    QCOMPARE(static_cast<int>(boxes.boxes().size()), 2 * 4 * 2);
    for (const PipelineBox& b : boxes.boxes()) {
      const bool backward = b.action.pass == PipelineAction::Pass::Backward;
      QCOMPARE(!b.recompute.empty(), backward);
      for (const auto& [rb, re] : b.recompute) QVERIFY(rb >= b.begin_ns && re <= b.end_ns);
    }
  }

  void noStagesNoBoxes() {
    RunConfig c = metaPipeline(2, 1, 1, PipelineSchedule::OneFOneB);
    c.pp = 1;
    c.microbatches.reset();
    c.pp_schedule.reset();
    c.batch = 2;
    EventStore store;
    runInto(c, store);
    PipelineBoxes boxes;
    boxes.build(store);
    QVERIFY(boxes.empty());
    QVERIFY(boxes.boxes().empty());
  }
};

QTEST_APPLESS_MAIN(TestPipelineBoxes)
#include "test_pipeline_boxes.moc"
