// What a pipelined run's events show about its schedule (the engine keeps
// it in RunResult; views and the CLI read it there), per stage: the time
// its compute lane was busy with forward and backward passes within the
// step's pipeline window (first forward to last backward on any stage), the
// bubble that leaves (1 − busy / window), and the formula's bubble beside it,
// (S − 1)/(V·M + S − 1). Measured on whichever clock the run used.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trace/run_trace.h"

namespace shardscope {

struct StageTiming {
  std::string chunks;      // what the stage holds: "the embedding, blocks 0–3"
  int stage = 0;
  int rank = 0;            // the rank measured (TP rank 0, data-parallel rank 0 of the stage)
  int64_t busy_ns = 0;     // forward, backward (recompute included), loss and their TP collectives
  int64_t window_ns = 0;   // the step's pipeline window, the same for every stage
  double bubble = 0;       // 1 − busy / window
  int64_t wait_ns = 0;     // in receives, waiting for another stage
};

struct PipelineTiming {
  std::vector<StageTiming> stages;
  double bubble = 0;          // mean over stages: the measured bubble
  double formula_bubble = 0;  // (S − 1)/(V·M + S − 1)
};

// The rank a stage is measured and drawn on: TP rank 0, data-parallel rank 0
// (r = t + T·(d + D·s)); the stage's ranks are this one and the next P/S − 1.
inline int pipelineStageRank(const RunConfig& c, int stage) { return stage * (c.ranks / c.pp); }

// Empty stages when the trace is not of a pipelined run or lacks the step.
PipelineTiming measurePipeline(const RunTrace& trace, int step);
// The same over any holder of a run's events (the GUI's EventStore):
// events(rank) is rank's list, for ranks 0 .. ranks − 1.
PipelineTiming measurePipeline(const RunConfig& config, const std::function<const std::vector<Event>&(int)>& events,
                               int ranks, int step);

// The formula's bubble and microbatches in flight for a config (the schedule's own count).
double expectedPipelineBubble(const RunConfig& c);
int expectedMicrobatchesInFlight(const RunConfig& c, int stage);

}  // namespace shardscope
