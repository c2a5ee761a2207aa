// Which rank makes the others wait: for each collective matched across ranks
// (collective_match.h), on the hosts' aligned clocks (clock_alignment.h), its
// start spread, the last rank to arrive and each rank's wait (the last
// arrival's start minus its own); per rank, how often it arrived last and the
// delay it alone imposed. A collective's time is its last arriver's (its
// kernel waits for no one): algbw = bytes / that time, busbw with the group's
// own size (common/collective.h).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "kineto/clock_alignment.h"
#include "kineto/collective_match.h"
#include "kineto/trace_set.h"
#include "trace/straggler_table.h"

namespace shardscope::kineto {

struct CollectiveSkewRow {
  int64_t index = 0;  // position within its process group
  std::string pg;
  int64_t seq = -1;
  Collective kind = Collective::Unknown;
  int64_t bytes = -1;
  int32_t group_size = -1;
  int64_t start_ns = 0;         // first arrival, common clock, ns since the set's origin
  int64_t start_spread_ns = 0;  // last arrival - first arrival
  int64_t duration_ns = 0;      // the last arriver's: its start to its end
  double algbw_gbps = -1, busbw_gbps = -1;  // -1 when the size or the time is unknown
  int last_rank = -1;           // -1 when all started together
  std::vector<int> ranks;       // ranks that took part, ascending
  std::vector<int64_t> wait_ns; // per entry of ranks: last arrival's start - its start
};

struct RankStraggling {
  int rank = -1;
  int64_t collectives = 0;   // matched collectives it took part in
  int64_t arrived_last = 0;
  double arrived_last_pct = 0;
  int64_t median_wait_imposed_ns = 0;  // over those it arrived last in: its start - the next-latest start
  int64_t median_wait_ns = 0;          // over all of its collectives: its own wait
};

struct CollectiveSkew {
  std::vector<CollectiveSkewRow> rows;  // by first arrival
  std::vector<RankStraggling> ranks;    // by rank
  std::vector<CollectiveMismatch> mismatches;
  std::vector<std::string> groups_by_sequence;
  HostClocks clocks;
  // The rank that arrived last most often (ties: the lower rank), -1 with no skew.
  int worstRank() const;
};

CollectiveSkew computeCollectiveSkew(const TraceSet& set);

// Text (a short straggler section), analyze --json's "collective_skew" value,
// and the per-collective table as CSV (a header, then a row per collective).
void printCollectiveSkewText(const CollectiveSkew& skew, std::ostream& out);
void writeCollectiveSkewJson(const CollectiveSkew& skew, std::ostream& out);
void writeCollectiveSkewCsv(const CollectiveSkew& skew, std::ostream& out);
// The straggler view's table (trace/straggler_table.h): waits by collective and rank, the summary text.
StragglerTable stragglerTable(const CollectiveSkew& skew);

}  // namespace shardscope::kineto
