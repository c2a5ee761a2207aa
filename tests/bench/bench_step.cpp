// One training step per strategy at P ranks (default 4) on the default model
// (8 blocks, hidden 512, 16.9M params): wall time, bytes each rank sent, peak
// memory, and how much of the step waited on communication — all read back
// from the run's own ledger and events. zero3 runs with and without prefetch.
// Usage: bench_step [--ranks P] [--steps S] [--only NAME]  (step 0 is warm-up)
#include <algorithm>
#include <cstdio>
#include <cstring>
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

}  // namespace

int main(int argc, char** argv) {
  const bench::BenchFigures figures(argc, argv);
  int ranks = 4, steps = 4;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
  }
  const std::vector<Variant> variants = {
      {"ddp", Strategy::Ddp, Prefetch::Both},     {"zero1", Strategy::Zero1, Prefetch::Both},
      {"zero2", Strategy::Zero2, Prefetch::Both}, {"zero3", Strategy::Zero3, Prefetch::Both},
      {"zero3 no-prefetch", Strategy::Zero3, Prefetch::None},
  };
  std::printf("one training step, %d CPU ranks (threads), default model, global batch %d, mean of steps 1..%d\n",
              ranks, 8 * ranks, steps - 1);
  std::printf("%-18s %9s %14s %13s %13s %11s %10s\n", "strategy", "step(ms)", "sent/rank(MB)",
              "model st(MiB)", "total pk(MiB)", "exposed(%)", "wait(%)");
  for (const Variant& v : variants) {
    if (!only.empty() && only != v.label) continue;
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
    std::printf("%-18s %9.1f %14.1f %13.1f %13.1f %11.1f %10.1f\n", v.label, wall / counted / 1e6, sent / 1e6,
                r0.ledger.model_state_peak / 1048576.0, r0.ledger.total_peak / 1048576.0, 100.0 * exposed / wall,
                100.0 * wait / wall);
    std::string key = std::string(v.label) + "_step";
    std::replace(key.begin(), key.end(), ' ', '_');
    figures.add(key.c_str(), wall / counted / 1e6, "ms");
  }
  return 0;
}
