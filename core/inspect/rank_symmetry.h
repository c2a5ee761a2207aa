// Which ranks' timelines are rank 0's again: in a symmetric run (ddp, zero,
// fsdp on identical hardware and the modeled clock) every rank runs the same
// ops at the same moments with the same bytes, so a figure can show rank 0
// and one band "ranks 1–7: same as rank 0" instead of eight copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace shardscope {

class EventStore;

struct RankSymmetry {
  // Ranks (ascending, never 0) whose events equal rank 0's: the same ops in
  // the same order, of the same kind, lane, step, block, unit, bucket,
  // parameter, bytes and flags, beginning and ending within tolerance_ns of
  // rank 0's (and waiting as long). Group ids, sequence numbers, op ids and
  // the rank itself may differ: an HSDP rank of another shard group is the same.
  std::vector<int> sameAsRank0;

  // "1–7", "1–3, 5–7": the ranks as ranges.
  std::string rangesText() const;
};

// tolerance_ns: 0 asks for identical times (a modeled clock's runs are exact).
RankSymmetry findRankSymmetry(const EventStore& store, int64_t tolerance_ns = 0);

// A per-rank bar chart's columns over `ranks` (ascending; RunTrace::shownRanks):
// the first, then one column for the ranks whose bars equal the first's
// ("ranks 1–511: same as rank 0") when there are at least min_fold of them,
// then every other rank in order. Charts of at most kFoldAboveRanks ranks keep
// a column per rank (same_as_first is not called).
struct RankColumn {
  int rank = 0;                   // the rank whose numbers the column shows
  std::vector<int> sameAsRank0;   // the fold column's ranks, the same as the first column's (empty: one rank's)
};
inline constexpr int kFoldAboveRanks = 8;
std::vector<RankColumn> rankColumns(const std::vector<int>& ranks, const std::function<bool(int)>& same_as_first,
                                    int min_fold = 4);
// Whether column i of n gets a tick label, so that at most about max_labels do.
bool labelsColumn(size_t i, size_t n, size_t max_labels = 16);

}  // namespace shardscope
