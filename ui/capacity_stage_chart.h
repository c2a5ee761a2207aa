// The Capacity page's chart for a stage plan (calc with --pp): one stacked
// bar per pipeline stage — model states, activations in flight, the buffers
// the peak adds — against the capacity line, the most loaded stage's total
// labelled. Draws what core's plan computed (analysis/parallel_capacity.h).
#pragma once

class QCustomPlot;

namespace shardscope {

struct ParallelPlan;

// Clears `plot` and draws `plan`'s stages.
void drawStagePlan(QCustomPlot* plot, const ParallelPlan& plan);

}  // namespace shardscope
