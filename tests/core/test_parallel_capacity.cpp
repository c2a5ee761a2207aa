// The stage plan of the capacity calculator: a small GPT's per-stage bytes
// worked by hand, sequence parallelism dividing a block's activations by T,
// 1F1B against GPipe on stage 0, the smallest TP × PP that fits 80 GB for
// Llama 2 70B and Llama 3 405B, and each plan held to what a meta run of the
// same config books on its ledger, stage by stage (plan and run agree).
#include <QtTest>

#include "analysis/formulas.h"
#include "analysis/parallel_capacity.h"
#include "analysis/published_table.h"
#include "analysis/validation.h"
#include "analysis/schedule_comparison.h"
#include "common/errors.h"
#include "config/kinds.h"
#include "config/model_shape.h"
#include "engine/run.h"
#include "memory/memory_ledger.h"
#include "parallel/pipeline_timing.h"

using namespace shardscope;

namespace {

constexpr double kGb = 1e9;

// A GPT small enough to work by hand: 4 blocks, h = 64, 4 heads, s = 16,
// V = 256, on 2 ranks as 2 pipeline stages, 4 microbatches of 1 sample.
RunConfig smallGpt(PipelineSchedule schedule) {
  RunConfig c;
  c.backend = Backend::Meta;
  c.clock = ClockKind::Modeled;
  c.model.kind = ModelKind::Gpt;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.heads = 4;
  c.model.seq = 16;
  c.model.vocab = 256;
  c.ranks = 2;
  c.pp = 2;
  c.microbatches = 4;
  c.pp_schedule = schedule;
  c.batch = 4;
  c.steps = 1;
  validate(c);
  return c;
}

// A published shape on W GPUs as the calculator builds it (validated).
RunConfig presetConfig(const std::string& preset, int ranks, Strategy strategy, Checkpointing recompute, bool sp) {
  RunConfig c;
  c.backend = Backend::Meta;
  c.clock = ClockKind::Modeled;
  c.model = presetShape(preset);
  c.model.checkpointing = recompute;
  c.model.sequence_parallel = sp;
  c.strategy = strategy;
  c.ranks = ranks;
  c.steps = 1;
  return c;
}

int64_t activationPeak(const RunResult& r, int rank) {
  return r.ranks.at(size_t(rank)).ledger.peak[size_t(Category::Activation)];
}

// Plan and run agree, stage by stage: model states within 0.1 %; the
// activation peak at or above the ledger's by at most one received gradient
// (2·s·b·h/sp, which ddp and zero1 runs book after freeing a block) and
// 0.1 %; the total peak at or above the ledger's, by at most one block's
// activations and that gradient (the plan books a block's gradients beside
// its activations; some runs free them first).
void checkPlanAgainstRun(const ParallelPlan& plan) {
  const RunResult r = Run(plan.config).execute();
  const double boundary = expectedStageBoundaryBytes(plan.config);
  for (const StagePlan& s : plan.stages) {
    const LedgerSnapshot& ledger = r.ranks.at(size_t(s.rank)).ledger;
    const auto near = [](double planned, double measured, double tolerance) {
      return std::abs(planned - measured) <= tolerance * measured;
    };
    QVERIFY2(near(double(s.model_state_bytes), double(ledger.model_state_peak), 1e-3),
             qPrintable(QString("stage %1: model states planned %2, ledger %3").arg(s.stage).arg(s.model_state_bytes)
                            .arg(ledger.model_state_peak)));
    const double over = double(s.activation_bytes - activationPeak(r, s.rank));
    QVERIFY2(over >= -1e-3 * double(activationPeak(r, s.rank)) &&
                 over <= boundary + 1e-3 * double(activationPeak(r, s.rank)),
             qPrintable(QString("stage %1: activations planned %2, ledger %3").arg(s.stage).arg(s.activation_bytes)
                            .arg(activationPeak(r, s.rank))));
    const double slack = plan.per_layer_bytes + plan.recompute_bytes + boundary;
    QVERIFY2(double(s.peakBytes()) >= double(ledger.total_peak) * (1 - 1e-3) &&
                 double(s.peakBytes()) <= double(ledger.total_peak) * 1.001 + slack,
             qPrintable(QString("stage %1: peak planned %2, ledger %3").arg(s.stage).arg(s.peakBytes())
                            .arg(ledger.total_peak)));
  }
}

}  // namespace

class TestParallelCapacity : public QObject {
  Q_OBJECT

 private slots:
  void smallGptByHand() {
    const ParallelPlan p = planParallelCapacity(smallGpt(PipelineSchedule::OneFOneB), 80 * kGb);
    // Per block and microbatch, s·b·h = 16·1·64 = 1024 and, in bytes per s·b·h:
    // both norms' inputs 4, norm1's output 2, q, k, v 6, the heads' output 2,
    // norm2's output 2, the MLP's inner pair 2·4·2 = 16, LayerNorm statistics
    // 2·8/64 = 0.25: 32.25 × 1024 = 33,024; flash's row statistics 4·a·s·b =
    // 4·4·16 = 256. 33,280 bytes.
    QCOMPARE(p.per_layer_bytes, 33280.0);
    // The embedding: token ids 4·16 + its output 2·16·64 = 2,112. The head:
    // ids 4·16 + LNf's output 2·16·64 + statistics 8·16 + fp32 logits 4·16·256 = 18,624.
    QCOMPARE(p.embedding_bytes, 2112.0);
    QCOMPARE(p.head_bytes, 18624.0);
    QCOMPARE(p.recompute_bytes, 0.0);
    QCOMPARE(int(p.stages.size()), 2);
    // The split balances FLOPs: the head costs about a third of a block, so
    // each stage holds two blocks.
    QCOMPARE(p.stages[0].blocks, 2);
    QCOMPARE(p.stages[1].blocks, 2);
    QCOMPARE(QString::fromStdString(p.stages[0].holds), QString("the embedding, blocks 0–1"));
    QCOMPARE(QString::fromStdString(p.stages[1].holds), QString("blocks 2–3 and the head"));
    // Parameters: the embedding 256·64 + 16·64 = 17,408; a block 12h² + 13h =
    // 49,984; the head LNf 2·64 + LM head 256·64 = 16,512. Stage 0 17,408 +
    // 2·49,984 = 117,376; stage 1 2·49,984 + 16,512 = 116,480. ddp on one
    // data-parallel rank keeps 16 bytes each.
    QCOMPARE(p.stages[0].params, int64_t(117376));
    QCOMPARE(p.stages[1].params, int64_t(116480));
    QCOMPARE(p.stages[0].model_state_bytes, int64_t(16 * 117376));
    QCOMPARE(p.stages[1].model_state_bytes, int64_t(16 * 116480));
    // 1F1B, S = 2: stage 0 holds 2 microbatches of (2 blocks + the embedding)
    // = 2·(2·33,280 + 2,112) = 137,344, and its first backward receives the
    // output gradient, 2·16·64 = 2,048: 139,392 (the plan counts it on top;
    // a ddp run books it once the block's 33,280 are freed). Stage 1 holds
    // one microbatch of 2 blocks and the head: 2·33,280 + 18,624 = 85,184.
    QCOMPARE(p.stages[0].in_flight, 2);
    QCOMPARE(p.stages[1].in_flight, 1);
    QCOMPARE(p.stages[0].activation_bytes, int64_t(139392));
    QCOMPARE(p.stages[1].activation_bytes, int64_t(85184));
    // Buffers: one block's bf16 gradients, 2·49,984 = 99,968. The plan
    // books them beside everything its backward holds: stage 0 peaks in its
    // first block backward, 139,392 + 99,968 = 239,360 beside 16·117,376 of
    // model states = 2,117,376. Stage 1 in its head's backward, 85,184 +
    // 2·16,512, or its last block's, the head's 18,560 freed (the targets'
    // 64 stay): 66,624 + 99,968 = 166,592; 16·116,480 + 166,592 = 2,030,272.
    QCOMPARE(p.stages[0].buffer_bytes, int64_t(99968));
    QCOMPARE(p.stages[0].peakBytes(), int64_t(2117376));
    QCOMPARE(p.stages[1].peakBytes(), int64_t(2030272));
    QCOMPARE(p.most_loaded, 0);
    QVERIFY(p.fits());
    QCOMPARE(p.bubble, 1.0 / 5.0);  // (S − 1)/(M + S − 1)
  }

  void smallGptAgreesWithItsRun_data() {
    QTest::addColumn<int>("schedule");
    QTest::addColumn<int>("recompute");
    QTest::addColumn<QString>("strategy");
    for (const auto& [name, kind] : {std::pair{"gpipe", PipelineSchedule::GPipe}, {"1f1b", PipelineSchedule::OneFOneB},
                                     {"interleaved", PipelineSchedule::Interleaved}})
      for (const auto& [mode, recompute] : {std::pair{"none", Checkpointing::None}, {"selective", Checkpointing::Selective},
                                            {"full", Checkpointing::Full}})
        QTest::addRow("%s, %s", name, mode) << int(kind) << int(recompute) << "ddp";
    QTest::newRow("1f1b, fsdp on 2 data-parallel ranks") << int(PipelineSchedule::OneFOneB) << int(Checkpointing::None)
                                                         << "fsdp";
    QTest::newRow("1f1b, zero1 on 2 data-parallel ranks") << int(PipelineSchedule::OneFOneB)
                                                          << int(Checkpointing::Selective) << "zero1";
  }
  void smallGptAgreesWithItsRun() {
    QFETCH(int, schedule);
    QFETCH(int, recompute);
    QFETCH(QString, strategy);
    RunConfig c = smallGpt(PipelineSchedule(schedule));
    c.model.checkpointing = Checkpointing(recompute);
    c.model.attention = Attention::Naive;  // a recompute worth seeing: the softmax
    if (c.pipelineSchedule() == PipelineSchedule::Interleaved) c.virtual_stages = 2;
    if (strategy != "ddp") {
      c.strategy = *parseStrategy(strategy.toStdString());
      c.ranks = 4;
      c.batch = 8;
    }
    validate(c);
    checkPlanAgainstRun(planParallelCapacity(c, 80 * kGb));
  }

  void gpipeHoldsMOnStageZero() {
    // GPipe: every stage holds all M = 4 microbatches: stage 0 4·68,672 =
    // 274,688 and the received gradient, 276,736; 1F1B's S = 2 hold half the
    // microbatches.
    const ParallelPlan gpipe = planParallelCapacity(smallGpt(PipelineSchedule::GPipe), 80 * kGb);
    const ParallelPlan onefoneb = planParallelCapacity(smallGpt(PipelineSchedule::OneFOneB), 80 * kGb);
    QCOMPARE(gpipe.stages[0].in_flight, 4);
    QCOMPARE(gpipe.stages[1].in_flight, 4);
    QCOMPARE(gpipe.stages[0].activation_bytes, int64_t(276736));
    QCOMPARE(gpipe.stages[1].activation_bytes, int64_t(4 * 85184));
    QCOMPARE(gpipe.stages[0].activation_bytes - 2048, 2 * (onefoneb.stages[0].activation_bytes - 2048));
  }

  void interleavedHoldsMegatronsWarmup() {
    // Megatron-LM's interleaved 1F1B: stage k warms up with (S − k − 1)·2 +
    // (V − 1)·S chunk forwards, so it holds one more than that at its peak:
    // S = 4, V = 2, M = 8: stage 0 11 chunks, stage 1 9, stage 3 5. Each
    // chunk holds 64/(4·2) = 8 blocks of this 64-block GPT (on the middle stages).
    RunConfig c = smallGpt(PipelineSchedule::Interleaved);
    c.model.layers = 64;
    c.ranks = 4;
    c.pp = 4;
    c.microbatches = 8;
    c.batch = 8;
    c.virtual_stages = 2;
    validate(c);
    const ParallelPlan p = planParallelCapacity(c, 80 * kGb);
    for (int k = 0; k < 4; ++k) QCOMPARE(p.stages[size_t(k)].in_flight, std::min((4 - k - 1) * 2 + (2 - 1) * 4 + 1, 16));
    QCOMPARE(p.stages[1].blocks, 16);
    // Stage 1's peak: 9 chunks of 8 blocks, and the received gradient.
    QCOMPARE(p.stages[1].in_flight, 9);
    QCOMPARE(double(p.stages[1].activation_bytes), 9 * 8 * p.per_layer_bytes + expectedStageBoundaryBytes(c));
    checkPlanAgainstRun(p);
  }

  void sequenceParallelDividesByT_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("recompute");
    QTest::newRow("T 2, selective") << 2 << int(Checkpointing::Selective);
    QTest::newRow("T 8, selective") << 8 << int(Checkpointing::Selective);
    QTest::newRow("T 8, full") << 8 << int(Checkpointing::Full);
  }
  void sequenceParallelDividesByT() {
    // Korthikanti et al. 2022: with selective recompute a block keeps 34·s·b·h
    // on one GPU; tensor parallelism alone leaves the norms' and residual
    // tensors whole (10 + 24/t), sequence parallelism splits them too: 34/t.
    // Here: the whole block's activations on one GPU divided by T exactly.
    QFETCH(int, tp);
    QFETCH(int, recompute);
    RunConfig one = presetConfig("llama2-70b", 8, Strategy::Zero1, Checkpointing(recompute), false);
    one.tp = 1;
    one.batch = 8;  // one sample per data-parallel rank
    RunConfig split = one;
    split.tp = tp;
    split.batch = 8 / tp;
    split.model.sequence_parallel = true;
    validate(one);
    validate(split);
    const double whole = expectedActivationBytesPerLayer(one), sp = expectedActivationBytesPerLayer(split);
    QVERIFY2(std::abs(sp * tp - whole) <= 1e-9 * whole, qPrintable(QString("%1 x %2 vs %3").arg(sp).arg(tp).arg(whole)));
    // Without sequence parallelism the whole tensors stay: more than 1/T.
    RunConfig tp_only = split;
    tp_only.model.sequence_parallel = false;
    QVERIFY(expectedActivationBytesPerLayer(tp_only) > sp);
    // The plan's middle stages scale the same way (blocks only on them).
    one.pp = 4;
    one.ranks = 4 * tp;
    one.microbatches = 4;
    one.batch = 4;
    split.pp = 4;
    split.ranks = 4 * tp;
    split.microbatches = 4;
    split.batch = 4;
    one.tp = tp;
    one.model.sequence_parallel = false;
    validate(one);
    validate(split);
    const ParallelPlan a = planParallelCapacity(one, 80 * kGb), b = planParallelCapacity(split, 80 * kGb);
    QVERIFY(b.stages[1].activation_bytes < a.stages[1].activation_bytes);
  }

  void fitLlama70b() {
    // Llama 2 70B on 64 GPUs at 80 GB, zero1, selective recompute, sequence
    // parallelism, micro-batch 1, M = S.
    const RunConfig base = presetConfig("llama2-70b", 64, Strategy::Zero1, Checkpointing::Selective, true);
    const FitSearch f = searchSmallestTpPp(base, 80 * kGb, 1, std::nullopt);
    QVERIFY(f.chosen >= 0);
    const FitCandidate& chosen = f.tried[size_t(f.chosen)];
    // Every candidate before the answer is refused or does not fit; the order is T·S, then T.
    for (int i = 0; i < f.chosen; ++i) {
      const FitCandidate& t = f.tried[size_t(i)];
      QVERIFY(!t.fits());
      QVERIFY(t.tp * t.pp <= chosen.tp * chosen.pp);
      if (i > 0) {
        const FitCandidate& prev = f.tried[size_t(i - 1)];
        QVERIFY(prev.tp * prev.pp < t.tp * t.pp || (prev.tp * prev.pp == t.tp * t.pp && prev.tp < t.tp));
      }
    }
    // T·S = 8: (1, 8) and (2, 4) do not fit, (4, 2) does and goes before
    // (8, 1), which fits too (ties: the smaller TP group).
    QCOMPARE(chosen.tp, 4);
    QCOMPARE(chosen.pp, 2);
    QCOMPARE(int(f.tried.size()), f.chosen + 2);
    QVERIFY(f.tried.back().fits() && f.tried.back().tp == 8);
    QVERIFY(chosen.plan->mostLoaded().peakBytes() <= 80 * kGb);
    checkPlanAgainstRun(*chosen.plan);
  }

  void withoutStagesAgreesWithItsRun_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("ddp") << "ddp";
    QTest::newRow("zero1") << "zero1";
    QTest::newRow("zero3") << "zero3";
  }
  void withoutStagesAgreesWithItsRun() {
    // One pass without stages (a --fit candidate with S = 1): Llama 2 70B as
    // TP 8 on 64 GPUs, one sample per data-parallel rank; the strategies' own
    // buffers (ddp and zero1 buckets: a bf16 copy of the gradients).
    QFETCH(QString, strategy);
    RunConfig c = presetConfig("llama2-70b", 64, *parseStrategy(strategy.toStdString()), Checkpointing::None, false);
    c.tp = 8;
    c.batch = 8;
    validate(c);
    const ParallelPlan p = planParallelCapacity(c, 80 * kGb);
    QCOMPARE(int(p.stages.size()), 1);
    QCOMPARE(p.stages[0].in_flight, 1);
    checkPlanAgainstRun(p);
  }

  void fitLlama405b() {
    // Llama 3 405B on 16,384 GPUs as trained (zero1, selective recompute,
    // sequence parallelism, 16 microbatches of one sequence): the answer is
    // its published TP 8 × PP 16.
    const RunConfig base = presetConfig("llama3-405b", 16384, Strategy::Zero1, Checkpointing::Selective, true);
    const FitSearch f = searchSmallestTpPp(base, 80 * kGb, 1, 16);
    QVERIFY(f.chosen >= 0);
    const FitCandidate& chosen = f.tried[size_t(f.chosen)];
    QCOMPARE(chosen.tp, 8);
    QCOMPARE(chosen.pp, 16);
    for (int i = 0; i < f.chosen; ++i) QVERIFY(!f.tried[size_t(i)].fits());
    // Under 1F1B the first stages hold the most: stage 1 (15 microbatches of
    // 8 blocks) over stage 0 (16 of 7 blocks and the embedding).
    QCOMPARE(chosen.plan->most_loaded, 1);
    QCOMPARE(chosen.plan->stages[1].in_flight, 15);
    checkPlanAgainstRun(*chosen.plan);
  }

  void publishedActivationsPerGpu_data() {
    QTest::addColumn<int>("row");
    const std::vector<PublishedRow> rows = loadPublishedTable(defaultPublishedTablePath());
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].published.activations_gib) QTest::newRow(rows[i].name.c_str()) << int(i);
  }
  void publishedActivationsPerGpu() {
    // Korthikanti et al. 2022, Figure 1: activation memory per GPU of the
    // 22B, 175B, 530B and 1T runs (no recompute; sequence parallel +
    // selective), as validate's table carries them. The plan's most loaded
    // stage, predicted without a run, within 8 %: 59.64 GiB against 59.25
    // (22B) … 27.75 against 26.56 (1T, sequence parallel + selective), all
    // above and the figures validate's meta runs of the same rows measure
    // (the paper counts the first stage's p microbatches of L/p layers,
    // without the embedding, the head and the fp32 norm statistics).
    QFETCH(int, row);
    const std::vector<PublishedRow> rows = loadPublishedTable(defaultPublishedTablePath());
    const PublishedRow& r = rows[size_t(row)];
    RunConfig c = validationRunConfig(r);
    validate(c);
    const ParallelPlan p = planParallelCapacity(c, 80 * kGb);
    int64_t peak = 0;
    for (const StagePlan& s : p.stages) peak = std::max(peak, s.activation_bytes);
    const double gib = double(peak) / (1024.0 * 1024.0 * 1024.0), published = *r.published.activations_gib;
    qInfo("%s: plan %.4g GiB, published %.4g GiB", r.name.c_str(), gib, published);
    QVERIFY2(std::abs(gib / published - 1) <= 0.08,
             qPrintable(QString("%1: plan %2 GiB, published %3 GiB").arg(QString::fromStdString(r.name)).arg(gib).arg(published)));
  }

  void schedulesCompared() {
    RunConfig c = smallGpt(PipelineSchedule::OneFOneB);
    const ScheduleComparison s = compareSchedules(c, 80 * kGb);
    QCOMPARE(int(s.rows.size()), 3);
    for (const ScheduleRow& r : s.rows) {
      QVERIFY2(r.refused.empty(), r.refused.c_str());
      QVERIFY(r.step_ms > 0);
      QVERIFY(r.bubble_measured > 0);
      for (const ScheduleStageRow& st : r.stages)
        QVERIFY2(std::abs(double(st.activation_planned - st.activation_measured)) <= 2048 + 1e-3 * double(st.activation_measured),
                 qPrintable(QString("%1 stage %2: %3 vs %4").arg(QString::fromStdString(pipelineScheduleName(r.schedule)))
                                .arg(st.stage).arg(st.activation_planned).arg(st.activation_measured)));
    }
    // GPipe and 1F1B share the bubble formula; interleaving shrinks it.
    QCOMPARE(s.rows[0].bubble_formula, s.rows[1].bubble_formula);
    QVERIFY(s.rows[2].bubble_formula < s.rows[1].bubble_formula);
    QVERIFY(s.rows[0].stages[0].activation_measured > s.rows[1].stages[0].activation_measured);
  }

  void badInputIsNamed() {
    RunConfig c = smallGpt(PipelineSchedule::OneFOneB);
    c.pp = 1;
    c.microbatches = 1;
    try {
      compareSchedules(c, 80 * kGb);
      QFAIL("no stages to compare");
    } catch (const ConfigError& e) {
      QVERIFY(QString(e.what()).contains("--pp 2 or more"));
    }
    RunConfig mlp;
    try {
      planParallelCapacity(mlp, 80 * kGb);
      QFAIL("the residual MLP has no plan");
    } catch (const ConfigError& e) {
      QVERIFY(QString(e.what()).contains("--model gpt"));
    }
  }
};

QTEST_GUILESS_MAIN(TestParallelCapacity)
#include "test_parallel_capacity.moc"
