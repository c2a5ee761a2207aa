#include "inspect/bucket_activity.h"

#include <algorithm>

#include "inspect/event_store.h"

namespace shardscope {

namespace {
const BucketSlot kEmpty{};
}

void BucketActivity::resize(int ranks, int buckets) {
  if (ranks <= m_ranks && buckets <= m_buckets) return;
  const int new_ranks = std::max(ranks, m_ranks), new_buckets = std::max(buckets, m_buckets);
  for (Step& s : m_steps) {
    std::vector<BucketSlot> cells(static_cast<size_t>(new_ranks * new_buckets));
    for (int r = 0; r < m_ranks; ++r)
      for (int b = 0; b < m_buckets; ++b)
        cells[static_cast<size_t>(r * new_buckets + b)] = s.cells[static_cast<size_t>(r * m_buckets + b)];
    s.cells = std::move(cells);
    s.begin.resize(static_cast<size_t>(new_ranks), -1);
    s.end.resize(static_cast<size_t>(new_ranks), -1);
  }
  m_ranks = new_ranks;
  m_buckets = new_buckets;
}

BucketActivity::Step& BucketActivity::stepFor(int step) {
  while (static_cast<int>(m_steps.size()) <= step) {
    Step s;
    s.cells.resize(static_cast<size_t>(m_ranks * m_buckets));
    s.begin.assign(static_cast<size_t>(m_ranks), -1);
    s.end.assign(static_cast<size_t>(m_ranks), -1);
    m_steps.push_back(std::move(s));
  }
  return m_steps[static_cast<size_t>(step)];
}

void BucketActivity::sync(const EventStore& store) {
  if (m_store != &store || m_generation != store.generation()) {
    m_store = &store;
    m_generation = store.generation();
    m_cursors.clear();
    m_steps.clear();
    m_ranks = m_buckets = 0;
  }
  int buckets = static_cast<int>(store.meta().buckets.size());
  for (const BucketInfo& b : store.meta().buckets) buckets = std::max(buckets, b.index + 1);
  resize(std::max(store.rankCount(), store.meta().ranks), buckets);
  m_cursors.resize(static_cast<size_t>(store.rankCount()), 0);
  for (int r = 0; r < store.rankCount(); ++r) {
    const std::vector<Event>& events = store.events(r);
    for (size_t i = m_cursors[static_cast<size_t>(r)]; i < events.size(); ++i) {
      const Event& e = events[i];
      if (e.step < 0) continue;
      const bool bucketed = e.bucket >= 0 && (e.kind == EventKind::BucketReady || e.kind == EventKind::AllReduce ||
                                              e.kind == EventKind::ReduceScatter || e.kind == EventKind::AllGather);
      if (bucketed) resize(m_ranks, e.bucket + 1);
      Step& s = stepFor(e.step);
      s.last_ns = std::max(s.last_ns, std::max(e.begin_ns, e.end_ns));
      if (e.kind == EventKind::StepBegin) s.begin[static_cast<size_t>(r)] = e.begin_ns;
      if (e.kind == EventKind::StepEnd) s.end[static_cast<size_t>(r)] = e.end_ns;
      if (!bucketed) continue;
      BucketSlot& slot = s.cells[static_cast<size_t>(r * m_buckets + e.bucket)];
      const auto index = static_cast<int32_t>(i);
      switch (e.kind) {
        case EventKind::BucketReady:
          slot.ready_ns = e.begin_ns;
          slot.ready_event = index;
          break;
        case EventKind::AllReduce:
        case EventKind::ReduceScatter:
          slot.kind = e.kind;
          slot.begin_ns = e.begin_ns;
          slot.end_ns = e.end_ns;
          slot.wait_ns = std::clamp<int64_t>(e.value, 0, e.end_ns - e.begin_ns);
          slot.collective_event = index;
          break;
        case EventKind::AllGather:
          slot.gather_begin_ns = e.begin_ns;
          slot.gather_end_ns = e.end_ns;
          break;
        default: break;
      }
    }
    m_cursors[static_cast<size_t>(r)] = events.size();
  }
}

const BucketSlot& BucketActivity::slot(int step, int rank, int bucket) const {
  if (step < 0 || step >= stepCount() || rank < 0 || rank >= m_ranks || bucket < 0 || bucket >= m_buckets) return kEmpty;
  return m_steps[static_cast<size_t>(step)].cells[static_cast<size_t>(rank * m_buckets + bucket)];
}

std::pair<int64_t, int64_t> BucketActivity::stepSpan(int step) const {
  if (step < 0 || step >= stepCount()) return {-1, -1};
  const Step& s = m_steps[static_cast<size_t>(step)];
  int64_t begin = -1;
  for (int64_t b : s.begin)
    if (b >= 0) begin = begin < 0 ? b : std::min(begin, b);
  // Events stamped before step_begin (none today) still belong on screen.
  for (const BucketSlot& slot : s.cells) {
    for (int64_t t : {slot.ready_ns, slot.begin_ns})
      if (t >= 0) begin = begin < 0 ? t : std::min(begin, t);
  }
  return {begin, s.last_ns};
}

bool BucketActivity::stepComplete(int step) const {
  if (step < 0 || step >= stepCount() || m_ranks == 0) return false;
  const Step& s = m_steps[static_cast<size_t>(step)];
  return std::all_of(s.end.begin(), s.end.end(), [](int64_t t) { return t >= 0; });
}

int BucketActivity::defaultStep() const {
  const int n = stepCount();
  if (n == 0) return -1;
  if (!stepComplete(n - 1) && !neverReady(n - 1).empty()) return n - 1;  // a stopped run: its last step
  for (int s = n - 1; s >= 0; --s)
    if (stepComplete(s)) return s;
  return n - 1;
}

int BucketActivity::stepAt(int64_t t) const {
  for (int s = 0; s < stepCount(); ++s) {
    const auto [b, e] = stepSpan(s);
    if (b >= 0 && t >= b && t <= e) return s;
  }
  return -1;
}

std::vector<BucketActivity::NeverReady> BucketActivity::neverReady(int step) const {
  std::vector<NeverReady> out;
  if (step < 0 || step >= stepCount() || stepComplete(step)) return out;
  for (int b = 0; b < m_buckets; ++b) {
    NeverReady n;
    n.bucket = b;
    bool any_ready = false;
    for (int r = 0; r < m_ranks; ++r) {
      if (slot(step, r, b).ready())
        any_ready = true;
      else
        n.ranks.push_back(r);
    }
    if (any_ready && !n.ranks.empty()) out.push_back(std::move(n));
  }
  return out;
}

}  // namespace shardscope
