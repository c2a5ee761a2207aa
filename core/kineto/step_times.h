// Profiler step durations across ranks (`analyze`'s step_times): each rank's
// ProfilerStep#N spans, every one of them (not HTA's rule that leaves the last
// step out), and per step number the spread across the ranks that have it:
// min, max, median (the mean of the two middle values for an even count) and
// the slowest rank (ties: the lowest rank). The slowest of a step is counted
// only when two or more ranks have the step.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <vector>

#include "kineto/trace_set.h"

namespace shardscope::kineto {

struct RankStep {
  int64_t number = 0;  // N of ProfilerStep#N
  int64_t dur_ns = 0;
};

struct RankStepTimes {
  int rank = -1;
  std::vector<RankStep> steps;  // by start time
  int64_t slowest_steps = 0;    // steps (of two or more ranks) where this rank was the slowest
};

struct StepSpread {
  int64_t number = 0;
  int ranks = 0;  // ranks with this step
  int64_t min_ns = 0, max_ns = 0;
  double median_ns = 0;
  int slowest_rank = -1;  // -1 when only one rank has the step
};

struct StepTimes {
  std::vector<RankStepTimes> ranks;  // by rank
  std::vector<StepSpread> steps;     // by step number
};

StepTimes computeStepTimes(const TraceSet& set);

void printStepTimesText(const StepTimes& s, std::ostream& out);
// The value of the "step_times" key.
void writeStepTimesJson(const StepTimes& s, std::ostream& out);

}  // namespace shardscope::kineto
