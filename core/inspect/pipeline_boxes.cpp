#include "inspect/pipeline_boxes.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "inspect/event_store.h"

namespace shardscope {

namespace {

// The step to draw: the last one stage 0's rank ended, else the last it began.
int lastStep(const EventStore& store, int rank) {
  int ended = -1, begun = -1;
  for (const Event& e : store.events(rank)) {
    if (e.kind == EventKind::StepEnd) ended = std::max(ended, e.step);
    if (e.kind == EventKind::Forward) begun = std::max(begun, e.step);
  }
  return ended >= 0 ? ended : begun;
}

bool computePass(const Event& e) {
  return e.lane == Lane::Compute && microbatchOf(e) >= 0 &&
         (e.kind == EventKind::Forward || e.kind == EventKind::Backward || e.kind == EventKind::Loss);
}

// A recompute is the forward a backward starts with: it belongs to the backward pass.
PipelineAction::Pass passOf(const Event& e) {
  if (e.kind == EventKind::Backward || (e.kind == EventKind::Forward && (e.flags & kEventRecompute)))
    return PipelineAction::Pass::Backward;
  return PipelineAction::Pass::Forward;
}

// Merges one rank's compute spans of the step into passes: a new box when the
// microbatch or the pass changes or the segments jump (another chunk).
std::vector<PipelineBox> mergePasses(const std::vector<Event>& events, int step, int stage) {
  std::vector<PipelineBox> boxes;
  int last_segment = -1;
  for (const Event& e : events) {
    if (e.step != step || !computePass(e)) continue;
    const int mb = microbatchOf(e);
    const PipelineAction::Pass pass = passOf(e);
    PipelineBox* open = boxes.empty() ? nullptr : &boxes.back();
    const bool continues = open && open->action.microbatch == mb && open->action.pass == pass &&
                           (e.block < 0 || last_segment < 0 || std::abs(e.block - last_segment) <= 1);
    if (!continues) {
      PipelineBox b;
      b.stage = stage;
      b.action.pass = pass;
      b.action.microbatch = mb;
      b.begin_ns = e.begin_ns;
      b.end_ns = e.end_ns;
      b.first_segment = b.last_segment = std::max<int>(0, e.block);
      boxes.push_back(b);
      open = &boxes.back();
      last_segment = -1;
    }
    open->begin_ns = std::min(open->begin_ns, e.begin_ns);
    open->end_ns = std::max(open->end_ns, e.end_ns);
    open->busy_ns += e.end_ns - e.begin_ns;
    if (e.block >= 0) {
      if (last_segment < 0) open->first_segment = open->last_segment = e.block;
      open->first_segment = std::min<int>(open->first_segment, e.block);
      open->last_segment = std::max<int>(open->last_segment, e.block);
      last_segment = e.block;
    }
    if (e.kind == EventKind::Forward && (e.flags & kEventRecompute)) open->recompute.push_back({e.begin_ns, e.end_ns});
  }
  return boxes;
}

// The stage's chunks in model order (its boxes' distinct first segments):
// the k-th is global chunk stage + S·k.
void numberChunks(std::vector<PipelineBox>& boxes, int stage, int stages) {
  std::vector<int> firsts;
  for (const PipelineBox& b : boxes) firsts.push_back(b.first_segment);
  std::sort(firsts.begin(), firsts.end());
  firsts.erase(std::unique(firsts.begin(), firsts.end()), firsts.end());
  for (PipelineBox& b : boxes) {
    const auto k = std::lower_bound(firsts.begin(), firsts.end(), b.first_segment) - firsts.begin();
    b.action.chunk = stage + stages * static_cast<int>(k);
  }
}

// Most (microbatch, chunk) pairs whose forward has started and backward not yet ended.
int measuredInFlight(const std::vector<PipelineBox>& boxes) {
  std::vector<std::pair<int64_t, int>> edges;  // (time, +1 forward begins / −1 backward ends)
  for (const PipelineBox& b : boxes)
    edges.push_back(b.action.pass == PipelineAction::Pass::Forward ? std::pair{b.begin_ns, +1} : std::pair{b.end_ns, -1});
  std::sort(edges.begin(), edges.end());  // at one instant an end (−1) counts before a begin
  int now = 0, most = 0;
  for (const auto& [t, d] : edges) most = std::max(most, now += d);
  return most;
}

int64_t activationPeak(const std::vector<Event>& events) {
  int64_t peak = 0;
  for (const Event& e : events)
    if ((e.kind == EventKind::Alloc || e.kind == EventKind::Free) && e.category == Category::Activation)
      peak = std::max(peak, e.value);
  return peak;
}

}  // namespace

void PipelineBoxes::build(const EventStore& store, int step) {
  *this = PipelineBoxes{};
  const RunConfig* c = store.config();
  if (!c || c->pp <= 1 || c->ranks % c->pp != 0 || store.rankCount() < c->ranks) return;
  const int S = c->pp;
  m_microbatches = c->microbatchCount();
  m_virtual = c->virtualStages();
  m_schedule = c->pipelineSchedule();
  m_step = step >= 0 ? step : lastStep(store, pipelineStageRank(*c, 0));
  if (m_step < 0) return;
  const auto events = [&store](int rank) -> const std::vector<Event>& { return store.events(rank); };
  m_timing = measurePipeline(*c, events, store.rankCount(), m_step);

  // Transfers are keyed by what names them on both sides: the pipeline group,
  // the direction, the microbatch, the boundary segment and the message number.
  using Key = std::tuple<int, bool, int, int, int>;
  std::map<Key, std::pair<int, int64_t>> receives;  // -> (stage, end)
  struct Sent {
    Key key;
    int stage;
    int64_t begin, bytes;
  };
  std::vector<Sent> sent;
  for (int s = 0; s < S; ++s) {
    PipelineRow row;
    row.stage = s;
    row.rank = pipelineStageRank(*c, s);
    row.first_rank = row.rank;
    row.last_rank = row.rank + c->ranks / S - 1;
    const std::vector<Event>& list = store.events(row.rank);
    row.activation_peak_bytes = activationPeak(list);
    try {
      row.schedule_in_flight = expectedMicrobatchesInFlight(*c, s);
    } catch (const std::exception&) {
      row.schedule_in_flight = 0;  // a trace's config the schedule cannot order: nothing to compare
    }
    std::vector<PipelineBox> boxes = mergePasses(list, m_step, s);
    std::stable_sort(boxes.begin(), boxes.end(),
                     [](const PipelineBox& a, const PipelineBox& b) { return a.begin_ns < b.begin_ns; });
    numberChunks(boxes, s, S);
    row.in_flight = measuredInFlight(boxes);
    m_boxes.insert(m_boxes.end(), boxes.begin(), boxes.end());
    for (size_t i = 0; i < list.size(); ++i) {
      const Event& raw = list[i];
      if (raw.step != m_step || (raw.kind != EventKind::Send && raw.kind != EventKind::Recv)) continue;
      const Event e = store.eventAt(row.rank, i);  // a copy's own group id
      const Key key{e.group, (e.flags & kEventGradient) != 0, microbatchOf(e), e.block, e.seq};
      if (e.kind == EventKind::Recv) receives[key] = {s, e.end_ns};
      else sent.push_back({key, s, e.begin_ns, e.bytes});
    }
    m_rows.push_back(std::move(row));
  }
  m_sends = static_cast<int>(sent.size());
  for (const Sent& x : sent) {
    const auto r = receives.find(x.key);
    if (r == receives.end()) continue;  // never received (a hung or live run)
    PipelineArrow a;
    a.from_stage = x.stage;
    a.to_stage = r->second.first;
    a.microbatch = std::get<2>(x.key);
    a.gradient = std::get<1>(x.key);
    a.send_ns = x.begin;
    a.recv_end_ns = r->second.second;
    a.bytes = x.bytes;
    m_arrows.push_back(a);
  }

  // The window and each row's idle time in it, as measurePipeline counts them.
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const PipelineBox& b : m_boxes) {
    first = std::min(first, b.begin_ns);
    last = std::max(last, b.end_ns);
  }
  if (m_boxes.empty()) return;
  m_window = {first, last};
  for (PipelineRow& row : m_rows) {
    int64_t at = first;
    for (const PipelineBox& b : m_boxes) {
      if (b.stage != row.stage) continue;
      if (b.begin_ns > at) row.idle.push_back({at, b.begin_ns});
      at = std::max(at, b.end_ns);
    }
    if (at < last) row.idle.push_back({at, last});
    int64_t idle = 0;
    for (const auto& [b, e] : row.idle) idle += e - b;
    if (last > first) m_idleShare += double(idle) / double(last - first) / double(m_rows.size());
  }
}

}  // namespace shardscope
