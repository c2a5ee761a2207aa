// GPipe, 1F1B and interleaved 1F1B side by side for one config: each runs on
// the meta backend under the modeled clock, and its row holds what the run
// measured (step time, the bubble from its events, each stage's peak memory
// from its ledger) beside the capacity plan's and the formula's figures for
// the same config, so a reader sees the trade and that plan and run agree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/parallel_capacity.h"
#include "config/run_config.h"

namespace shardscope {

struct ScheduleStageRow {
  int stage = 0;
  int rank = 0;                       // the rank measured
  int in_flight = 0;                  // the schedule's microbatch-chunks in flight
  int64_t activation_planned = 0;     // the plan's peak activations
  int64_t activation_measured = 0;    // the ledger's activation peak
  int64_t peak_planned = 0;           // model state + activations + buffers
  int64_t peak_measured = 0;          // the ledger's total peak
};

struct ScheduleRow {
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int virtual_stages = 1;
  std::string refused;                // the settings' message when this schedule cannot run the config
  double step_ms = 0;                 // the run's step, modeled clock (the slowest rank)
  double bubble_measured = 0;         // RunResult::pipeline.bubble
  double bubble_formula = 0;          // (S − 1)/(V·M + S − 1)
  int most_loaded = 0;                // the stage with the highest measured peak
  std::vector<ScheduleStageRow> stages;
  std::optional<ParallelPlan> plan;
};

struct ScheduleComparison {
  RunConfig config;                   // the config compared (its schedule: 1F1B's row)
  std::vector<ScheduleRow> rows;      // gpipe, 1f1b, interleaved
};

// `config`: a validated pipelined config of a token model (pp >= 2); runs it
// three times on the meta backend, modeled clock, one step. The interleaved
// row uses config.virtual_stages (2 when unset). Throws ConfigError without
// stages, RunError when a run fails.
ScheduleComparison compareSchedules(const RunConfig& config, double capacity_bytes);

}  // namespace shardscope
