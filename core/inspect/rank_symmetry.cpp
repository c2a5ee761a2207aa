#include "inspect/rank_symmetry.h"

#include <algorithm>
#include <cstdlib>

#include "inspect/event_store.h"
#include "trace/rank_copies.h"

namespace shardscope {

namespace {

bool near(int64_t a, int64_t b, int64_t tolerance) { return std::llabs(a - b) <= tolerance; }

// The same op up to who ran it and in which communicator.
bool sameOp(const Event& a, const Event& b, int64_t tolerance) {
  return a.kind == b.kind && a.lane == b.lane && a.step == b.step && a.block == b.block && a.unit == b.unit &&
         a.bucket == b.bucket && a.param == b.param && a.bytes == b.bytes && a.category == b.category &&
         a.flags == b.flags && near(a.begin_ns, b.begin_ns, tolerance) && near(a.end_ns, b.end_ns, tolerance) &&
         (isCollective(a.kind) ? near(a.value, b.value, tolerance) : a.value == b.value);
}

}  // namespace

RankSymmetry findRankSymmetry(const EventStore& store, int64_t tolerance_ns) {
  RankSymmetry out;
  if (store.rankCount() < 2) return out;
  const std::vector<Event>& first = store.events(0);
  if (first.empty()) return out;
  for (int r = 1; r < store.rankCount(); ++r) {
    const std::vector<Event>& events = store.events(r);
    if (&events == &first) {  // a copy of rank 0: its very events (group ids aside, which sameOp ignores)
      out.sameAsRank0.push_back(r);
      continue;
    }
    if (events.size() != first.size()) continue;  // a hung or stopped rank, or another program
    bool same = true;
    for (size_t i = 0; i < events.size() && same; ++i) same = sameOp(first[i], events[i], tolerance_ns);
    if (same) out.sameAsRank0.push_back(r);
  }
  return out;
}

std::string RankSymmetry::rangesText() const { return rankRangesText(sameAsRank0); }

std::vector<RankColumn> rankColumns(const std::vector<int>& ranks, const std::function<bool(int)>& same_as_first,
                                    int min_fold) {
  std::vector<int> same;
  if (ranks.size() > static_cast<size_t>(kFoldAboveRanks))
    for (size_t i = 1; i < ranks.size(); ++i)
      if (same_as_first(ranks[i])) same.push_back(ranks[i]);
  const bool fold = static_cast<int>(same.size()) >= min_fold;
  std::vector<RankColumn> out;
  for (int r : ranks) {
    if (fold && r == same.front()) out.push_back({r, same});
    if (fold && std::binary_search(same.begin(), same.end(), r)) continue;
    out.push_back({r, {}});
  }
  return out;
}

bool labelsColumn(size_t i, size_t n, size_t max_labels) {
  const size_t every = max_labels > 0 && n > max_labels ? (n + max_labels - 1) / max_labels : 1;
  return i % every == 0;
}

}  // namespace shardscope
