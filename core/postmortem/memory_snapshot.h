// A PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot) as
// allocated and reserved bytes over its trace, per device. The trace is a
// ring (older entries are lost), so the state is rebuilt backwards from the
// final `segments`, as PyTorch's memory_viz does: the state after the last
// entry is the final state, and each entry undone gives the one before it.
// Allocated bytes are requested bytes (the sizes the trace records).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "postmortem/frame_category.h"
#include "postmortem/value_tree.h"

namespace shardscope::postmortem {

enum class SnapshotAction : uint8_t {
  Alloc, FreeRequested, FreeCompleted, SegmentAlloc, SegmentFree, SegmentMap, SegmentUnmap, Snapshot, Oom
};

struct SnapshotOom {
  size_t index = 0;               // trace entry
  int64_t requested_bytes = 0;
  int64_t device_free_bytes = 0;  // what CUDA said was free
  int64_t time_us = -1;           // -1: no time
};

// One frame of an allocation's stack, innermost first.
struct SnapshotFrame {
  std::string filename;
  int64_t line = 0;
  std::string name;
};

// A live allocation (at the allocated peak).
struct SnapshotAllocation {
  int64_t size = 0;    // bytes requested
  int64_t addr = 0;
  int64_t entry = -1;  // the trace entry that allocated it; -1: allocated before the trace
  SnapshotCategory category = SnapshotCategory::Other;
  // Innermost first, the frames memory_viz shows (memoryVizShowsFrame: the
  // unwinder's own left out); empty when none were recorded.
  std::vector<SnapshotFrame> frames;
  int32_t frames_omitted = 0;  // the unwinder's and interpreter's frames left out
  int32_t user_frame = -1;     // index in frames of the innermost Python frame, else of the first; -1: none
};

// How many of the largest live allocations at the peak the model keeps.
inline constexpr size_t kSnapshotLargestKept = 50;

struct SnapshotDevice {
  int device = 0;
  // Per trace entry, in trace order.
  std::vector<SnapshotAction> actions;
  std::vector<int64_t> sizes;      // bytes
  std::vector<int64_t> time_us;    // empty when the trace has no time_us
  std::vector<int64_t> allocated;  // bytes after the entry
  std::vector<int64_t> reserved;   // bytes after the entry
  std::vector<SnapshotCategory> categories;  // alloc entries: their stack's category
  std::vector<uint8_t> stackless;  // alloc entries: 1 when no frame was recorded
  // free_completed entries: the entry that allocated the block, -1 when it
  // was allocated before the trace (a ring holds far fewer than 2^31 entries).
  std::vector<int32_t> alloc_of;
  // x of the over-time chart: time_us when every entry has it and it never
  // goes back, else the entry's index.
  bool time_axis = false;

  int64_t initial_allocated = 0, initial_reserved = 0;  // before the first entry
  int64_t final_allocated = 0, final_reserved = 0;      // the final segments
  int64_t peak_allocated = 0, peak_reserved = 0;
  // Entry after which the peak is first reached; -1: before the first entry.
  int64_t peak_allocated_index = -1, peak_reserved_index = -1;
  // Live bytes by category at the allocated peak (sums to peak_allocated
  // when the trace and the segments agree).
  std::array<int64_t, kSnapshotCategoryCount> peak_by_category{};
  int64_t peak_no_stack_bytes = 0;       // of "other": allocations with no frames recorded
  int64_t peak_before_trace_bytes = 0;   // of "other": allocated before the trace's first entry, stack unknown
  int64_t inconsistent_entries = 0;      // entries after which a rebuilt total went below 0
  std::vector<SnapshotOom> ooms;
  // Live bytes by category before the first entry (what the final segments
  // and the trace's frees say was allocated earlier).
  std::array<int64_t, kSnapshotCategoryCount> initial_by_category{};
  int64_t initial_no_stack_bytes = 0, initial_before_trace_bytes = 0;
  // The largest live allocations at the allocated peak, largest first (at most kSnapshotLargestKept).
  std::vector<SnapshotAllocation> peak_largest;
  size_t peak_live_allocations = 0;  // how many were live then

  size_t entries() const { return actions.size(); }
  bool hasTime() const { return !time_us.empty(); }
  // Allocated / reserved bytes after entry `i` (-1: before the first).
  int64_t allocatedAt(int64_t i) const { return i < 0 ? initial_allocated : allocated[static_cast<size_t>(i)]; }
  int64_t reservedAt(int64_t i) const { return i < 0 ? initial_reserved : reserved[static_cast<size_t>(i)]; }
};

struct MemorySnapshot {
  std::vector<SnapshotDevice> devices;  // devices with segments or trace entries, by device index
};

// Builds the model. Throws PostmortemFormatError naming the field
// ("device_traces[0][12].size must be an int >= 0, found str").
MemorySnapshot buildMemorySnapshot(const ValueTree& tree);

// True when the document's root is a dict with `segments` or `device_traces`.
bool isMemorySnapshot(const ValueTree& tree);

// Reads a file (pickle or JSON) as a snapshot; errors name the path.
MemorySnapshot readMemorySnapshotFile(const std::string& path);

}  // namespace shardscope::postmortem
