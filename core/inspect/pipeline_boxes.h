// The pipeline schedule view's model: one step of a pipelined run as boxes,
// one per (stage, microbatch, pass, chunk) — the per-segment Forward/Backward
// spans (recompute and loss included) of one microbatch's pass through one of
// the stage's chunks merged — on each stage's representative rank (TP rank 0,
// data-parallel rank 0), the sends matched to their receives, each row's idle
// time and what its ledger and the schedule say about microbatches in flight.
// Times are the run's own clock. No widgets: the CLI and tests read it too.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "parallel/pipeline_schedule.h"
#include "parallel/pipeline_timing.h"

namespace shardscope {

class EventStore;

using NsSpan = std::pair<int64_t, int64_t>;  // [begin, end] ns since run start

struct PipelineBox {
  int stage = 0;
  PipelineAction action;        // pass, microbatch, global chunk (stage + S·k for its k-th chunk)
  int64_t begin_ns = 0;         // first span's begin
  int64_t end_ns = 0;           // last span's end
  int64_t busy_ns = 0;          // its spans' time (recompute and loss included)
  int first_segment = 0;        // the model segments it ran, [first, last]
  int last_segment = 0;
  std::vector<NsSpan> recompute;  // activation checkpointing's recompute spans inside it
};

// One transfer between stages: the send's begin on the sender's row to the
// matching receive's end on the receiver's row.
struct PipelineArrow {
  int from_stage = 0;
  int to_stage = 0;
  int microbatch = 0;
  bool gradient = false;  // a gradient going backward, else activations going forward
  int64_t send_ns = 0;
  int64_t recv_end_ns = 0;
  int64_t bytes = 0;
};

struct PipelineRow {
  int stage = 0;
  int rank = 0;                  // the representative rank drawn
  int first_rank = 0;            // the stage's ranks, [first, last] (contiguous in the mesh)
  int last_rank = 0;
  int64_t activation_peak_bytes = 0;  // the representative rank's ledger peak (whole run)
  int in_flight = 0;             // most microbatch-chunks between forward start and backward end, measured
  int schedule_in_flight = 0;    // the schedule's own count (PipelineScheduleOrder::maxInFlight)
  std::vector<NsSpan> idle;      // gaps between its boxes within the step's pipeline window
};

class PipelineBoxes {
 public:
  // Rebuilds from the store: step -1 takes the last step stage 0 ended (or
  // the last one begun, while a run is live). Empty without pipeline stages.
  void build(const EventStore& store, int step = -1);

  bool empty() const { return m_rows.empty(); }
  int step() const { return m_step; }
  int stages() const { return static_cast<int>(m_rows.size()); }
  int microbatches() const { return m_microbatches; }
  int virtualStages() const { return m_virtual; }
  PipelineSchedule schedule() const { return m_schedule; }
  // The step's pipeline window: first forward to last backward on any stage.
  int64_t windowBegin() const { return m_window.first; }
  int64_t windowEnd() const { return m_window.second; }
  const std::vector<PipelineRow>& rows() const { return m_rows; }
  const std::vector<PipelineBox>& boxes() const { return m_boxes; }  // by stage, then begin
  const std::vector<PipelineArrow>& arrows() const { return m_arrows; }
  int sends() const { return m_sends; }  // the representative ranks' sends in the step (matched or not)
  // measurePipeline over the same events and step: the bubble beside the formula.
  const PipelineTiming& timing() const { return m_timing; }
  // The rows' idle spans as a share of the window, mean over stages: the bubble
  // between passes. Below timing().bubble when a pass's spans leave gaps on the
  // compute lane (tensor parallelism's collectives inside a stage's pass).
  double idleShare() const { return m_idleShare; }
  // "F3", or "F3.5" (interleaved: the global chunk too).
  std::string label(const PipelineBox& box) const { return actionText(box.action, m_virtual > 1); }

 private:
  int m_step = -1;
  int m_microbatches = 0;
  int m_virtual = 1;
  PipelineSchedule m_schedule = PipelineSchedule::OneFOneB;
  NsSpan m_window{0, 0};
  std::vector<PipelineRow> m_rows;
  std::vector<PipelineBox> m_boxes;
  std::vector<PipelineArrow> m_arrows;
  int m_sends = 0;
  PipelineTiming m_timing;
  double m_idleShare = 0;
};

}  // namespace shardscope
