// Forward walk of a snapshot's trace by category (see snapshot_ledger.h).
#include "postmortem/snapshot_ledger.h"

#include <algorithm>

namespace shardscope::postmortem {

int64_t SnapshotLedger::categorized() const {
  int64_t sum = 0;
  for (int64_t b : by_category) sum += b;
  return sum;
}

int64_t SnapshotLedger::attributed() const { return categorized() - bytes(SnapshotCategory::Other); }

double SnapshotLedger::unattributedShare() const {
  const int64_t total = categorized();
  return total > 0 ? static_cast<double>(bytes(SnapshotCategory::Other)) / static_cast<double>(total) : 0.0;
}

SnapshotLedger snapshotLedgerAt(const SnapshotDevice& d, int64_t entry) {
  SnapshotLedger l;
  l.entry = std::clamp<int64_t>(entry, -1, static_cast<int64_t>(d.entries()) - 1);
  l.by_category = d.initial_by_category;
  l.no_stack_bytes = d.initial_no_stack_bytes;
  l.before_trace_bytes = d.initial_before_trace_bytes;
  const auto other = static_cast<size_t>(SnapshotCategory::Other);
  const size_t end = static_cast<size_t>(l.entry + 1);
  for (size_t i = 0; i < end; ++i) {
    const SnapshotAction a = d.actions[i];
    if (a == SnapshotAction::Alloc) {
      l.by_category[static_cast<size_t>(d.categories[i])] += d.sizes[i];
      if (d.stackless[i]) l.no_stack_bytes += d.sizes[i];
    } else if (a == SnapshotAction::FreeCompleted) {
      const int32_t from = d.alloc_of[i];
      if (from >= 0) {
        const auto f = static_cast<size_t>(from);
        l.by_category[static_cast<size_t>(d.categories[f])] -= d.sizes[f];
        if (d.stackless[f]) l.no_stack_bytes -= d.sizes[f];
      } else {
        l.by_category[other] -= d.sizes[i];
        l.before_trace_bytes -= d.sizes[i];
      }
    }
  }
  l.allocated = d.allocatedAt(l.entry);
  l.reserved = d.reservedAt(l.entry);
  return l;
}

}  // namespace shardscope::postmortem
