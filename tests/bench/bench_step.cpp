// One training step per strategy at P ranks (default 4) on the default model
// (8 blocks, hidden 512, 16.9M params): wall time, bytes each rank sent, peak
// memory, and how much of the step waited on communication — all read back
// from the run's own ledger and events. zero3 runs with and without prefetch.
// Usage: bench_step [--ranks P] [--steps S] [--only NAME] [--torch-peer SCRIPT]
// (step 0 is warm-up). --torch-peer times the ddp step beside PyTorch's DDP of
// the same model (tests/bench/torch_ddp_step.py, run by /usr/bin/python3):
// three rounds, each ShardScope's step then PyTorch's, so both share the
// machine's load; the figures are the medians.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "trace/step_metrics.h"
#include "engine/run.h"
#include "bench_figures.h"

using namespace shardscope;

namespace {

struct Variant {
  const char* label;
  Strategy strategy;
  Prefetch prefetch;
};

struct StepRow {
  double step_ms = 0, sent_mb = 0, model_state_mib = 0, total_peak_mib = 0, exposed_pct = 0, wait_pct = 0;
};

StepRow measure(const Variant& v, int ranks, int steps) {
  RunConfig c;
  c.strategy = v.strategy;
  c.ranks = ranks;
  c.batch = 8 * ranks;
  c.steps = steps;
  if (c.isSharded()) c.prefetch = v.prefetch;
  Run run(c);
  const RunResult r = run.execute();
  double wall = 0, exposed = 0, wait = 0;
  int counted = 0;
  for (const StepMetrics& m : computeStepMetrics(run.trace().events)) {
    if (m.step == 0) continue;
    wall += m.wall_ns;
    exposed += m.exposed_comm_ns;
    wait += m.wait_ns;
    ++counted;
  }
  const RankResult& r0 = r.ranks[0];
  const double sent = double(r0.comm_bytes.all_reduce + r0.comm_bytes.reduce_scatter + r0.comm_bytes.all_gather);
  return {wall / counted / 1e6,
          sent / 1e6,
          r0.ledger.model_state_peak / 1048576.0,
          r0.ledger.total_peak / 1048576.0,
          100.0 * exposed / wall,
          100.0 * wait / wall};
}

// PyTorch's step in ms from the peer script's "figure torch_ddp_step MS ms"; < 0 when it failed.
double torchStepMs(const std::string& script, int ranks, int steps) {
  const std::string command = "/usr/bin/python3 " + script + " --ranks " + std::to_string(ranks) + " --steps " +
                              std::to_string(steps) + " --figures 2>&1";
  const std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return -1;
  double ms = -1;
  char line[512];
  while (std::fgets(line, sizeof line, pipe.get())) {
    if (std::sscanf(line, "figure torch_ddp_step %lf ms", &ms) == 1) continue;
    std::fputs(line, stderr);  // the peer's own words, or why it failed
  }
  return ms;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const bench::BenchFigures figures(argc, argv);
  int ranks = 4, steps = 4;
  std::string only, torch_peer;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--torch-peer")) torch_peer = argv[i + 1];
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
  }
  const std::vector<Variant> variants = {
      {"ddp", Strategy::Ddp, Prefetch::Both},     {"zero1", Strategy::Zero1, Prefetch::Both},
      {"zero2", Strategy::Zero2, Prefetch::Both}, {"zero3", Strategy::Zero3, Prefetch::Both},
      {"zero3 no-prefetch", Strategy::Zero3, Prefetch::None},
  };
  if (!torch_peer.empty()) {
    // Interleaved: ShardScope's ddp step, then PyTorch's, three times.
    std::printf("ddp step against PyTorch 1.13 DDP/Gloo (its default fp32 gradients; ours are bf16), %d CPU ranks, global batch %d\n", ranks,
                8 * ranks);
    std::vector<double> ours, theirs;
    for (int round = 0; round < 3; ++round) {
      ours.push_back(measure(variants[0], ranks, steps).step_ms);
      theirs.push_back(torchStepMs(torch_peer, ranks, steps));
      std::printf("round %d: ShardScope %.1f ms, PyTorch %.1f ms\n", round + 1, ours.back(), theirs.back());
      if (theirs.back() < 0) {
        std::fprintf(stderr, "bench_step: the PyTorch peer failed (%s)\n", torch_peer.c_str());
        return 1;
      }
    }
    const double a = median(ours), b = median(theirs);
    std::printf("median: ShardScope %.1f ms, PyTorch %.1f ms: %.2fx PyTorch's step\n", a, b, a / b);
    figures.add("ddp_step_beside_torch", a, "ms");
    figures.add("torch_ddp_step", b, "ms");
    return 0;
  }
  std::printf("one training step, %d CPU ranks (threads), default model, global batch %d, mean of steps 1..%d\n",
              ranks, 8 * ranks, steps - 1);
  std::printf("%-18s %9s %14s %13s %13s %11s %10s\n", "strategy", "step(ms)", "sent/rank(MB)",
              "model st(MiB)", "total pk(MiB)", "exposed(%)", "wait(%)");
  for (const Variant& v : variants) {
    if (!only.empty() && only != v.label) continue;
    const StepRow row = measure(v, ranks, steps);
    std::printf("%-18s %9.1f %14.1f %13.1f %13.1f %11.1f %10.1f\n", v.label, row.step_ms, row.sent_mb,
                row.model_state_mib, row.total_peak_mib, row.exposed_pct, row.wait_pct);
    std::string key = std::string(v.label) + "_step";
    std::replace(key.begin(), key.end(), ' ', '_');
    figures.add(key.c_str(), row.step_ms, "ms");
  }
  return 0;
}
