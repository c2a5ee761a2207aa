// The step walkthrough of a pipelined run: the schedule's own lines (GPipe;
// 1F1B's warm-up, steady state and cool-down; interleaved 1F1B over model
// chunks) for stage 0, the stage rank 0 is on, and the line its pass at a
// time belongs to, read from the run's boxes (inspect/pipeline_boxes.h). The
// counts in the lines come from the schedule object. No widgets.
#pragma once

#include <QString>
#include <cstdint>
#include <optional>
#include <vector>

#include "config/run_config.h"
#include "inspect/pipeline_boxes.h"
#include "trace/event.h"
#include "walkthrough_model.h"

namespace shardscope {

class EventStore;

class PipelineWalkthrough {
 public:
  static Algorithm algorithm(const RunConfig& c);

  // Lines stage 0 is on at t in `step` (lit as WalkthroughModel::litAt):
  // its pass's line with the phase header; between passes the next pass's
  // line, waiting (the bubble); after its last pass the flush. pending: the
  // gate point it is stopped before.
  std::vector<LitLine> litAt(const EventStore& store, int step, int64_t t, std::optional<EventKind> pending) const;

 private:
  // The boxes of the step asked last, rebuilt when the store grows or changes.
  mutable PipelineBoxes m_boxes;
  mutable uint64_t m_generation = ~0ull;
  mutable size_t m_events = 0;
  mutable int m_step = -2;
};

}  // namespace shardscope
