#include "parallel/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

#include "common/errors.h"

namespace shardscope {

namespace {

using Pass = PipelineAction::Pass;

std::vector<PipelineAction> gpipe(int m, int stage) {
  std::vector<PipelineAction> out;
  for (int i = 0; i < m; ++i) out.push_back({Pass::Forward, i, stage});
  for (int i = 0; i < m; ++i) out.push_back({Pass::Backward, i, stage});
  return out;
}

// PipeDream-Flush: stage s runs S − s − 1 warm-up forwards, then alternates
// one forward and one backward, then drains the remaining backwards.
std::vector<PipelineAction> oneFOneB(int stages, int m, int stage) {
  const int warmup = std::min(stages - stage - 1, m);
  std::vector<PipelineAction> out;
  for (int i = 0; i < warmup; ++i) out.push_back({Pass::Forward, i, stage});
  for (int i = 0; i < m - warmup; ++i) {
    out.push_back({Pass::Forward, warmup + i, stage});
    out.push_back({Pass::Backward, i, stage});
  }
  for (int i = m - warmup; i < m; ++i) out.push_back({Pass::Backward, i, stage});
  return out;
}

// Megatron-LM's interleaved 1F1B (forward_backward_pipelining_with_interleaving):
// the M·V virtual microbatches of a stage go in rounds of S microbatches per
// chunk; warm-up (S − s − 1)·2 + (V − 1)·S forwards, then 1F1B.
std::vector<PipelineAction> interleaved(int stages, int m, int v, int stage) {
  const int total = m * v;
  const auto forwardAt = [&](int k) {
    const int local = (k / stages) % v;
    return PipelineAction{Pass::Forward, (k / (stages * v)) * stages + k % stages, local * stages + stage};
  };
  const auto backwardAt = [&](int k) {
    const int local = v - 1 - (k / stages) % v;
    return PipelineAction{Pass::Backward, (k / (stages * v)) * stages + k % stages, local * stages + stage};
  };
  const int warmup = std::min((stages - stage - 1) * 2 + (v - 1) * stages, total);
  std::vector<PipelineAction> out;
  for (int k = 0; k < warmup; ++k) out.push_back(forwardAt(k));
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(forwardAt(warmup + k));
    out.push_back(backwardAt(k));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(backwardAt(k));
  return out;
}

}  // namespace

PipelineScheduleOrder::PipelineScheduleOrder(PipelineSchedule kind, int stages, int microbatches, int virtual_stages)
    : m_kind(kind), m_stages(stages), m_microbatches(microbatches),
      m_virtual(kind == PipelineSchedule::Interleaved ? virtual_stages : 1) {
  if (stages < 1 || microbatches < 1) throw ConfigError("a pipeline needs at least one stage and one microbatch");
  if (kind == PipelineSchedule::Interleaved && stages > 1) {
    if (m_virtual < 2) throw ConfigError("--pp-schedule interleaved needs --virtual-stages 2 or more");
    if (microbatches % stages != 0)
      throw ConfigError("--pp-schedule interleaved needs --microbatches a multiple of --pp " + std::to_string(stages));
  }
  for (int s = 0; s < stages; ++s) {
    if (kind == PipelineSchedule::GPipe) m_actions.push_back(gpipe(microbatches, s));
    else if (kind == PipelineSchedule::Interleaved && stages > 1)
      m_actions.push_back(interleaved(stages, microbatches, m_virtual, s));
    else m_actions.push_back(oneFOneB(stages, microbatches, s));
  }
  if (kind == PipelineSchedule::Interleaved && stages == 1) m_virtual = 1;
}

int PipelineScheduleOrder::maxInFlight(int stage) const {
  int live = 0, peak = 0;
  for (const PipelineAction& a : actions(stage)) {
    live += a.pass == Pass::Forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

double PipelineScheduleOrder::bubbleFormula() const {
  const double s = m_stages, m = m_microbatches, v = m_virtual;
  return (s - 1) / (v * m + s - 1);
}

double PipelineScheduleOrder::simulatedBubble(double forward, double backward) const {
  // Each pass starts when its stage is free and its input has been produced
  // (no transfer time): the order's own critical path.
  const int chunks = this->chunks();
  const auto key = [&](int mb, int chunk) { return static_cast<size_t>(mb) * chunks + chunk; };
  std::vector<double> fwd_done(static_cast<size_t>(m_microbatches) * chunks, -1.0), bwd_done = fwd_done;
  std::vector<size_t> next(static_cast<size_t>(m_stages), 0);
  std::vector<double> free_at(static_cast<size_t>(m_stages), 0.0), busy(static_cast<size_t>(m_stages), 0.0);
  const double f = forward / m_virtual, b = backward / m_virtual;  // a chunk is 1/V of a stage's layers
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < m_stages; ++s) {
      const auto& acts = actions(s);
      while (next[s] < acts.size()) {
        const PipelineAction& a = acts[next[s]];
        double ready = 0;
        if (a.pass == Pass::Forward) {
          if (a.chunk > 0) ready = fwd_done[key(a.microbatch, a.chunk - 1)];
        } else {
          ready = a.chunk + 1 < chunks ? bwd_done[key(a.microbatch, a.chunk + 1)] : fwd_done[key(a.microbatch, a.chunk)];
          if (fwd_done[key(a.microbatch, a.chunk)] < 0) ready = -1;
        }
        if (ready < 0) break;
        const double start = std::max(ready, free_at[s]);
        const double cost = a.pass == Pass::Forward ? f : b;
        free_at[s] = start + cost;
        busy[s] += cost;
        (a.pass == Pass::Forward ? fwd_done : bwd_done)[key(a.microbatch, a.chunk)] = free_at[s];
        ++next[s];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int s = 0; s < m_stages; ++s)
    if (next[s] < actions(s).size()) stuck += " stage " + std::to_string(s) + " at " + actionText(actions(s)[next[s]], m_virtual > 1);
  if (!stuck.empty()) throw std::logic_error("pipeline schedule deadlocks:" + stuck);
  const double makespan = *std::max_element(free_at.begin(), free_at.end());
  double idle = 0;
  for (int s = 0; s < m_stages; ++s) idle += makespan - busy[s];
  return idle / (makespan * m_stages);
}

std::string actionText(const PipelineAction& a, bool with_chunk) {
  std::string t = (a.pass == PipelineAction::Pass::Forward ? "F" : "B") + std::to_string(a.microbatch);
  if (with_chunk) t += "." + std::to_string(a.chunk);
  return t;
}

}  // namespace shardscope
