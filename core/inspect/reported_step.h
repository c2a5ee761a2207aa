// The one step a run's figures describe — the Runs table, the communication
// view and compare mode report the same step and the same hidden share: the
// last step every rank completed, leaving out an imported trace's last one when
// it has two or more (a profiler's last step is often cut short; HTA does so).
#pragma once

#include <set>
#include <vector>

#include "trace/run_trace.h"
#include "trace/step_metrics.h"

namespace shardscope {

// completed_per_rank: the steps each rank ended (StepEnd seen). -1: none every rank completed.
// Of an imported job (imported != nullptr) only the ranks whose files were
// read count: one file of rank 3 is a job whose ranks 0-2 are not in view.
int reportedStep(const std::vector<std::set<int>>& completed_per_rank, const ImportedSource* imported);

// The reported step's per-rank timing (computeStepMetrics; an imported
// trace's GPU streams are its compute), sorted by rank; its hidden share is
// hiddenSharePercent(ranks) (trace/step_metrics.h).
struct ReportedStep {
  int step = -1;
  std::vector<StepMetrics> ranks;
};
ReportedStep reportedStepMetrics(const std::vector<std::vector<Event>>& events_per_rank, const ImportedSource* imported);

}  // namespace shardscope
