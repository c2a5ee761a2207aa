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
  PipelineTiming out;
  if (!trace.config || trace.config->pp <= 1) return out;
  const RunConfig& c = *trace.config;
  out.formula_bubble = expectedPipelineBubble(c);
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (int s = 0; s < c.pp; ++s) {
    StageTiming t;
    t.stage = s;
    t.rank = s * (c.ranks / c.pp);
    if (static_cast<size_t>(t.rank) >= trace.events.size()) return {};
    for (const Event& e : trace.events[static_cast<size_t>(t.rank)]) {
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
