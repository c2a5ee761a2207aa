#include "inspect/bucket_activity.h"

#include <algorithm>
#include <limits>

#include "inspect/event_store.h"

namespace shardscope {

namespace {

const BucketSlot kEmpty{};
constexpr int kMaxBucketId = std::numeric_limits<int16_t>::max();  // events carry int16 bucket ids

uint32_t cellKey(int rank, int bucket_id) { return static_cast<uint32_t>(rank) << 16 | static_cast<uint32_t>(bucket_id); }

void earliest(int64_t& slot, int64_t t) {
  if (t >= 0) slot = slot < 0 ? t : std::min(slot, t);
}

}  // namespace

int BucketActivity::bucketId(int bucket) const {
  return bucket >= 0 && bucket < bucketCount() ? m_bucketIds[static_cast<size_t>(bucket)] : -1;
}

int BucketActivity::stepId(int step) const {
  return step >= 0 && step < stepCount() ? m_steps[static_cast<size_t>(step)].id : -1;
}

void BucketActivity::noteBucket(int id) {
  if (id < 0 || id > kMaxBucketId) return;
  const auto it = std::lower_bound(m_bucketIds.begin(), m_bucketIds.end(), id);
  if (it == m_bucketIds.end() || *it != id) m_bucketIds.insert(it, id);
}

BucketActivity::Step& BucketActivity::stepFor(int32_t id) {
  // Steps arrive in order in a run: the search ends at the back.
  if (!m_steps.empty() && m_steps.back().id == id) return m_steps.back();
  auto it = m_steps.end();
  if (!m_steps.empty() && m_steps.back().id > id)
    it = std::lower_bound(m_steps.begin(), m_steps.end(), id, [](const Step& s, int32_t v) { return s.id < v; });
  if (it != m_steps.end() && it->id == id) return *it;
  Step s;
  s.id = id;
  return *m_steps.insert(it, std::move(s));
}

void BucketActivity::sync(const EventStore& store) {
  if (m_store != &store || m_generation != store.generation()) {
    m_store = &store;
    m_generation = store.generation();
    m_cursors.clear();
    m_steps.clear();
    m_bucketIds.clear();
    m_ranks = 0;
  }
  for (const BucketInfo& b : store.meta().buckets) noteBucket(b.index);
  m_ranks = std::max({m_ranks, store.rankCount(), std::min(store.meta().ranks, EventStore::kMaxRanks)});
  m_cursors.resize(static_cast<size_t>(store.rankCount()), 0);
  for (int r = 0; r < store.rankCount(); ++r) {
    const std::vector<Event>& events = store.events(r);
    for (size_t i = m_cursors[static_cast<size_t>(r)]; i < events.size(); ++i) {
      const Event& e = events[i];
      if (e.step < 0) continue;
      const bool bucketed = e.bucket >= 0 && (e.kind == EventKind::BucketReady || e.kind == EventKind::AllReduce ||
                                              e.kind == EventKind::ReduceScatter || e.kind == EventKind::AllGather);
      Step& s = stepFor(e.step);
      s.last_ns = std::max(s.last_ns, std::max(e.begin_ns, e.end_ns));
      if (e.kind == EventKind::StepBegin) earliest(s.first_ns, e.begin_ns);
      if (e.kind == EventKind::StepEnd) {
        int64_t& end = s.ends.try_emplace(r, -1).first->second;
        s.ended += (e.end_ns >= 0 ? 1 : 0) - (end >= 0 ? 1 : 0);
        end = e.end_ns;
      }
      if (!bucketed) continue;
      noteBucket(e.bucket);
      BucketSlot& slot = s.cells[cellKey(r, e.bucket)];
      const auto index = static_cast<int32_t>(i);
      switch (e.kind) {
        case EventKind::BucketReady:
          slot.ready_ns = e.begin_ns;
          slot.ready_event = index;
          earliest(s.first_ns, e.begin_ns);
          break;
        case EventKind::AllReduce:
        case EventKind::ReduceScatter:
          slot.kind = e.kind;
          slot.begin_ns = e.begin_ns;
          slot.end_ns = e.end_ns;
          slot.wait_ns = std::clamp<int64_t>(e.value, 0, std::max<int64_t>(0, e.end_ns - e.begin_ns));
          slot.collective_event = index;
          earliest(s.first_ns, e.begin_ns);
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
  if (step < 0 || step >= stepCount() || rank < 0 || rank >= m_ranks || bucket < 0 || bucket >= bucketCount()) return kEmpty;
  const Step& s = m_steps[static_cast<size_t>(step)];
  const auto it = s.cells.find(cellKey(rank, m_bucketIds[static_cast<size_t>(bucket)]));
  return it == s.cells.end() ? kEmpty : it->second;
}

std::pair<int64_t, int64_t> BucketActivity::stepSpan(int step) const {
  if (step < 0 || step >= stepCount()) return {-1, -1};
  const Step& s = m_steps[static_cast<size_t>(step)];
  // Events stamped before step_begin (none today) still belong on screen: first_ns counts them.
  return {s.first_ns, s.last_ns};
}

bool BucketActivity::stepComplete(int step) const {
  if (step < 0 || step >= stepCount() || m_ranks == 0) return false;
  return m_steps[static_cast<size_t>(step)].ended >= m_ranks;
}

bool BucketActivity::anyNeverReady(const Step& s) const {
  std::unordered_map<int, int> ready;  // bucket id -> ranks that readied it
  for (const auto& [key, slot] : s.cells)
    if (slot.ready()) ++ready[static_cast<int>(key & 0xFFFF)];
  return std::any_of(ready.begin(), ready.end(), [&](const auto& b) { return b.second < m_ranks; });
}

int BucketActivity::defaultStep() const {
  const int n = stepCount();
  if (n == 0) return -1;
  if (!stepComplete(n - 1) && anyNeverReady(m_steps.back())) return n - 1;  // a stopped run: its last step
  for (int s = n - 1; s >= 0; --s)
    if (stepComplete(s)) return s;
  return n - 1;
}

BucketActivity::StepTotals BucketActivity::totals(int step) const {
  StepTotals out;
  if (step < 0 || step >= stepCount()) return out;
  for (const auto& [key, slot] : m_steps[static_cast<size_t>(step)].cells) {
    out.ready += slot.ready() ? 1 : 0;
    if (slot.launched()) {
      ++out.launched;
      (slot.kind == EventKind::AllReduce ? out.all_reduce : out.reduce_scatter) = true;
    }
    out.gather = out.gather || slot.gather_begin_ns >= 0;
  }
  return out;
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
  const Step& s = m_steps[static_cast<size_t>(step)];
  // The ranks that readied each bucket, from the cells that exist (not ranks x buckets probes).
  std::unordered_map<int, std::vector<int>> ready;  // bucket id -> ranks
  for (const auto& [key, slot] : s.cells)
    if (slot.ready()) ready[static_cast<int>(key & 0xFFFF)].push_back(static_cast<int>(key >> 16));
  for (int b = 0; b < bucketCount(); ++b) {
    const auto it = ready.find(m_bucketIds[static_cast<size_t>(b)]);
    if (it == ready.end() || static_cast<int>(it->second.size()) >= m_ranks) continue;
    std::vector<int>& readied = it->second;
    std::sort(readied.begin(), readied.end());
    NeverReady n;
    n.bucket = b;
    for (int r = 0, k = 0; r < m_ranks; ++r) {
      while (k < static_cast<int>(readied.size()) && readied[static_cast<size_t>(k)] < r) ++k;
      if (k < static_cast<int>(readied.size()) && readied[static_cast<size_t>(k)] == r) continue;
      n.ranks.push_back(r);
    }
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace shardscope
