// Tensor parallelism (Megatron-LM) alone and composed with the data-parallel
// strategies, measured on real runs: the same losses and weights as DDP on one
// rank (the bf16 bound of test_ddp.cpp), model state per rank from the
// allocator against 16/(T·P_dp), the activation all-reduce bytes per layer
// against 2(T-1)/T x B·S·D x 2, which group and lane each collective used, the
// meta backend's bookings and the modeled clock's exposed TP time.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/formulas.h"
#include "analysis/run_summary.h"
#include "common/errors.h"
#include "config/model_shape.h"
#include "engine/run.h"
#include "sanitizer_build.h"
#include "equivalence_check.h"
#include "parallel/tensor_parallel.h"
#include "trace/chrome_trace_reader.h"
#include "trace/chrome_trace_writer.h"
#include "trace/run_trace.h"

using namespace shardscope;
using namespace shardscope::testing;

namespace {

RunConfig mlpConfig(const QString& strategy, int ranks, int tp) {
  RunConfig c;
  c.strategy = *parseStrategy(strategy.toStdString());
  c.ranks = ranks;
  c.tp = tp;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 16;
  c.steps = 3;
  c.lr = 1e-3;
  c.bucket_mb = 0.1;
  c.first_bucket_mb = 0.02;
  if (c.strategy == Strategy::Hsdp) c.shard_group = 2;
  return c;
}

RunConfig gptConfig(const QString& strategy, int ranks, int tp) {
  RunConfig c = mlpConfig(strategy, ranks, tp);
  c.model.kind = ModelKind::Gpt;
  c.model.layers = 2;
  c.model.hidden = 32;
  c.model.heads = 4;
  c.model.seq = 16;
  c.model.vocab = 256;
  c.batch = 8;
  return c;
}

RunConfig configFor(const QString& model, const QString& strategy, int ranks, int tp) {
  return model == "gpt" ? gptConfig(strategy, ranks, tp) : mlpConfig(strategy, ranks, tp);
}

const RunResult& reference(const QString& model) {
  static std::map<QString, RunResult> refs;
  auto it = refs.find(model);
  if (it == refs.end()) it = refs.emplace(model, Run(configFor(model, "ddp", 1, 1)).execute()).first;
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

int64_t maxBlockBytes(const std::vector<int64_t>& per_segment, int layers) {
  int64_t m = 0;
  for (int b = 1; b <= layers; ++b) m = std::max(m, per_segment[size_t(b)]);
  return m;
}

}  // namespace

class TestTensorParallel : public QObject {
  Q_OBJECT

 private slots:
  void equivalence_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("tp");
    for (const char* m : {"mlp", "gpt"}) {
#ifdef SHARDSCOPE_UNDER_SANITIZER
      // Each kind of group once per model: TP alone, TP inside FSDP at both
      // widths (the mlp), FSDP x TP (the gpt).
      if (QString(m) == "gpt") {
        QTest::addRow("%s zero3 P=8 tp=2", m) << QString(m) << "zero3" << 8 << 2;
        continue;
      }
      QTest::addRow("%s tp=2 alone", m) << QString(m) << "ddp" << 2 << 2;
      QTest::addRow("%s zero3 P=4 tp=2", m) << QString(m) << "zero3" << 4 << 2;
      QTest::addRow("%s zero3 P=8 tp=4", m) << QString(m) << "zero3" << 8 << 4;
      continue;
#endif
      for (int t : {2, 4}) QTest::addRow("%s tp=%d alone", m, t) << QString(m) << "ddp" << t << t;
      QTest::addRow("%s zero3 P=4 tp=2", m) << QString(m) << "zero3" << 4 << 2;
      QTest::addRow("%s zero3 P=8 tp=2", m) << QString(m) << "zero3" << 8 << 2;
      QTest::addRow("%s zero3 P=8 tp=4", m) << QString(m) << "zero3" << 8 << 4;
    }
    QTest::newRow("mlp ddp P=4 tp=2") << "mlp" << "ddp" << 4 << 2;
    QTest::newRow("mlp zero1 P=4 tp=2") << "mlp" << "zero1" << 4 << 2;
    QTest::newRow("mlp zero2 P=4 tp=2") << "mlp" << "zero2" << 4 << 2;
    QTest::newRow("mlp hsdp P=8 tp=2 G=2") << "mlp" << "hsdp" << 8 << 2;
  }

  // The same bound as every strategy's (equivalence_check.h): a TP run is the
  // one-rank DDP run up to bf16 rounding, here of the activations on the wire too.
  void equivalence() {
    QFETCH(QString, model);
    QFETCH(QString, strategy);
    QFETCH(int, ranks);
    QFETCH(int, tp);
    const RunConfig c = configFor(model, strategy, ranks, tp);
    const RunResult got = Run(c).execute();
    verifyEquivalent(got, reference(model), c);
  }

  // Model state per rank for TP x zero3: the strategy's 16/P_dp bytes on each
  // of the slice's parameters (exact up to padding), which is 16/(T·P_dp) of the
  // full model's up to the parameters every TP rank holds whole.
  void ledgerAndTraffic_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("backend");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("tp");
    for (const char* m : {"mlp", "gpt"})
      for (const char* b : {"cpu", "meta"}) {
        QTest::addRow("%s %s P=4 tp=2", m, b) << QString(m) << QString(b) << 4 << 2;
        QTest::addRow("%s %s P=8 tp=4", m, b) << QString(m) << QString(b) << 8 << 4;
      }
  }

  void ledgerAndTraffic() {
    QFETCH(QString, model);
    QFETCH(QString, backend);
    QFETCH(int, ranks);
    QFETCH(int, tp);
    RunConfig c = configFor(model, "zero3", ranks, tp);
    c.steps = 1;
    if (backend == "meta") {
      c.backend = Backend::Meta;
      c.clock = ClockKind::Modeled;
    }
    const RunResult r = Run(c).execute();
    const int dp = ranks / tp;
    const double formula = expectedBytesPerParam(c);
    QCOMPARE(formula, 16.0 / (tp * dp));
    const double whole_share = double(r.tp_whole_params) / double(r.params);
    QVERIFY2(whole_share > 0 && whole_share < 0.05, qPrintable(QString("whole params %1").arg(whole_share)));
    QCOMPARE(r.slice_params, r.tp_whole_params + (r.params - r.tp_whole_params) / tp);
    for (const RankResult& rank : r.ranks) {
      const double measured = double(rank.ledger.model_state_peak);
      const double slice = 16.0 / dp * double(r.slice_params) + double(rank.padding_state_bytes);
      QVERIFY2(std::abs(measured - slice) < 16.0,
               qPrintable(QString("rank %1: %2 B measured, %3 B for the slice").arg(rank.rank).arg(measured).arg(slice)));
      const double per_param = modelStateBytesPerParam(rank, r.params);
      QVERIFY2(std::abs(per_param - formula) <= formula * (whole_share * tp + 0.01),
               qPrintable(QString("%1 B/param vs 16/(T·P_dp) = %2").arg(per_param).arg(formula)));
      // Activation all-reduces: per layer, forward and backward, exactly the formula.
      const int64_t per_layer = expectedTraffic(c).tp_per_layer;
      QVERIFY(per_layer > 0);
      QCOMPARE(maxBlockBytes(rank.tp_forward_bytes, c.model.layers), per_layer);
      QCOMPARE(maxBlockBytes(rank.tp_backward_bytes, c.model.layers), per_layer);
      for (int b = 1; b <= c.model.layers; ++b) QCOMPARE(rank.tp_forward_bytes[size_t(b)], per_layer);
      // The data-parallel axis moves the slice, 3(P_dp-1)/P_dp x 2 N_slice.
      const CommBytes dp_formula = expectedTraffic(c, r.slice_params + r.padding_elements).data_parallel;
      QCOMPARE(rank.comm_bytes.reduce_scatter, dp_formula.reduce_scatter);
      QCOMPARE(rank.comm_bytes.all_gather, dp_formula.all_gather);
      QCOMPARE(rank.comm_bytes.all_reduce, int64_t(0));
      QVERIFY(rank.tp_comm_bytes.all_reduce >= 2 * c.model.layers * per_layer);
    }
    // The summary prints each measurement beside its formula.
    std::ostringstream out;
    writeSummaryJson(r, out);
    const auto j = nlohmann::json::parse(out.str());
    QCOMPARE(j["tensor_parallel"]["tp"].get<int>(), tp);
    const auto& r0 = j["per_rank"][0];
    QCOMPARE(r0["tp_activation_all_reduce_bytes_per_layer"]["forward"],
             r0["expected_tp_activation_all_reduce_bytes_per_layer"]["forward"]);
    QCOMPARE(r0["expected_model_state_bytes_per_param"].get<double>(), formula);
    QVERIFY(std::abs(r0["model_state_bytes_per_param"].get<double>() -
                     r0["expected_model_state_bytes_per_param_slice"].get<double>()) < 0.01);
  }

  // Activation bytes per layer, measured on the ledger (what a block's forward
  // leaves booked), against Korthikanti et al.'s formula adapted to the block
  // (analysis/formulas.h), within 10%, for each attention and checkpointing
  // mode, with and without TP, on CPU ranks, the meta backend and published
  // shapes (grouped K/V, SwiGLU, RMSNorm; GPT-2's with dropout's masks, as
  // validate's GPT-3 rows keep them); the summary carries both.
  void activationsPerLayer_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("backend");
    QTest::addColumn<int>("attention");
    QTest::addColumn<int>("checkpointing");
    QTest::addColumn<int>("tp");
    for (const char* m : {"gpt", "llama2-70b", "gpt2-124m+dropout"})
      for (const char* b : {"cpu", "meta"}) {
        if (QString(m) != "gpt" && QString(b) == "cpu") continue;  // published shapes are meta-only
        for (const Attention a : {Attention::Naive, Attention::Flash})
          for (const Checkpointing k : {Checkpointing::None, Checkpointing::Selective, Checkpointing::Full})
            for (int t : {1, 2})
              QTest::addRow("%s %s %s %s tp=%d", m, b, attentionName(a).c_str(), checkpointingName(k).c_str(), t)
                  << QString(m) << QString(b) << int(a) << int(k) << t;
      }
  }

  void activationsPerLayer() {
#ifdef SHARDSCOPE_UNDER_SANITIZER
    QSKIP("the formula's cases at every shape: the ledger code the other tests run under the sanitizer");
#endif
    QFETCH(QString, model);
    QFETCH(QString, backend);
    QFETCH(int, attention);
    QFETCH(int, checkpointing);
    QFETCH(int, tp);
    RunConfig c = gptConfig("ddp", 2, tp);
    if (model != "gpt") {
      const bool dropout = model.endsWith("+dropout");
      c.model = presetShape(model.section('+', 0, 0).toStdString());
      c.model.dropout = dropout;
      c.batch = 2;
    }
    c.model.attention = static_cast<Attention>(attention);
    c.model.checkpointing = static_cast<Checkpointing>(checkpointing);
    c.steps = 1;
    if (backend == "meta") {
      c.backend = Backend::Meta;
      c.clock = ClockKind::Modeled;
    }
    const RunResult r = Run(c).execute();
    const double formula = expectedActivationBytesPerLayer(c);
    const double sbh = double(c.model.seq) * (c.batch / c.dataParallelSize()) * c.model.hidden;
    if (c.model.checkpointing == Checkpointing::Full) QCOMPARE(formula, 2.0 * sbh);
    for (const RankResult& rank : r.ranks) {
      const double measured = double(rank.activation_bytes_per_layer);
      QVERIFY2(std::abs(measured - formula) <= 0.10 * formula,
               qPrintable(QString("rank %1: %2 B per layer booked, formula %3 B").arg(rank.rank).arg(measured).arg(formula)));
    }
    std::ostringstream out;
    writeSummaryJson(r, out);
    const auto j = nlohmann::json::parse(out.str());
    QCOMPARE(j["per_rank"][0]["activation_bytes_per_layer"].get<int64_t>(), r.ranks[0].activation_bytes_per_layer);
    QCOMPARE(j["per_rank"][0]["expected_activation_bytes_per_layer"].get<int64_t>(), static_cast<int64_t>(formula));
  }

  // Each mode keeps less than the one before it; the formula's TP split is the
  // measured one, and the residual MLP's summary has no such keys.
  void activationModesOrder() {
    const auto perLayer = [](Attention a, Checkpointing k, int tp) {
      RunConfig c = gptConfig("ddp", tp, tp);  // one data-parallel rank: the same samples per rank
      c.model.attention = a, c.model.checkpointing = k;
      c.backend = Backend::Meta, c.clock = ClockKind::Modeled, c.steps = 1;
      return Run(c).execute().ranks[0].activation_bytes_per_layer;
    };
    const int64_t naive = perLayer(Attention::Naive, Checkpointing::None, 1);
    const int64_t flash = perLayer(Attention::Flash, Checkpointing::None, 1);
    const int64_t selective = perLayer(Attention::Flash, Checkpointing::Selective, 1);
    const int64_t full = perLayer(Attention::Flash, Checkpointing::Full, 1);
    QVERIFY(naive > flash && flash > selective && selective > full && full > 0);
    QVERIFY(perLayer(Attention::Naive, Checkpointing::None, 2) < naive);
    QCOMPARE(perLayer(Attention::Flash, Checkpointing::Full, 2), full);  // the input stays whole under TP
    // On the modeled clock full checkpointing pays a recomputed forward per
    // block: a longer step and a lower MFU, the hardware FLOPs' utilisation kept.
    const auto modeled = [](Checkpointing k) {
      RunConfig c = gptConfig("ddp", 1, 1);
      c.model = presetShape("llama2-7b");
      c.model.layers = 4;
      c.model.checkpointing = k;
      c.batch = 1, c.backend = Backend::Meta, c.clock = ClockKind::Modeled, c.steps = 1;
      return Run(c).execute();
    };
    const RunResult none = modeled(Checkpointing::None), recomputed = modeled(Checkpointing::Full);
    QVERIFY(recomputed.last_step.front().wall_ns > none.last_step.front().wall_ns);
    QVERIFY(recomputed.mfu() < 0.9 * none.mfu());
    QVERIFY2(std::abs(recomputed.hfu() - none.mfu()) < 0.1 * none.mfu(),
             qPrintable(QString("hfu %1 vs mfu %2 without recompute").arg(recomputed.hfu()).arg(none.mfu())));
    RunConfig mlp = mlpConfig("ddp", 2, 1);
    mlp.steps = 1;
    std::ostringstream out;
    writeSummaryJson(Run(mlp).execute(), out);
    QVERIFY(!nlohmann::json::parse(out.str())["per_rank"][0].contains("activation_bytes_per_layer"));
  }

  // The meta backend books what the CPU run allocates and sends what it sends.
  void metaMatchesCpu() {
    RunConfig c = gptConfig("zero3", 4, 2);
    c.steps = 1;
    c.clock = ClockKind::Modeled;
    const RunResult cpu = Run(c).execute();
    c.backend = Backend::Meta;
    const RunResult meta = Run(c).execute();
    for (size_t r = 0; r < cpu.ranks.size(); ++r) {
      QCOMPARE(meta.ranks[r].ledger.model_state_peak, cpu.ranks[r].ledger.model_state_peak);
      QCOMPARE(meta.ranks[r].tp_comm_bytes.all_reduce, cpu.ranks[r].tp_comm_bytes.all_reduce);
      QCOMPARE(meta.ranks[r].tp_comm_bytes.all_gather, cpu.ranks[r].tp_comm_bytes.all_gather);
      QCOMPARE(meta.ranks[r].comm_bytes.all_gather, cpu.ranks[r].comm_bytes.all_gather);
      QCOMPARE(meta.ranks[r].activation_bytes_per_layer, cpu.ranks[r].activation_bytes_per_layer);
    }
  }

  // TP groups are consecutive ranks; the strategy's collectives run along the
  // data-parallel axis; TP all-reduces sit on the compute lane between the
  // pieces of the op that issued them, and the modeled clock counts them exposed.
  void groupsLanesAndClock() {
    RunConfig c = gptConfig("zero3", 4, 2);
    c.clock = ClockKind::Modeled;
    c.steps = 2;
    Run run(c);
    const RunResult r = run.execute();
    const RunTrace t = run.trace();
    std::map<std::string, int> id;
    for (const CommGroup& g : t.groups) id[g.name] = g.id;
    QVERIFY(id.count("tp0") && id.count("tp1") && id.count("dp0.gather") && id.count("dp1.reduce"));
    QCOMPARE(t.groups[size_t(id["tp1"])].ranks, (std::vector<int>{2, 3}));
    QCOMPARE(t.groups[size_t(id["dp1.gather"])].ranks, (std::vector<int>{1, 3}));
    for (int rank = 0; rank < 4; ++rank) {
      std::set<int> tp_groups, gather_groups;
      int64_t tp_ns = 0;
      std::vector<std::pair<int64_t, int64_t>> compute;
      for (const Event& e : t.events[size_t(rank)]) {
        if (e.step != c.steps - 1) continue;
        if (e.kind == EventKind::AllReduce) {
          QCOMPARE(e.lane, Lane::Compute);
          QVERIFY(e.block >= 0);
          tp_groups.insert(e.group);
          tp_ns += e.end_ns - e.begin_ns;
        }
        if (e.kind == EventKind::AllGather && e.lane == Lane::Gather) gather_groups.insert(e.group);
        if ((e.kind == EventKind::Forward || e.kind == EventKind::Backward) && e.lane == Lane::Compute)
          compute.emplace_back(e.begin_ns, e.end_ns);
      }
      QCOMPARE(tp_groups, (std::set<int>{id[rank < 2 ? "tp0" : "tp1"]}));
      QCOMPARE(gather_groups, (std::set<int>{id[rank % 2 == 0 ? "dp0.gather" : "dp1.gather"]}));
      // No compute piece overlaps a TP all-reduce: they block the compute path.
      for (const Event& e : t.events[size_t(rank)]) {
        if (e.step != c.steps - 1 || e.kind != EventKind::AllReduce) continue;
        for (const auto& [b, en] : compute) QVERIFY(en <= e.begin_ns || b >= e.end_ns);
      }
      QVERIFY(tp_ns > 0);
      const StepMetrics& m = r.last_step[size_t(rank)];
      QVERIFY2(m.exposed_comm_ns >= tp_ns, qPrintable(QString("exposed %1 ns < TP %2 ns").arg(m.exposed_comm_ns).arg(tp_ns)));
    }
  }

  // A TP run's trace reopens with its config, so the reader derives the same
  // mesh, and each TP all-reduce keeps its group, block and lane.
  void traceReopens() {
    RunConfig c = mlpConfig("hsdp", 8, 2);
    c.steps = 1;
    Run run(c);
    run.execute();
    const RunTrace t = run.trace();
    std::ostringstream os;
    writeChromeTrace(t, os);
    const RunTrace back = readChromeTrace(os.str(), "tp");
    QVERIFY(back.config.has_value());
    QCOMPARE(back.config->tp, 2);
    QCOMPARE(back.groups.size(), t.groups.size());
    for (size_t i = 0; i < t.groups.size(); ++i) {
      QCOMPARE(back.groups[i].name, t.groups[i].name);
      QCOMPARE(back.groups[i].ranks, t.groups[i].ranks);
    }
    int tp_events = 0;
    for (const Event& e : back.events[3]) {
      if (e.kind != EventKind::AllReduce || e.lane != Lane::Compute) continue;
      ++tp_events;
      QCOMPARE(back.groups[size_t(e.group)].name, std::string("tp1"));
      QVERIFY(e.block >= 1 && e.block <= c.model.layers);
    }
    QCOMPARE(tp_events, 2 * c.model.layers);  // one forward and one backward per block
  }

  // --tp 1 is the run without it: the same groups, flags and config JSON.
  void tpOneChangesNothing() {
    RunConfig c = mlpConfig("zero3", 4, 1);
    const auto groups = meshGroups(c);
    const auto before = meshGroups(c.ranks, c.shardGroupSize());
    QCOMPARE(groups.size(), before.size());
    for (size_t i = 0; i < groups.size(); ++i) QCOMPARE(groups[i].name, before[i].name);
    for (const std::string& a : runArgs(c)) QVERIFY(a != "--tp");
    QVERIFY(configJson(c).find("\"tp\"") == std::string::npos);
    c.tp = 2;
    QVERIFY(configJson(c).find("\"tp\":2") != std::string::npos);
    QCOMPARE(parseRunArgs(runArgs(c)).tp, 2);
  }

  void badInputs() {
    RunConfig c = mlpConfig("ddp", 4, 3);
    QVERIFY2(validationError(c).contains("--tp 3 must divide --ranks 4"), qPrintable(validationError(c)));
    c = gptConfig("ddp", 4, 4);
    c.model.heads = 2;
    QVERIFY2(validationError(c).contains("must divide --heads 2"), qPrintable(validationError(c)));
    c = mlpConfig("zero3", 4, 2);
    c.batch = 7;
    QVERIFY2(validationError(c).contains("multiple of the data-parallel ranks --ranks/(--tp x --pp) = 2"),
             qPrintable(validationError(c)));
    c.batch = 8;
    QVERIFY(validationError(c).isEmpty());
    c = mlpConfig("hsdp", 8, 2);
    c.shard_group = 3;
    QVERIFY2(validationError(c).contains("--shard-group 3 must divide the data-parallel ranks --ranks/(--tp x --pp) = 4"),
             qPrintable(validationError(c)));
    c = mlpConfig("ddp", 2, 2);
    c.backend = Backend::CudaEmulated;
    QVERIFY2(validationError(c).contains("--tp applies to --backend cpu or meta"), qPrintable(validationError(c)));
    try {
      parseRunArgs({"--tp", "0"});
      QFAIL("--tp 0 was accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find("--tp must be in 1..4") != std::string::npos, e.what());
    }
  }

  // Where a TP rank's slice sits in the full model: the qkv rows of its heads,
  // the proj columns, the vocabulary rows; slice then unslice gives the model back.
  void layoutRoundTrip() {
    RunConfig c = gptConfig("ddp", 2, 2);
    const ModelSpec full(c.model), slice(c.model, 2);
    std::vector<float> model(size_t(full.numParams()));
    for (size_t i = 0; i < model.size(); ++i) model[i] = float(i);
    std::vector<float> back(model.size(), -1.0f);
    for (int t = 0; t < 2; ++t) {
      const TensorParallelLayout layout(full, slice, t);
      std::vector<float> part(size_t(slice.numParams()));
      layout.slice(model.data(), part.data());
      layout.unslice(part.data(), back.data(), [](int64_t) { return true; });
      // qkv: rank t's q rows are rows [t·D/2, (t+1)·D/2) of q, its k rows the same rows of k.
      const ParamInfo& q = full.params()[size_t(full.paramIndex("block0.attn.qkv.weight"))];
      const ParamInfo& ql = slice.params()[size_t(slice.paramIndex("block0.attn.qkv.weight"))];
      const int D = c.model.hidden, Dl = D / 2;
      QCOMPARE(part[size_t(ql.offset)], model[size_t(q.offset + int64_t(t) * Dl * D)]);
      QCOMPARE(part[size_t(ql.offset + int64_t(Dl) * D)], model[size_t(q.offset + int64_t(D + t * Dl) * D)]);
      const ParamInfo& p = full.params()[size_t(full.paramIndex("block1.attn.proj.weight"))];
      const ParamInfo& pl = slice.params()[size_t(slice.paramIndex("block1.attn.proj.weight"))];
      QCOMPARE(part[size_t(pl.offset + Dl)], model[size_t(p.offset + D + t * Dl)]);  // row 1, first column of the slice
    }
    QVERIFY(back == model);
  }
};

QTEST_APPLESS_MAIN(TestTensorParallel)
#include "test_tensor_parallel.moc"
