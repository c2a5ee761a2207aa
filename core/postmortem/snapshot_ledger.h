// The ledger of a memory snapshot at any trace entry: live bytes by category
// after that entry, walked forward from the state before the trace (each free
// knows the entry that allocated its block, so no address map is needed).
// The share no stack rule claimed ("other") is reported, not hidden.
#pragma once

#include <array>
#include <cstdint>

#include "postmortem/memory_snapshot.h"

namespace shardscope::postmortem {

struct SnapshotLedger {
  int64_t entry = -1;  // after this trace entry; -1: before the first
  std::array<int64_t, kSnapshotCategoryCount> by_category{};  // live bytes
  int64_t no_stack_bytes = 0;     // of "other": allocations with no frames recorded
  int64_t before_trace_bytes = 0; // of "other": allocated before the trace's first entry
  int64_t allocated = 0;          // the rebuilt total after the entry (from the final segments)
  int64_t reserved = 0;

  int64_t bytes(SnapshotCategory c) const { return by_category[static_cast<size_t>(c)]; }
  int64_t categorized() const;         // the sum of by_category
  int64_t attributed() const;          // every category but "other"
  double unattributedShare() const;    // "other" over the categorized sum (0 when it is 0)
};

// The ledger after entry `entry` (clamped to -1 .. entries() - 1). O(entry).
SnapshotLedger snapshotLedgerAt(const SnapshotDevice& d, int64_t entry);

}  // namespace shardscope::postmortem
