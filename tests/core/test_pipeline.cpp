// Pipeline parallelism: the schedules' orders (every pass once, no deadlock,
// the bubble and the microbatches in flight their formulas give), DP × PP × TP
// runs against the one-rank run with the same global batch (the bf16 bound of
// test_ddp.cpp) for every schedule, the bubble measured on the modeled clock
// against (S − 1)/(V·M + S − 1), the activation memory each stage holds
// against the schedule's microbatches in flight, and a stage that never sends
// named as the hang it causes.
#include <QtTest>

#include <algorithm>
#include <set>

#include "analysis/formulas.h"
#include "parallel/pipeline_timing.h"
#include "common/errors.h"
#include "engine/run.h"
#include "equivalence_check.h"
#include "parallel/pipeline_schedule.h"
#include "parallel/pipeline_stages.h"
#include "postmortem/fr_dump_writer.h"
#include "postmortem/fr_ladder.h"
#include "sanitizer_build.h"

using namespace shardscope;
using namespace shardscope::testing;

namespace {

RunConfig mlpConfig() {
  RunConfig c;
  c.ranks = 1;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 16;
  c.steps = 3;
  c.lr = 1e-3;
  return c;
}

RunConfig gptConfig() {
  RunConfig c = mlpConfig();
  c.model.kind = ModelKind::Gpt;
  c.model.layers = 4;
  c.model.hidden = 32;
  c.model.heads = 4;
  c.model.seq = 16;
  c.model.vocab = 256;
  c.batch = 8;
  c.steps = 2;
  return c;
}

const RunResult& reference(ModelKind kind, Checkpointing checkpointing) {
  static std::map<std::pair<ModelKind, Checkpointing>, RunResult> refs;
  auto it = refs.find({kind, checkpointing});
  if (it == refs.end()) {
    RunConfig c = kind == ModelKind::Gpt ? gptConfig() : mlpConfig();
    c.model.checkpointing = checkpointing;
    it = refs.emplace(std::pair{kind, checkpointing}, Run(c).execute()).first;
  }
  return it->second;
}

PipelineSchedule scheduleNamed(const QString& name) { return *parsePipelineSchedule(name.toStdString()); }

// A meta GPT whose blocks are all alike and whose head is cheap (a small
// vocabulary): uniform stages, as the bubble formula assumes.
RunConfig uniformMetaConfig(int pp, int microbatches, PipelineSchedule schedule, int virtual_stages = 1) {
  RunConfig c;
  c.backend = Backend::Meta;
  c.clock = ClockKind::Modeled;
  c.model.kind = ModelKind::Gpt;
  c.model.layers = 16;
  c.model.hidden = 8192;  // compute ∝ h², a stage's send ∝ h: transfers stay under 1 % of the step
  c.model.heads = 16;
  c.model.seq = 2048;
  c.model.vocab = 256;
  c.ranks = pp;
  c.pp = pp;
  c.microbatches = microbatches;
  c.pp_schedule = schedule;
  if (schedule == PipelineSchedule::Interleaved) c.virtual_stages = virtual_stages;
  c.batch = microbatches;
  c.steps = 1;
  return c;
}

}  // namespace

class TestPipeline : public QObject {
  Q_OBJECT

 private slots:
  void scheduleOrders_data() {
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<int>("stages");
    QTest::addColumn<int>("microbatches");
    QTest::addColumn<int>("virtualStages");
    for (const char* kind : {"gpipe", "1f1b"})
      for (auto [s, m] : {std::pair{2, 2}, {4, 4}, {4, 8}, {8, 16}, {4, 3}})
        QTest::addRow("%s S%d M%d", kind, s, m) << kind << s << m << 1;
    for (auto [s, m, v] : {std::tuple{2, 4, 2}, {4, 8, 2}, {4, 8, 3}, {8, 16, 4}})
      QTest::addRow("interleaved S%d M%d V%d", s, m, v) << "interleaved" << s << m << v;
  }
  void scheduleOrders() {
    QFETCH(QString, schedule);
    QFETCH(int, stages);
    QFETCH(int, microbatches);
    QFETCH(int, virtualStages);
    const PipelineScheduleOrder order(scheduleNamed(schedule), stages, microbatches, virtualStages);
    for (int s = 0; s < stages; ++s) {
      // Every microbatch's forward and backward of each of the stage's chunks, once.
      std::set<std::tuple<int, int, int>> seen;
      for (const PipelineAction& a : order.actions(s)) {
        QCOMPARE(order.stageOf(a.chunk), s);
        QVERIFY(seen.insert({int(a.pass), a.microbatch, a.chunk}).second);
      }
      QCOMPARE(int(seen.size()), 2 * microbatches * order.virtualStages());
    }
    // With forward and backward alike on every stage, its own timing gives the
    // formula's bubble (and proves it cannot deadlock).
    QVERIFY2(std::abs(order.simulatedBubble() - order.bubbleFormula()) < 1e-9,
             qPrintable(QString("simulated %1, formula %2").arg(order.simulatedBubble()).arg(order.bubbleFormula())));
    if (schedule == "gpipe")
      for (int s = 0; s < stages; ++s) QCOMPARE(order.maxInFlight(s), microbatches);
    if (schedule == "1f1b")
      for (int s = 0; s < stages; ++s) QCOMPARE(order.maxInFlight(s), std::min(stages - s, microbatches));
  }

  void stagesSplitContiguouslyByCost() {
    // Twelve equal blocks, a free embedding and a head worth three blocks over 4 stages.
    std::vector<double> flops(14, 1.0);
    flops[0] = 0.0;
    flops[13] = 3.0;
    const PipelineStages stages(4, 1, flops);
    int next = 0;
    double largest = 0;
    for (int c = 0; c < 4; ++c) {
      QCOMPARE(stages.chunk(c).first_segment, next);
      QVERIFY(stages.chunk(c).last_segment > next);
      next = stages.chunk(c).last_segment;
      largest = std::max(largest, stages.chunk(c).flops);
    }
    QCOMPARE(next, 14);
    QCOMPARE(largest, 4.0);  // (12 + 3) / 4, rounded up to whole segments
    QVERIFY(stages.chunk(3).last_segment == 14 && stages.chunk(3).first_segment >= 12);  // the head's stage: few blocks
    QVERIFY2(QString::fromStdString(stages.describe(0, 12)).startsWith("the embedding, blocks 0–"),
             stages.describe(0, 12).c_str());
    QVERIFY2(QString::fromStdString(stages.describe(3, 12)).endsWith("the head"), stages.describe(3, 12).c_str());
    QVERIFY_THROWS_EXCEPTION(ConfigError, PipelineStages(4, 4, flops));  // 16 chunks of 14 segments
  }

  void equivalentToOneRank_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("microbatches");
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<QString>("checkpointing");
    QTest::newRow("one rank, 4 microbatches (gradient accumulation)") << "mlp" << "ddp" << 1 << 1 << 1 << 4 << "1f1b" << "none";
    QTest::newRow("mlp pp2 1f1b") << "mlp" << "ddp" << 2 << 2 << 1 << 2 << "1f1b" << "none";
    QTest::newRow("mlp pp2 gpipe M4") << "mlp" << "ddp" << 2 << 2 << 1 << 4 << "gpipe" << "none";
    QTest::newRow("mlp pp4 1f1b M4") << "mlp" << "ddp" << 4 << 4 << 1 << 4 << "1f1b" << "none";
    QTest::newRow("mlp pp2 interleaved V2 M4") << "mlp" << "ddp" << 2 << 2 << 1 << 4 << "interleaved" << "none";
    QTest::newRow("mlp dp2 x pp2 ddp") << "mlp" << "ddp" << 4 << 2 << 1 << 2 << "1f1b" << "none";
    QTest::newRow("mlp dp2 x pp2 zero1 gpipe") << "mlp" << "zero1" << 4 << 2 << 1 << 2 << "gpipe" << "none";
    QTest::newRow("mlp pp2 x tp2 1f1b") << "mlp" << "ddp" << 4 << 2 << 2 << 2 << "1f1b" << "none";
    QTest::newRow("mlp dp2 x pp2 fsdp 1f1b") << "mlp" << "fsdp" << 4 << 2 << 1 << 2 << "1f1b" << "none";
    QTest::newRow("mlp dp2 x pp2 zero3 interleaved") << "mlp" << "zero3" << 4 << 2 << 1 << 4 << "interleaved" << "none";
    QTest::newRow("gpt dp2 x pp2 fsdp gpipe") << "gpt" << "fsdp" << 4 << 2 << 1 << 2 << "gpipe" << "none";
    QTest::newRow("gpt pp2 x tp2 1f1b M4") << "gpt" << "ddp" << 4 << 2 << 2 << 4 << "1f1b" << "none";
    QTest::newRow("gpt dp2 x pp2 zero1 interleaved") << "gpt" << "zero1" << 4 << 2 << 1 << 2 << "interleaved" << "none";
    QTest::newRow("gpt pp2 gpipe selective recompute") << "gpt" << "ddp" << 2 << 2 << 1 << 2 << "gpipe" << "selective";
    QTest::newRow("gpt pp2 x tp2 1f1b full recompute") << "gpt" << "ddp" << 4 << 2 << 2 << 2 << "1f1b" << "full";
  }
  void equivalentToOneRank() {
    QFETCH(QString, model);
    QFETCH(QString, strategy);
    QFETCH(int, ranks);
    QFETCH(int, pp);
    QFETCH(int, tp);
    QFETCH(int, microbatches);
    QFETCH(QString, schedule);
    QFETCH(QString, checkpointing);
    RunConfig c = model == "gpt" ? gptConfig() : mlpConfig();
    c.model.checkpointing = *parseCheckpointing(checkpointing.toStdString());
    c.strategy = *parseStrategy(strategy.toStdString());
    c.ranks = ranks;
    c.pp = pp;
    c.tp = tp;
    c.microbatches = microbatches;
    if (pp > 1) c.pp_schedule = scheduleNamed(schedule);
    const RunResult got = Run(c).execute();
    RunConfig ref = c;
    ref.ranks = 1;
    verifyEquivalent(got, reference(c.model.kind, c.model.checkpointing), ref);
    if (QTest::currentTestFailed()) return;
    // Every stage reports its pipeline bytes: what it sent forward and back.
    if (pp > 1)
      for (const RankResult& r : got.ranks) QVERIFY(r.comm_bytes.send > 0);
    // zero3/fsdp: each rank holds 1/D of its stage's model state, gathers
    // each block before its forward and its backward, one reduce-scatter per
    // block per microbatch.
    if (c.isSharded())
      for (const RankResult& r : got.ranks) {
        const int64_t held = stageParams(c, c.stageOf(r.rank));
        const double expected = 16.0 * double(held) / c.dataParallelSize() + double(r.padding_state_bytes);
        QVERIFY2(std::abs(double(r.ledger.model_state_peak) - expected) <= 0.01 * expected,
                 qPrintable(QString("rank %1: model state %2 bytes, 16/D of its stage is %3")
                                .arg(r.rank).arg(r.ledger.model_state_peak).arg(expected)));
        QVERIFY(r.comm_bytes.all_gather > 0 && r.comm_bytes.reduce_scatter > 0);
      }
  }

  void bubbleOnTheModeledClockIsTheFormula_data() {
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("microbatches");
    QTest::addColumn<int>("virtualStages");
    QTest::newRow("gpipe S4 M8") << "gpipe" << 4 << 8 << 1;
    QTest::newRow("1f1b S4 M8") << "1f1b" << 4 << 8 << 1;
    QTest::newRow("1f1b S4 M16") << "1f1b" << 4 << 16 << 1;
    QTest::newRow("interleaved S4 M8 V2") << "interleaved" << 4 << 8 << 2;
  }
  void bubbleOnTheModeledClockIsTheFormula() {
    QFETCH(QString, schedule);
    QFETCH(int, pp);
    QFETCH(int, microbatches);
    QFETCH(int, virtualStages);
    const RunConfig c = uniformMetaConfig(pp, microbatches, scheduleNamed(schedule), virtualStages);
    Run run(c);
    run.execute();
    const PipelineTiming timing = measurePipeline(run.trace(), 0);
    QCOMPARE(int(timing.stages.size()), pp);
    QCOMPARE(timing.formula_bubble, expectedPipelineBubble(c));
    QVERIFY2(std::abs(timing.bubble - timing.formula_bubble) <= 0.02 * timing.formula_bubble,
             qPrintable(QString("measured bubble %1, formula %2").arg(timing.bubble).arg(timing.formula_bubble)));
  }

  void activationsInFlightPerStage_data() {
    QTest::addColumn<QString>("schedule");
    QTest::newRow("1f1b: stage k holds S - k") << "1f1b";
    QTest::newRow("gpipe: every stage holds M") << "gpipe";
  }
  void activationsInFlightPerStage() {
    QFETCH(QString, schedule);
    const RunConfig c = uniformMetaConfig(4, 8, scheduleNamed(schedule));
    const RunResult r = Run(c).execute();
    // One microbatch's activations on one stage: its blocks' (the formula per
    // layer) plus what the boundary and the batch add, measured once.
    const double per_layer = expectedActivationBytesPerLayer(c);
    const int layers_per_stage = c.model.layers / c.pp;
    for (int s = 0; s < c.pp; ++s) {
      const int64_t peak = r.ranks[static_cast<size_t>(s)].ledger.peak[static_cast<size_t>(Category::Activation)];
      const double expected = expectedMicrobatchesInFlight(c, s) * per_layer * layers_per_stage;
      QVERIFY2(std::abs(double(peak) - expected) <= 0.05 * expected,
               qPrintable(QString("stage %1: %2 bytes of activations, expected %3 microbatches x %4 layers x %5")
                              .arg(s).arg(peak).arg(expectedMicrobatchesInFlight(c, s)).arg(layers_per_stage).arg(per_layer)));
    }
    if (schedule == "1f1b") {
      const auto peak = [&r](int s) { return r.ranks[static_cast<size_t>(s)].ledger.peak[static_cast<size_t>(Category::Activation)]; };
      QVERIFY(peak(0) > peak(1) && peak(1) > peak(2) && peak(2) > peak(3));  // the first stage is the most loaded
    }
  }

  void aStageThatNeverSendsIsNamed() {
#ifdef SHARDSCOPE_UNDER_SANITIZER
    QSKIP("waits out the hang timeout");
#endif
    RunConfig c = mlpConfig();
    c.ranks = 2;
    c.pp = 2;
    c.microbatches = 2;
    c.timeout_ms = 500;
    c.inject_branch = InjectBranch{0, 0};  // stage 0 takes a branch that skips a send
    Run run(c);
    try {
      run.execute();
      QFAIL("the run should have stopped");
    } catch (const RunError& e) {
      const QString text = e.what();
      QVERIFY2(text.contains("pipeline hang") && text.contains("stage 1 (rank 1)") &&
                   text.contains("microbatch 1's activations") && text.contains("from stage 0 (rank 0)"),
               qPrintable(text));
    }
    // The flight-recorder dumps ShardScope writes pair every send with its
    // recv: microbatch 0's activations arrived (completed on both ranks),
    // microbatch 1's recv waits on rank 1 (started) with no send on rank 0.
    const std::vector<postmortem::FrRankDump> dumps = postmortem::flightRecorderDumps(run.trace());
    QCOMPARE(int(dumps.size()), 2);
    const auto find = [&](int rank, const char* op, const char* what) -> const postmortem::FrEntry* {
      for (const postmortem::FrEntry& e : dumps[size_t(rank)].entries)
        if (e.is_p2p && e.op() == op && !e.frames.empty() && e.frames.front().name.find(what) != std::string::npos)
          return &e;
      return nullptr;
    };
    const postmortem::FrEntry* sent0 = find(0, "send", "microbatch 0's activations");
    const postmortem::FrEntry* recv0 = find(1, "recv", "microbatch 0's activations");
    QVERIFY(sent0 && recv0);
    QCOMPARE(sent0->p2p_seq_id, recv0->p2p_seq_id);
    QCOMPARE(sent0->state, postmortem::FrState::Completed);
    QCOMPARE(recv0->state, postmortem::FrState::Completed);
    const postmortem::FrEntry* waiting = find(1, "recv", "microbatch 1's activations");
    QVERIFY(waiting);
    QCOMPARE(waiting->state, postmortem::FrState::Started);
    QVERIFY(!find(0, "send", "microbatch 1's activations"));
    // The ladder puts the pair on one row.
    const postmortem::FrLadder ladder = postmortem::buildFrLadder(dumps);
    bool paired = false;
    for (size_t row = 0; row < ladder.rows.size(); ++row)
      if (ladder.rows[row].p2p && ladder.rows[row].seq == sent0->p2p_seq_id)
        paired = ladder.cells[row * 2].state == postmortem::FrCell::Completed &&
                 ladder.cells[row * 2 + 1].state == postmortem::FrCell::Completed;
    QVERIFY(paired);
  }

  void invalidShapesAreRefusedWithTheFlagNamed() {
    RunConfig c = mlpConfig();
    c.ranks = 4;
    c.pp = 3;
    QVERIFY_THROWS_EXCEPTION(ConfigError, validate(c));
    c.pp = 2;
    c.microbatches = 3;  // 16 samples over 2 data-parallel ranks: 8 per rank
    try {
      validate(c);
      QFAIL("accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(QString(e.what()).contains("--microbatches 3"), e.what());
    }
    c.microbatches = 2;
    c.pp_schedule = PipelineSchedule::Interleaved;
    c.virtual_stages = 4;  // 2 stages x 4 chunks of 4 blocks
    QVERIFY_THROWS_EXCEPTION(ConfigError, validate(c));
    c.virtual_stages = 2;
    c.strategy = Strategy::Hsdp;
    c.shard_group = 4;  // more than the 2 data-parallel ranks
    try {
      validate(c);
      QFAIL("accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(QString(e.what()).startsWith("--shard-group 4 must divide the data-parallel ranks"), e.what());
    }
  }

  // ZeRO-2 and HSDP across microbatches (pipeline stages, or gradient
  // accumulation alone): each microbatch's gradients are reduce-scattered
  // (HSDP: in the shard group, then all-reduced across replicas); the runs
  // train as one rank does, hold what the formula says and send what the
  // traffic formula says.
  void zero2AndHsdpAcrossMicrobatches_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("shardGroup");
    QTest::addColumn<int>("microbatches");
    QTest::addColumn<QString>("schedule");
    QTest::newRow("zero2 dp2 x pp2 1f1b") << "zero2" << 4 << 2 << 0 << 4 << "1f1b";
    QTest::newRow("zero2 dp4 microbatches") << "zero2" << 4 << 1 << 0 << 2 << "1f1b";
    QTest::newRow("hsdp dp4 (G2) x pp2 gpipe") << "hsdp" << 8 << 2 << 2 << 2 << "gpipe";
    QTest::newRow("hsdp dp4 (G2) microbatches") << "hsdp" << 4 << 1 << 2 << 2 << "1f1b";
  }
  void zero2AndHsdpAcrossMicrobatches() {
    QFETCH(QString, strategy);
    QFETCH(int, ranks);
    QFETCH(int, pp);
    QFETCH(int, shardGroup);
    QFETCH(int, microbatches);
    QFETCH(QString, schedule);
    RunConfig c = mlpConfig();
    c.strategy = *parseStrategy(strategy.toStdString());
    c.ranks = ranks;
    c.pp = pp;
    c.microbatches = microbatches;
    if (shardGroup > 0) c.shard_group = shardGroup;
    if (pp > 1) c.pp_schedule = scheduleNamed(schedule);
    validate(c);
    const RunResult got = Run(c).execute();
    RunConfig ref = c;
    ref.ranks = 1;
    verifyEquivalent(got, reference(ModelKind::Mlp, Checkpointing::None), ref);
    if (QTest::currentTestFailed()) return;
    const ExpectedTraffic traffic = expectedTraffic(c);
    for (const RankResult& r : got.ranks) {
      const int64_t held = stageParams(c, c.stageOf(r.rank));
      const double expected = expectedModelStateBytes(c, held) + double(r.padding_state_bytes);
      QVERIFY2(std::abs(double(r.ledger.model_state_peak) - expected) <= 0.01 * expected,
               qPrintable(QString("rank %1: model state %2 bytes, formula %3")
                              .arg(r.rank).arg(r.ledger.model_state_peak).arg(expected)));
      // Every microbatch reduce-scatters: M times the reduce-scatter of one
      // gradient, as the traffic formula counts it (rank 0's stage: stage 0's).
      if (c.stageOf(r.rank) == 0)
        QVERIFY2(std::abs(double(r.comm_bytes.reduce_scatter - traffic.data_parallel.reduce_scatter)) <=
                     0.02 * double(traffic.data_parallel.reduce_scatter),
                 qPrintable(QString("rank %1: reduce-scatter %2 bytes, formula %3")
                                .arg(r.rank).arg(r.comm_bytes.reduce_scatter).arg(traffic.data_parallel.reduce_scatter)));
      if (c.strategy == Strategy::Hsdp) QVERIFY(r.comm_bytes.all_reduce > 0);  // across the replicas
    }
  }
};

QTEST_APPLESS_MAIN(TestPipeline)
#include "test_pipeline.moc"
