#include "parallel/pipeline_schedule.h"

#include <algorithm>
#include <cmath>
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
  computeSlots();
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

PipelineScheduleOrder::Simulation PipelineScheduleOrder::simulate(double forward, double backward) const {
  // Each pass starts when its stage is free and its input has been produced
  // (no transfer time): the order's own critical path.
  const int chunks = this->chunks();
  const auto key = [&](int mb, int chunk) { return static_cast<size_t>(mb) * chunks + chunk; };
  std::vector<double> fwd_done(static_cast<size_t>(m_microbatches) * chunks, -1.0), bwd_done = fwd_done;
  std::vector<size_t> next(static_cast<size_t>(m_stages), 0);
  Simulation sim;
  sim.free_at.assign(static_cast<size_t>(m_stages), 0.0);
  sim.busy.assign(static_cast<size_t>(m_stages), 0.0);
  sim.starts.resize(static_cast<size_t>(m_stages));
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
        const double start = std::max(ready, sim.free_at[s]);
        const double cost = a.pass == Pass::Forward ? f : b;
        sim.starts[s].push_back(start);
        sim.free_at[s] = start + cost;
        sim.busy[s] += cost;
        (a.pass == Pass::Forward ? fwd_done : bwd_done)[key(a.microbatch, a.chunk)] = sim.free_at[s];
        ++next[s];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int s = 0; s < m_stages; ++s)
    if (next[s] < actions(s).size()) stuck += " stage " + std::to_string(s) + " at " + actionText(actions(s)[next[s]], m_virtual > 1);
  if (!stuck.empty()) throw std::logic_error("pipeline schedule deadlocks:" + stuck);
  sim.makespan = *std::max_element(sim.free_at.begin(), sim.free_at.end());
  return sim;
}

double PipelineScheduleOrder::simulatedBubble(double forward, double backward) const {
  const Simulation sim = simulate(forward, backward);
  double idle = 0;
  for (int s = 0; s < m_stages; ++s) idle += sim.makespan - sim.busy[static_cast<size_t>(s)];
  return idle / (sim.makespan * m_stages);
}

void PipelineScheduleOrder::computeSlots() {
  // Forward 1, backward 2 per chunk: every start is a whole number.
  const Simulation sim = simulate(m_virtual, 2.0 * m_virtual);
  m_slots.resize(static_cast<size_t>(m_stages));
  for (int s = 0; s < m_stages; ++s)
    for (double t : sim.starts[static_cast<size_t>(s)]) m_slots[static_cast<size_t>(s)].push_back(std::llround(t));
  m_slotsPerStep = std::llround(sim.makespan) + 1;
}

namespace {

// A stage's leading forwards and trailing backwards, and its forward count.
struct PipelineRuns {
  int leading_forwards = 0, trailing_backwards = 0, forwards = 0;
};

PipelineRuns pipelineRunsOf(const std::vector<PipelineAction>& acts) {
  using Pass = PipelineAction::Pass;
  PipelineRuns r;
  while (r.leading_forwards < static_cast<int>(acts.size()) && acts[static_cast<size_t>(r.leading_forwards)].pass == Pass::Forward)
    ++r.leading_forwards;
  while (r.trailing_backwards < static_cast<int>(acts.size()) &&
         acts[acts.size() - 1 - static_cast<size_t>(r.trailing_backwards)].pass == Pass::Backward)
    ++r.trailing_backwards;
  for (const PipelineAction& a : acts) r.forwards += a.pass == Pass::Forward ? 1 : 0;
  return r;
}

}  // namespace

int PipelineScheduleOrder::warmUpForwards(int stage) const {
  // The steady state starts with a forward: the leading run less that one,
  // unless every forward leads (GPipe, or fewer microbatches than the warm-up).
  const PipelineRuns r = pipelineRunsOf(actions(stage));
  return r.leading_forwards == r.forwards ? r.forwards : r.leading_forwards - 1;
}

int PipelineScheduleOrder::coolDownBackwards(int stage) const {
  const PipelineRuns r = pipelineRunsOf(actions(stage));
  return r.leading_forwards == r.forwards ? r.forwards : r.trailing_backwards - 1;
}

PipelinePhase PipelineScheduleOrder::phaseOf(int stage, size_t action) const {
  const size_t n = actions(stage).size();
  if (action < static_cast<size_t>(warmUpForwards(stage))) return PipelinePhase::WarmUp;
  if (action >= n - static_cast<size_t>(coolDownBackwards(stage))) return PipelinePhase::CoolDown;
  return PipelinePhase::Steady;
}

int PipelineScheduleOrder::actionIndex(int stage, const PipelineAction& a) const {
  const auto& acts = actions(stage);
  const auto it = std::find(acts.begin(), acts.end(), a);
  return it == acts.end() ? -1 : static_cast<int>(it - acts.begin());
}

std::string actionText(const PipelineAction& a, bool with_chunk) {
  std::string t = (a.pass == PipelineAction::Pass::Forward ? "F" : "B") + std::to_string(a.microbatch);
  if (with_chunk) t += "." + std::to_string(a.chunk);
  return t;
}

}  // namespace shardscope
