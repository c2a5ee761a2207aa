#include "parallel/pipeline_timing.h"

#include <algorithm>
#include <limits>

#include "parallel/pipeline_schedule.h"

namespace shardscope {

namespace {
PipelineScheduleOrder scheduleOf(const RunConfig& c) {
  return PipelineScheduleOrder(c.pipelineSchedule(), c.pp, c.microbatchCount(), c.virtualStages());
}
}  // namespace

double expectedPipelineBubble(const RunConfig& c) { return c.pp > 1 ? scheduleOf(c).bubbleFormula() : 0.0; }

int expectedMicrobatchesInFlight(const RunConfig& c, int stage) {
  return c.pipelined() ? scheduleOf(c).maxInFlight(stage) : 1;
}

PipelineTiming measurePipeline(const RunTrace& trace, int step) {
  if (!trace.config) return {};
  return measurePipeline(
      *trace.config, [&trace](int rank) -> const std::vector<Event>& { return trace.events[static_cast<size_t>(rank)]; },
      static_cast<int>(trace.events.size()), step);
}

PipelineTiming measurePipeline(const RunConfig& c, const std::function<const std::vector<Event>&(int)>& events,
                               int ranks, int step) {
  PipelineTiming out;
  if (c.pp <= 1) return out;
  out.formula_bubble = expectedPipelineBubble(c);
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (int s = 0; s < c.pp; ++s) {
    StageTiming t;
    t.stage = s;
    t.rank = pipelineStageRank(c, s);
    if (t.rank >= ranks) return {};
    for (const Event& e : events(t.rank)) {
      if (e.step != step) continue;
      if (e.kind == EventKind::Recv) t.wait_ns += e.value;
      if (e.lane != Lane::Compute) continue;
      // A pass's work: its spans and the tensor-parallel collectives inside
      // them (they block the compute stream, as they do on a GPU).
      const bool pass = e.kind == EventKind::Forward || e.kind == EventKind::Backward || e.kind == EventKind::Loss;
      if (!pass && !isCollective(e.kind)) continue;
      t.busy_ns += e.end_ns - e.begin_ns;
      if (e.kind == EventKind::Forward) first = std::min(first, e.begin_ns);
      if (e.kind == EventKind::Backward) last = std::max(last, e.end_ns);
    }
    out.stages.push_back(t);
  }
  if (last <= first) return {};
  for (StageTiming& t : out.stages) {
    t.window_ns = last - first;
    t.bubble = 1.0 - double(t.busy_ns) / double(t.window_ns);
    out.bubble += t.bubble / double(out.stages.size());
  }
  return out;
}

}  // namespace shardscope
