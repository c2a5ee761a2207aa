// `validate --local`: a few small runs on this machine's CPU ranks, each timed
// twice: the measured clock (real steps) and the modeled clock under the
// calibrated this-cpu profile (model/cpu_calibration.h), so the lessons'
// CPU timelines are checked as the published rows check the GPU profiles.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.h"

namespace shardscope {

struct LocalCheck {
  std::string name;     // what ran, in words
  RunConfig config;     // its measured run (the modeled one is the same on meta, profile this-cpu)
  double measured_s = 0;  // last step, slowest rank
  double modeled_s = 0;
  double errorPercent() const { return 100.0 * (modeled_s - measured_s) / measured_s; }
};

// The configurations --local runs (a few seconds in all).
std::vector<LocalCheck> localChecks();
// Runs each twice and fills measured_s and modeled_s.
void runLocalChecks(std::vector<LocalCheck>& checks);

}  // namespace shardscope
