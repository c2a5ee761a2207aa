#include "inspect/rank_symmetry.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "config/run_config.h"
#include "inspect/event_store.h"
#include "trace/rank_copies.h"

namespace shardscope {

namespace {

bool symmetryNear(int64_t a, int64_t b, int64_t tolerance) { return std::llabs(a - b) <= tolerance; }

// The same op up to who ran it and in which communicator.
bool symmetrySameOp(const Event& a, const Event& b, int64_t tolerance) {
  return a.kind == b.kind && a.lane == b.lane && a.step == b.step && a.block == b.block && a.unit == b.unit &&
         a.bucket == b.bucket && a.param == b.param && a.bytes == b.bytes && a.category == b.category &&
         a.flags == b.flags && symmetryNear(a.begin_ns, b.begin_ns, tolerance) &&
         symmetryNear(a.end_ns, b.end_ns, tolerance) &&
         (isCollective(a.kind) ? symmetryNear(a.value, b.value, tolerance) : a.value == b.value);
}

bool symmetrySameEvents(const std::vector<Event>& a, const std::vector<Event>& b, int64_t tolerance) {
  if (&a == &b) return true;  // a copied rank: its source's very events
  if (a.size() != b.size()) return false;  // a hung or stopped rank, or another program
  for (size_t i = 0; i < a.size(); ++i)
    if (!symmetrySameOp(a[i], b[i], tolerance)) return false;
  return true;
}

}  // namespace

RankSymmetry findRankSymmetry(const EventStore& store, int64_t tolerance_ns) {
  RankSymmetry out;
  std::vector<int> sources;
  std::map<int, size_t> fold_of;  // source -> index into out.folds
  for (int r = 0; r < store.rankCount(); ++r) {
    const std::vector<Event>& events = store.events(r);
    int joined = -1;
    if (!events.empty()) {
      const size_t tried = std::min(sources.size(), static_cast<size_t>(kMaxFoldSources));
      for (size_t i = 0; i < tried && joined < 0; ++i)
        if (symmetrySameEvents(store.events(sources[i]), events, tolerance_ns)) joined = sources[i];
    }
    if (joined < 0) {
      if (!events.empty()) sources.push_back(r);
      continue;
    }
    auto [it, added] = fold_of.try_emplace(joined, out.folds.size());
    if (added) out.folds.push_back({joined, {}});
    out.folds[it->second].ranks.push_back(r);
  }
  std::sort(out.folds.begin(), out.folds.end(), [](const RankFold& a, const RankFold& b) { return a.source < b.source; });
  return out;
}

const std::vector<int>& RankSymmetry::sameAsRank0() const {
  static const std::vector<int> none;
  return !folds.empty() && folds.front().source == 0 ? folds.front().ranks : none;
}

std::string RankFold::text(const RunConfig* config) const {
  std::string out;
  if (config && config->pp > 1 && config->ranks % config->pp == 0)
    out = "stage " + std::to_string(config->stageOf(source)) + ", ";
  out += (ranks.size() == 1 ? "rank " : "ranks ") + rankRangesText(ranks) + ": same as rank " + std::to_string(source);
  return out;
}

std::vector<RankColumn> rankColumns(const std::vector<int>& ranks, const std::function<bool(int, int)>& same,
                                    int min_fold) {
  // Each rank's source: the first earlier rank it equals (itself when none).
  std::vector<int> sources;
  std::map<int, std::vector<int>> members;
  std::vector<int> source_of(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    source_of[i] = r;
    if (ranks.size() > static_cast<size_t>(kFoldAboveRanks)) {
      const size_t tried = std::min(sources.size(), static_cast<size_t>(kMaxFoldSources));
      for (size_t k = 0; k < tried; ++k)
        if (same(sources[k], r)) {
          source_of[i] = sources[k];
          break;
        }
    }
    if (source_of[i] == r) sources.push_back(r);
    else members[source_of[i]].push_back(r);
  }
  const auto folds = [&](int source) {
    const auto it = members.find(source);
    return it != members.end() && static_cast<int>(it->second.size()) >= min_fold;
  };
  std::vector<RankColumn> out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i], source = source_of[i];
    if (source == r || !folds(source)) {
      out.push_back({r, {}, r});
      continue;
    }
    const std::vector<int>& m = members[source];
    if (r == m.front()) out.push_back({r, m, source});  // the fold column where its first rank would be
  }
  return out;
}

bool labelsColumn(size_t i, size_t n, size_t max_labels) {
  const size_t every = max_labels > 0 && n > max_labels ? (n + max_labels - 1) / max_labels : 1;
  return i % every == 0;
}

}  // namespace shardscope
