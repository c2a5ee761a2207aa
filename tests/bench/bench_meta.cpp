// The meta backend at scale and the modeled clock's overhead.
//  1. llama2-70b, one zero3 step on 512 ranks, symmetric ranks simulated
//     once (the default), then every rank simulated (--replicate off): wall
//     time, peak RSS (the process's so far), events simulated per second.
//  2. The same small real CPU run on the measured and on the modeled clock:
//     the modeled clock's overhead on a real run (target under 5%).
// Usage: bench_meta [--ranks P]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/run.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

int main(int argc, char** argv) {
  int ranks = 512;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::stoi(argv[i + 1]);

  RunConfig meta;
  meta.backend = Backend::Meta;
  meta.clock = ClockKind::Modeled;
  meta.model = presetShape("llama2-70b");
  meta.strategy = Strategy::Zero3;
  meta.ranks = ranks;
  meta.batch = ranks;
  meta.steps = 1;
  for (bool replicate : {true, false}) {
    meta.replicate = replicate;
    auto t0 = Clock::now();
    Run run(meta);
    const RunResult r = run.execute();
    const double wall = seconds(t0);
    size_t events = 0;
    for (int k = 0; k < ranks; ++k) events += run.eventLog(k).publishedCount();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    int64_t step = 0;
    for (const StepMetrics& m : r.last_step) step = std::max(step, m.wall_ns);
    std::printf("llama2-70b (%lld params), zero3, %d ranks, meta backend, h100-sxm, %s:\n", (long long)r.params, ranks,
                replicate ? "symmetric ranks simulated once" : "every rank simulated");
    std::printf("  %d rank(s) simulated in %.2f s, peak RSS %.0f MiB, %zu events simulated (%.2f M events/s)\n",
                r.simulated_ranks, wall, usage.ru_maxrss / 1024.0, events, events / wall / 1e6);
    std::printf("  modeled step %.1f ms, MFU %.1f%%, model state %.3f bytes/param per rank\n", step / 1e6,
                100 * r.mfu(), double(r.ranks[0].ledger.model_state_peak) / double(r.params));
  }

  RunConfig real;  // CLI defaults: 4 ranks, 8 blocks, hidden 512
  real.steps = 4;
  double measured = 0, modeled = 0;
  for (int rep = 0; rep < 3; ++rep) {
    for (ClockKind clock : {ClockKind::Measured, ClockKind::Modeled}) {
      real.clock = clock;
      const auto t0 = Clock::now();
      Run(real).execute();
      (clock == ClockKind::Measured ? measured : modeled) += seconds(t0);
    }
  }
  std::printf("real CPU run (ddp, 4 ranks, 4 steps), mean of 3: measured clock %.3f s, modeled clock %.3f s "
              "(overhead %+.1f%%)\n",
              measured / 3, modeled / 3, 100.0 * (modeled - measured) / measured);
  return 0;
}
