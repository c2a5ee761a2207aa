// `validate --local`: a few small runs on this machine's CPU ranks, each timed
// twice: the measured clock (real steps) and the modeled clock under the
// calibrated this-cpu profile (model/cpu_calibration.h), so the lessons'
// CPU timelines are checked as the published rows check the GPU profiles.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.h"
#include "model/cpu_calibration.h"

namespace shardscope {

struct LocalCheck {
  std::string name;     // what ran, in words
  RunConfig config;     // its measured run (the modeled one is the same on meta, profile this-cpu)
  double measured_s = 0;  // last step, slowest rank: the median of kLocalMeasuredRuns runs
  double modeled_s = 0;
  double errorPercent() const { return 100.0 * (modeled_s - measured_s) / measured_s; }
};

// Measured runs per check: one run slowed by the machine is not the figure.
inline constexpr int kLocalMeasuredRuns = 3;

// The configurations --local runs (a few seconds in all).
std::vector<LocalCheck> localChecks();
// Runs each on the measured clock (kLocalMeasuredRuns times) and once on the
// modeled clock under `profile` (a name or a .json path; by default the
// calibrated this-cpu), and fills measured_s and modeled_s.
void runLocalChecks(std::vector<LocalCheck>& checks, const std::string& profile = kThisCpuProfile);

}  // namespace shardscope
