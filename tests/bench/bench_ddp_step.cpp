// One DDP training step at P=4 on the default model (8 blocks, hidden 512,
// global batch 32): wall time per step, and how much of it the ranks spend
// waiting on communication, read back from the run's own events.
// Usage: bench_ddp_step [--ranks P] [--steps S]  (the first step is warm-up)
#include <cstdio>
#include <cstring>
#include <string>

#include "analysis/step_metrics.h"
#include "engine/run.h"

using namespace shardscope;

int main(int argc, char** argv) {
  RunConfig config;  // CLI defaults
  config.steps = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ranks")) config.ranks = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) config.steps = std::stoi(argv[i + 1]);
  }
  config.batch = 8 * config.ranks;
  Run run(config);
  const RunResult result = run.execute();
  const auto metrics = computeStepMetrics(run.trace().events);
  std::printf("DDP step, %d ranks (threads on this machine), %lld params, global batch %d\n",
              config.ranks, static_cast<long long>(result.params), config.batch);
  std::printf("%4s %4s %10s %11s %9s %12s %10s %9s\n", "step", "rank", "wall(ms)", "compute(ms)",
              "comm(ms)", "exposed(ms)", "wait(ms)", "overlap%");
  double wall = 0, wait = 0, exposed = 0;
  int counted = 0;
  for (const StepMetrics& m : metrics) {
    std::printf("%4d %4d %10.1f %11.1f %9.1f %12.1f %10.1f %9.1f\n", m.step, m.rank, m.wall_ns / 1e6,
                m.compute_ns / 1e6, m.comm_ns / 1e6, m.exposed_comm_ns / 1e6, m.wait_ns / 1e6,
                m.overlapPercent());
    if (m.step == 0) continue;  // warm-up
    wall += m.wall_ns;
    wait += m.wait_ns;
    exposed += m.exposed_comm_ns;
    ++counted;
  }
  if (counted) {
    std::printf("\nmean over steps 1..%d and ranks: step %.1f ms, optimizer waiting on all-reduce %.1f ms "
                "(%.1f%% of the step), exposed communication %.1f ms (%.1f%%)\n",
                config.steps - 1, wall / counted / 1e6, wait / counted / 1e6, 100.0 * wait / wall,
                exposed / counted / 1e6, 100.0 * exposed / wall);
  }
  return 0;
}
