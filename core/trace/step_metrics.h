// Per-rank, per-step timing read back from the events: step wall time, compute
// and communication busy time, and exposed communication — communication time
// not overlapped by the rank's compute (Holistic Trace Analysis' definition).
#pragma once

#include <vector>

#include "trace/event.h"
#include "trace/run_trace.h"

namespace shardscope {

struct StepMetrics {
  int rank = 0;
  int step = 0;
  int64_t wall_ns = 0;          // StepBegin -> StepEnd
  int64_t compute_ns = 0;       // union of compute-lane work (forward, backward, optimizer, loss)
  int64_t comm_ns = 0;          // union of collectives on any lane
  int64_t exposed_comm_ns = 0;  // comm_ns minus its overlap with compute
  int64_t wait_ns = 0;          // compute lane blocked on communication (Wait events)
  double overlapPercent() const;  // hiddenCommPercent of this rank's step
};

// The overlap share: the part of communication time hidden under compute, in %,
// 100 · (comm − exposed) / comm (HTA's comm/comp overlap: merged communication
// that merged compute covers, over merged communication). 100 without
// communication: nothing was exposed. The one formula every figure uses.
double hiddenCommPercent(int64_t comm_ns, int64_t exposed_comm_ns);

// The same over all ranks of one step: 100 · Σ(comm − exposed) / Σ comm
// (the Runs table's "comm hidden", the summary's last_step.overlap_percent).
double hiddenSharePercent(const std::vector<StepMetrics>& ranks);

// One entry per (rank, step) that has both StepBegin and StepEnd.
// imported: an imported trace's tracks, whose GPU streams' kernels are its compute.
std::vector<StepMetrics> computeStepMetrics(const std::vector<std::vector<Event>>& events_per_rank,
                                           const ImportedSource* imported = nullptr);

}  // namespace shardscope
