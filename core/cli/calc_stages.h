// `shardscope-cli calc` with a model's shape and a TP × PP mesh: the
// per-stage capacity plan (analysis/parallel_capacity.h), the search for the
// smallest TP × PP that fits (--fit), and GPipe / 1F1B / interleaved side by
// side from meta runs (--compare-schedules). The model and mesh flags are
// `run`'s own (one settings table, one set of messages); calc adds
// --capacity-gb, --micro-batch, --fit and --compare-schedules.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/parallel_capacity.h"
#include "analysis/schedule_comparison.h"

namespace shardscope {

// Whether calc's flags ask for a stage plan (a mesh or a shape flag, --fit,
// --compare-schedules, --model gpt) rather than the model-state table.
bool calcWantsStagePlan(const std::vector<std::string>& args);

struct CalcStagesAnswer {
  std::optional<ParallelPlan> plan;             // the plan asked for, or the fit's answer
  std::optional<FitSearch> fit;                 // --fit
  std::optional<ScheduleComparison> schedules;  // --compare-schedules
  std::string text;                             // the CLI's tables
  std::string json;                             // the CLI's --json object
};

// args: calc's flags without --json/--help. Throws ConfigError naming the flag.
CalcStagesAnswer answerCalcStages(const std::vector<std::string>& args);

// The usage lines of the stage-plan flags (calc --help's second part).
std::string calcStagesUsage();

}  // namespace shardscope
