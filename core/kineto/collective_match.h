// Cross-rank matching of a job's collectives: the i-th collective of a
// process group is the same call on every rank of the group. By the ops'
// "Seq" (PyTorch's per-group sequence number) when every one of the group has
// it, else by order within the group; each match is checked by kind and size,
// and a disagreement (or a rank short of calls) is reported, never matched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/collective.h"
#include "kineto/trace_set.h"

namespace shardscope::kineto {

// One rank's part in a matched collective.
struct CollectiveEntry {
  size_t rank_index = 0;     // index into TraceSet::ranks
  uint32_t collective = 0;   // index into that rank's TraceIndex::collectives
};

struct MatchedCollective {
  std::string pg;        // "Process Group Name" as the trace writes it; "" when the ops name none
  int64_t index = 0;     // position within its group (0-based), the same on every rank
  int64_t seq = -1;      // the ops' "Seq" when matched by it
  Collective kind = Collective::Unknown;
  int64_t bytes = -1;    // -1 when no rank's trace gives the size
  int32_t group_size = -1;
  std::vector<CollectiveEntry> entries;  // by rank index, one per rank that has it
};

struct CollectiveMismatch {
  std::string pg;
  int64_t index = 0;
  std::string what;  // "rank 1: reduce_scatter 4.00 MiB; ranks 0, 2, 3: all_reduce 4.00 MiB"
};

struct CollectiveMatch {
  std::vector<MatchedCollective> collectives;  // agreed on by every rank that has them, by group then index
  std::vector<CollectiveMismatch> mismatches;
  std::vector<std::string> groups_by_sequence;  // groups matched by "Seq"; the others by order
};

CollectiveMatch matchCollectives(const TraceSet& set);

}  // namespace shardscope::kineto
