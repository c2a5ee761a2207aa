// The rule of thumb for tensor parallelism (TP in the node, FSDP across), on the
// modeled clock (meta backend, so the published shapes fit):
//  - TP is competitive inside an NVLink node: llama2-7b on 16 H100s in 2 nodes,
//    TP 8 (in-node) x FSDP 2 against FSDP 16, and TP 16 (across the nodes);
//  - across a slow interconnect FSDP's large messages beat TP's per-layer ones;
//  - for the largest models compose them: llama2-70b, TP 8 x FSDP 64 on 512
//    ranks, simulated in seconds, with the memory calc predicts, faster than
//    FSDP over all 512.
// Measured (h100-sxm, 1 step): FSDP 16 776 ms, TP 8 x FSDP 2 466 ms, TP 16
// 2963 ms (6.4x TP 8); cluster-25gbe, 8 ranks: FSDP 11.4 s, TP 8 20.6 s (1.8x);
// llama2-70b on 512: TP 8 x FSDP 64 3.77 s, FSDP 512 9.03 s (2.4x). The
// thresholds below leave room around those figures.
#include <QtTest>

#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/calc_command.h"
#include "engine/run.h"
#include "trace/run_trace.h"

using namespace shardscope;

namespace {

RunConfig metaRun(const std::string& model, const std::string& strategy, int ranks, int tp,
                  const std::string& profile = "h100-sxm") {
  RunConfig c = parseRunArgs({"--model", model, "--backend", "meta", "--strategy", strategy, "--ranks",
                              std::to_string(ranks), "--tp", std::to_string(tp), "--batch", std::to_string(ranks),
                              "--steps", "1", "--profile", profile});
  return c;
}

int64_t stepNs(const RunResult& r) {
  int64_t step = 0;
  for (const StepMetrics& m : r.last_step) step = std::max(step, m.wall_ns);
  return step;
}

}  // namespace

class TestTpLessons : public QObject {
  Q_OBJECT

 private slots:
  void tensorParallelBelongsInsideTheNode() {
    Run tp8(metaRun("llama2-7b", "zero3", 16, 8));
    const RunResult in_node = tp8.execute();
    const RunResult fsdp = Run(metaRun("llama2-7b", "zero3", 16, 1)).execute();
    Run tp16(metaRun("llama2-7b", "ddp", 16, 16));
    const RunResult across = tp16.execute();
    // The TP groups' links: 8 consecutive ranks share a node of h100-sxm, 16 do not.
    for (const CommGroup& g : tp8.trace().groups)
      if (g.name.starts_with("tp")) QCOMPARE(g.link, LinkLevel::IntraNode);
    for (const CommGroup& g : tp16.trace().groups)
      if (g.name.starts_with("tp")) QCOMPARE(g.link, LinkLevel::InterNode);
    const double competitive = double(stepNs(in_node)) / double(stepNs(fsdp));
    const double slow = double(stepNs(across)) / double(stepNs(in_node));
    QVERIFY2(competitive <= 1.25, qPrintable(QString("TP 8 x FSDP 2 takes %1x FSDP 16's step").arg(competitive)));
    QVERIFY2(slow >= 3.0, qPrintable(QString("TP 16 across nodes takes only %1x TP 8's step").arg(slow)));
  }

  // cluster-25gbe puts every rank on its own node: TP's two all-reduces of the
  // activations per layer cost more there than FSDP's per-unit gathers.
  void slowInterconnectFavoursFsdp() {
    const RunResult fsdp = Run(metaRun("llama2-7b", "zero3", 8, 1, "cluster-25gbe")).execute();
    const RunResult tp = Run(metaRun("llama2-7b", "ddp", 8, 8, "cluster-25gbe")).execute();
    const double ratio = double(stepNs(tp)) / double(stepNs(fsdp));
    QVERIFY2(ratio >= 1.5, qPrintable(QString("TP 8 over 25 GbE takes only %1x FSDP 8's step").arg(ratio)));
  }

  void composedAtScale() {
    const RunConfig c = metaRun("llama2-70b", "zero3", 512, 8);
    const RunResult composed = Run(c).execute();
    QVERIFY2(composed.wall_seconds < 2.0, qPrintable(QString("%1 s").arg(composed.wall_seconds)));
    QCOMPARE(composed.simulated_ranks, 1);  // symmetric: rank 0 simulated once
    // Model state per rank is what `calc --model llama2-70b --ranks 512 --tp 8` says for zero3.
    std::ostringstream out, err;
    QCOMPARE(commandCalc({"--model", "llama2-70b", "--ranks", "512", "--tp", "8", "--json"}, out, err), 0);
    const auto calc = nlohmann::json::parse(out.str());
    QCOMPARE(calc["data_parallel_ranks"].get<int>(), 64);
    QCOMPARE(calc["slice_params"].get<int64_t>(), composed.slice_params);
    int64_t zero3 = 0;
    for (const auto& s : calc["stages"])
      if (s["stage"] == "zero3") zero3 = s["bytes_per_rank"].get<int64_t>();
    for (const RankResult& rank : composed.ranks) QCOMPARE(rank.ledger.model_state_peak, zero3);
    const RunResult fsdp = Run(metaRun("llama2-70b", "zero3", 512, 1)).execute();
    const double speedup = double(stepNs(fsdp)) / double(stepNs(composed));
    QVERIFY2(speedup >= 1.5, qPrintable(QString("TP 8 x FSDP 64 is only %1x faster than FSDP 512").arg(speedup)));
  }

  void calcTensorParallel() {
    std::ostringstream out, err;
    QCOMPARE(commandCalc({"--params", "70B", "--ranks", "64", "--tp", "8"}, out, err), 0);
    QVERIFY2(out.str().find("tensor parallel: 8 ranks") != std::string::npos, out.str().c_str());
    QVERIFY2(out.str().find("model: 70,000,000,000 params") != std::string::npos, out.str().c_str());
    // The first reference text's last row: a layer that does not fit one device is tensor parallelism's job.
    // llama2-70b's block is 856M params: 3.4 GB gathered with its grads, over 2 GB; T = 2 halves it.
    std::ostringstream layer, layer_err;
    QCOMPARE(commandCalc({"--model", "llama2-70b", "--ranks", "512", "--capacity-gb", "2", "--json"}, layer, layer_err), 0);
    const auto j = nlohmann::json::parse(layer.str());
    QCOMPARE(j["layer_fits"].get<bool>(), false);
    QCOMPARE(j["smallest_tp_for_layer"].get<int>(), 2);
    std::ostringstream text, text_err;
    QCOMPARE(commandCalc({"--model", "llama2-70b", "--ranks", "512", "--capacity-gb", "2"}, text, text_err), 0);
    QVERIFY2(text.str().find("a single layer does not fit 2 GB") != std::string::npos, text.str().c_str());
    QVERIFY2(text.str().find("--tp 2 is the smallest that fits") != std::string::npos, text.str().c_str());
    std::ostringstream bad_out, bad;
    QCOMPARE(commandCalc({"--params", "70B", "--ranks", "12", "--tp", "8"}, bad_out, bad), 2);
    QVERIFY2(bad.str().find("--tp 8 must divide --ranks 12") != std::string::npos, bad.str().c_str());
  }
};

QTEST_APPLESS_MAIN(TestTpLessons)
#include "test_tp_lessons.moc"
