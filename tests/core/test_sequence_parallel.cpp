// Sequence parallelism (--sp on, Korthikanti et al. 2022) on CPU ranks: the
// GPT run with --tp 2 --sp on gives the losses and weights of the run without
// it and of the one-rank run (the bf16 bound of test_ddp.cpp) under DDP,
// ZeRO-1 and FSDP across DP and under every pipeline schedule; each block's
// forward reduce-scatters and all-gathers over the TP group and all-reduces
// nothing; the ledger's activations per layer are the meta backend's and the
// formula's sbh(34/t + 5as/(ht)) as adapted in analysis/formulas.h; a pipeline
// stage sends 1/T of the elements.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/formulas.h"
#include "common/errors.h"
#include "config/model_shape.h"
#include "engine/run.h"
#include "equivalence_check.h"
#include "sanitizer_build.h"
#include "trace/run_trace.h"

using namespace shardscope;
using namespace shardscope::testing;

namespace {

RunConfig spConfig(const QString& strategy, int ranks, int tp) {
  RunConfig c;
  c.strategy = *parseStrategy(strategy.toStdString());
  c.ranks = ranks;
  c.tp = tp;
  c.model.kind = ModelKind::Gpt;
  c.model.layers = 2;
  c.model.hidden = 32;
  c.model.heads = 4;
  c.model.seq = 16;
  c.model.vocab = 256;
  c.model.sequence_parallel = true;
  c.batch = 8;
  c.steps = 3;
  c.lr = 1e-3;
  c.bucket_mb = 0.1;
  c.first_bucket_mb = 0.02;
  return c;
}

// The largest |loss_a - loss_b| / |loss_b| over the steps (for the log: what the bound leaves).
double maxLossError(const RunResult& a, const RunResult& b) {
  double worst = 0;
  for (size_t s = 0; s < std::min(a.losses.size(), b.losses.size()); ++s)
    worst = std::max(worst, std::abs(a.losses[s] - b.losses[s]) / std::abs(b.losses[s]));
  return worst;
}

const RunResult& oneRank(int layers, int steps, Checkpointing checkpointing) {
  static std::map<std::tuple<int, int, Checkpointing>, RunResult> refs;
  const auto key = std::tuple{layers, steps, checkpointing};
  auto it = refs.find(key);
  if (it == refs.end()) {
    RunConfig c = spConfig("ddp", 1, 1);
    c.model.sequence_parallel = false;
    c.model.layers = layers;
    c.steps = steps;
    c.model.checkpointing = checkpointing;
    it = refs.emplace(key, Run(c).execute()).first;
  }
  return it->second;
}

QString validationError(const RunConfig& c) {
  try {
    validate(c);
  } catch (const ConfigError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestSequenceParallel : public QObject {
  Q_OBJECT

 private slots:
  void equivalence_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("tp");
    QTest::addColumn<QString>("checkpointing");
    QTest::newRow("tp2 alone") << "ddp" << 2 << 2 << "none";
    QTest::newRow("dp2 x tp2 ddp") << "ddp" << 4 << 2 << "none";
    QTest::newRow("dp2 x tp2 zero1") << "zero1" << 4 << 2 << "none";
    QTest::newRow("dp2 x tp2 fsdp") << "fsdp" << 4 << 2 << "none";
#ifndef SHARDSCOPE_UNDER_SANITIZER
    QTest::newRow("tp4 alone") << "ddp" << 4 << 4 << "none";
    QTest::newRow("tp2 selective recompute") << "ddp" << 2 << 2 << "selective";
    QTest::newRow("dp2 x tp2 zero1 full recompute") << "zero1" << 4 << 2 << "full";
#endif
  }

  // --sp on against the one-rank run and against the same run with --sp off:
  // the bound every strategy meets.
  void equivalence() {
    QFETCH(QString, strategy);
    QFETCH(int, ranks);
    QFETCH(int, tp);
    QFETCH(QString, checkpointing);
    RunConfig c = spConfig(strategy, ranks, tp);
    c.model.checkpointing = *parseCheckpointing(checkpointing.toStdString());
    const RunResult sp = Run(c).execute();
    RunConfig off = c;
    off.model.sequence_parallel = false;
    const RunResult plain = Run(off).execute();
    const RunResult& one = oneRank(c.model.layers, c.steps, c.model.checkpointing);
    const double vs_one = verifyEquivalent(sp, one, c);
    if (QTest::currentTestFailed()) return;
    const double vs_off = verifyEquivalent(sp, plain, c);
    if (QTest::currentTestFailed()) return;
    qInfo("loss error vs one rank %.2e, vs --sp off %.2e; update error vs one rank %.2e, vs --sp off %.2e",
          maxLossError(sp, one), maxLossError(sp, plain), vs_one, vs_off);
  }

  void pipelines_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("microbatches");
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<QString>("checkpointing");
    QTest::newRow("pp2 x tp2 gpipe M2") << "ddp" << 4 << 2 << "gpipe" << "none";
    QTest::newRow("pp2 x tp2 1f1b M4") << "ddp" << 4 << 4 << "1f1b" << "none";
    QTest::newRow("pp2 x tp2 interleaved V2 M4") << "ddp" << 4 << 4 << "interleaved" << "none";
#ifndef SHARDSCOPE_UNDER_SANITIZER
    QTest::newRow("dp2 x pp2 x tp2 zero1 1f1b M2") << "zero1" << 8 << 2 << "1f1b" << "none";
    QTest::newRow("dp2 x pp2 x tp2 fsdp gpipe M2") << "fsdp" << 8 << 2 << "gpipe" << "none";
    QTest::newRow("pp2 x tp2 1f1b full recompute") << "ddp" << 4 << 2 << "1f1b" << "full";
#endif
  }

  // DP × PP × TP with --sp on against the one-rank run with the same global
  // batch; each stage sends half the elements of the run with --sp off.
  void pipelines() {
    QFETCH(QString, strategy);
    QFETCH(int, ranks);
    QFETCH(int, microbatches);
    QFETCH(QString, schedule);
    QFETCH(QString, checkpointing);
    RunConfig c = spConfig(strategy, ranks, 2);
    c.model.layers = 4;
    c.steps = 2;
    c.pp = 2;
    c.microbatches = microbatches;
    c.pp_schedule = *parsePipelineSchedule(schedule.toStdString());
    c.model.checkpointing = *parseCheckpointing(checkpointing.toStdString());
    const RunResult sp = Run(c).execute();
    const RunResult& one = oneRank(c.model.layers, c.steps, c.model.checkpointing);
    const double vs_one = verifyEquivalent(sp, one, c);
    if (QTest::currentTestFailed()) return;
    RunConfig off = c;
    off.model.sequence_parallel = false;
    const RunResult plain = Run(off).execute();
    verifyEquivalent(sp, plain, c);
    if (QTest::currentTestFailed()) return;
    qInfo("loss error vs one rank %.2e, vs --sp off %.2e; update error vs one rank %.2e", maxLossError(sp, one),
          maxLossError(sp, plain), vs_one);
    for (size_t r = 0; r < sp.ranks.size(); ++r) {
      QVERIFY(sp.ranks[r].comm_bytes.send > 0);
      QCOMPARE(sp.ranks[r].comm_bytes.send * c.tp, plain.ranks[r].comm_bytes.send);
    }
  }

  // Each block's forward: two reduce-scatters and two all-gathers of the
  // (B·S, D) activation in bf16 on the TP group, no all-reduce; backward four
  // all-gathers and two reduce-scatters (the norms' outputs gathered again)
  // besides the replicated parameters' fp32 gradient sums. The embedding
  // reduce-scatters, the head all-gathers. Without --sp: two all-reduces.
  void traceHasReduceScatterAndAllGather() {
    for (const bool on : {true, false}) {
      RunConfig c = spConfig("ddp", 2, 2);
      c.model.sequence_parallel = on;
      c.steps = 1;
      Run run(c);
      run.execute();
      const RunTrace t = run.trace();
      int tp_group = -1;
      for (const CommGroup& g : t.groups)
        if (g.name == "tp0") tp_group = g.id;
      QVERIFY(tp_group >= 0);
      const int64_t activation_bytes = int64_t(c.batch) * c.model.seq * c.model.hidden * 2;  // bf16, whole rows
      for (int rank = 0; rank < 2; ++rank) {
        std::map<int32_t, EventKind> pass;  // op -> Forward or Backward
        for (const Event& e : t.events[size_t(rank)])
          if ((e.kind == EventKind::Forward || e.kind == EventKind::Backward) && e.op >= 0) pass[e.op] = e.kind;
        // [segment][forward?][kind] -> count of activation-sized collectives
        std::map<std::tuple<int, bool, EventKind>, int> n;
        int forward_all_reduces = 0;
        for (const Event& e : t.events[size_t(rank)]) {
          if (e.group != tp_group) continue;
          const bool collective = e.kind == EventKind::AllReduce || e.kind == EventKind::ReduceScatter ||
                                  e.kind == EventKind::AllGather;
          if (!collective) continue;
          QCOMPARE(e.lane, Lane::Compute);
          // The loss's statistics sit in the loss op; everything else in a forward or backward.
          const auto op = pass.find(e.dep);
          if (e.bytes == activation_bytes) QVERIFY2(op != pass.end(), "an activation collective outside forward and backward");
          if (op == pass.end()) continue;
          const bool forward = op->second == EventKind::Forward;
          if (forward && e.kind == EventKind::AllReduce && e.block >= 1 && e.block <= c.model.layers)
            ++forward_all_reduces;  // of any size
          if (e.bytes == activation_bytes) ++n[{e.block, forward, e.kind}];
        }
        for (int b = 1; b <= c.model.layers; ++b) {
          if (on) {
            QCOMPARE(forward_all_reduces, 0);
            QCOMPARE((n[{b, true, EventKind::ReduceScatter}]), 2);
            QCOMPARE((n[{b, true, EventKind::AllGather}]), 2);
            QCOMPARE((n[{b, false, EventKind::ReduceScatter}]), 2);
            QCOMPARE((n[{b, false, EventKind::AllGather}]), 4);
          } else {
            QCOMPARE((n[{b, true, EventKind::AllReduce}]), 2);
            QCOMPARE((n[{b, true, EventKind::ReduceScatter}]), 0);
            QCOMPARE((n[{b, true, EventKind::AllGather}]), 0);
          }
        }
        const int head = c.model.layers + 1;
        if (on) {
          QCOMPARE((n[{0, true, EventKind::ReduceScatter}]), 1);
          QCOMPARE((n[{0, false, EventKind::AllGather}]), 1);
          QCOMPARE((n[{head, true, EventKind::AllGather}]), 1);
          QCOMPARE((n[{head, false, EventKind::ReduceScatter}]), 1);
        } else {
          QCOMPARE((n[{0, true, EventKind::AllReduce}]), 1);
          QCOMPARE((n[{head, false, EventKind::AllReduce}]), 1);
        }
      }
    }
  }

  // What a CPU rank books for a block's activations is the meta backend's
  // booking exactly and the formula's (34/t of sbh split over the sequence)
  // within the 10 % of test_tensor_parallel; it drops by T from --sp off for
  // the norms' and residual tensors; the TP bytes per layer are the formula's.
  void activationsAndBytesMatchMetaAndFormula_data() {
    QTest::addColumn<int>("attention");
    QTest::addColumn<int>("checkpointing");
    for (const Attention a : {Attention::Naive, Attention::Flash})
      for (const Checkpointing k : {Checkpointing::None, Checkpointing::Selective, Checkpointing::Full})
        QTest::addRow("%s %s", attentionName(a).c_str(), checkpointingName(k).c_str()) << int(a) << int(k);
  }
  void activationsAndBytesMatchMetaAndFormula() {
    QFETCH(int, attention);
    QFETCH(int, checkpointing);
    RunConfig c = spConfig("ddp", 2, 2);
    c.model.attention = static_cast<Attention>(attention);
    c.model.checkpointing = static_cast<Checkpointing>(checkpointing);
    c.steps = 1;
    c.clock = ClockKind::Modeled;
    const RunResult cpu = Run(c).execute();
    RunConfig meta = c;
    meta.backend = Backend::Meta;
    const RunResult modeled = Run(meta).execute();
    RunConfig off = c;
    off.model.sequence_parallel = false;
    const RunResult whole = Run(off).execute();
    const double formula = expectedActivationBytesPerLayer(c);
    const ExpectedTraffic traffic = expectedTraffic(c);
    const double sbh = double(c.model.seq) * c.batch * c.model.hidden;
    for (size_t r = 0; r < cpu.ranks.size(); ++r) {
      const RankResult& rank = cpu.ranks[r];
      QCOMPARE(rank.activation_bytes_per_layer, modeled.ranks[r].activation_bytes_per_layer);
      QVERIFY2(std::abs(double(rank.activation_bytes_per_layer) - formula) <= 0.10 * formula,
               qPrintable(QString("rank %1: %2 B per layer, formula %3 B").arg(r).arg(rank.activation_bytes_per_layer).arg(formula)));
      // The norms' inputs and outputs, the residual and the statistics: 8·sbh + 16·sb whole, 1/T of it here.
      const double split = c.model.checkpointing == Checkpointing::Full ? 2.0 * sbh : 8.0 * sbh + 16.0 * sbh / c.model.hidden;
      QCOMPARE(double(whole.ranks[r].activation_bytes_per_layer - rank.activation_bytes_per_layer),
               split - split / c.tp);
      for (int b = 1; b <= c.model.layers; ++b) {
        const int64_t forward = traffic.tp_forward_per_layer, backward = traffic.tp_backward_per_layer;
        QCOMPARE(cpu.listsOf(int(r)).tp_forward_bytes[size_t(b)], forward);
        QCOMPARE(cpu.listsOf(int(r)).tp_backward_bytes[size_t(b)], backward);
        QCOMPARE(cpu.listsOf(int(r)).tp_forward_bytes[size_t(b)], modeled.listsOf(int(r)).tp_forward_bytes[size_t(b)]);
        QCOMPARE(cpu.listsOf(int(r)).tp_backward_bytes[size_t(b)], modeled.listsOf(int(r)).tp_backward_bytes[size_t(b)]);
      }
      QCOMPARE(rank.tp_comm_bytes.reduce_scatter, modeled.ranks[r].tp_comm_bytes.reduce_scatter);
      QCOMPARE(rank.tp_comm_bytes.all_gather, modeled.ranks[r].tp_comm_bytes.all_gather);
    }
  }

  // --sp on runs on CPU ranks and the meta backend; the CUDA backends are
  // refused by name (they have no tensor-parallel path).
  void whereItApplies() {
    RunConfig c = spConfig("ddp", 2, 2);
    QVERIFY2(validationError(c).isEmpty(), qPrintable(validationError(c)));
    c.backend = Backend::Meta;
    c.clock = ClockKind::Modeled;
    QVERIFY2(validationError(c).isEmpty(), qPrintable(validationError(c)));
    c.clock = ClockKind::Measured;
    c.backend = Backend::CudaEmulated;
    c.tp = 1;
    QVERIFY2(validationError(c).contains("--sp applies to --backend cpu or meta"), qPrintable(validationError(c)));
    c = spConfig("ddp", 2, 2);
    c.model.seq = 15;
    QVERIFY2(validationError(c).contains("--sp on needs --tp 2 to divide the sequence 15"),
             qPrintable(validationError(c)));
  }
};

QTEST_APPLESS_MAIN(TestSequenceParallel)
#include "test_sequence_parallel.moc"
