// Which ranks' timelines are another rank's again: in a symmetric run (ddp,
// zero, fsdp on identical hardware and the modeled clock) every rank runs the
// same ops at the same moments with the same bytes, so a figure can show rank
// 0 and one band "ranks 1–7: same as rank 0" instead of eight copies. A
// pipeline's ranks fall into one class per stage ("stage 2, ranks 9–11: same
// as rank 8"), as do a tensor-parallel group's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace shardscope {

class EventStore;
struct RunConfig;

// One class of identical ranks: its lowest rank and the others.
struct RankFold {
  int source = 0;          // the rank shown for the class
  std::vector<int> ranks;  // ascending, never source: the ranks whose events equal source's

  // "ranks 1–7: same as rank 0"; a pipeline's class names its stage first
  // ("stage 2, ranks 9–11: same as rank 8"). config may be null.
  std::string text(const RunConfig* config) const;
};

struct RankSymmetry {
  // Classes with at least one rank besides their source, by source. A rank
  // joins the first earlier source whose events it equals: the same ops in
  // the same order, of the same kind, lane, step, block, unit, bucket,
  // parameter, bytes and flags, beginning and ending within tolerance_ns (and
  // waiting as long). Group ids, sequence numbers, op ids and the rank itself
  // may differ: an HSDP rank of another shard group is the same.
  std::vector<RankFold> folds;

  // The ranks whose events equal rank 0's (ascending; empty when none).
  const std::vector<int>& sameAsRank0() const;
};

// tolerance_ns: 0 asks for identical times (a modeled clock's runs are exact).
// A rank is compared with at most kMaxFoldSources sources (a measured run's
// ranks are all different: comparing each with every other would be P²).
inline constexpr int kMaxFoldSources = 64;
RankSymmetry findRankSymmetry(const EventStore& store, int64_t tolerance_ns = 0);

// A per-rank bar chart's columns over `ranks` (ascending; RunTrace::shownRanks):
// each rank whose bars equal no earlier shown rank's gets a column; the ranks
// equal to it share one fold column ("ranks 1–511: same as rank 0") when there
// are at least min_fold of them, else keep a column each. Charts of at most
// kFoldAboveRanks ranks keep a column per rank (same is not called).
struct RankColumn {
  int rank = 0;              // the rank whose numbers the column shows
  std::vector<int> folded;   // a fold column's ranks (empty: one rank's column)
  int source = 0;            // a fold column: the rank they equal
};
inline constexpr int kFoldAboveRanks = 8;
std::vector<RankColumn> rankColumns(const std::vector<int>& ranks, const std::function<bool(int a, int b)>& same,
                                    int min_fold = 4);
// Whether column i of n gets a tick label, so that at most about max_labels do.
bool labelsColumn(size_t i, size_t n, size_t max_labels = 16);

}  // namespace shardscope
