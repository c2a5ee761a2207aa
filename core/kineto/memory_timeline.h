// The PyTorch profiler's memory timeline (profile(profile_memory=True,
// record_shapes=True, with_stack=True).export_memory_timeline(path, device)):
// bytes per category over time, as torch/profiler/_memory_profiler.py's
// MemoryProfileTimeline writes them. Two forms, told apart by their shape:
//   path.json / .json.gz: [times, sizes] (_coalesce_timeline): times in µs,
//     each sizes row 1 + 8 integers, row[0] always 0, row[c + 1] the bytes of
//     category c in _CATEGORY_TO_INDEX's order (kMemoryTimelineCategories);
//   path ending raw.json.gz: [[t, action, bytes, category], ...]
//     (export_memory_timeline_raw): t in ns (-1: allocated before profiling
//     began), action 1..4 (PREEXISTING, CREATE, INCREMENT_VERSION, DESTROY),
//     bytes the signed change, category the same index without the +1.
// Both become the same series: one point per timestamp, every category's bytes.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_tree.h"

namespace shardscope::kineto {

inline constexpr int kMemoryTimelineCategories = 8;
// "Parameter", "Optimizer state", "Input", "Temporary", "Activation",
// "Gradient", "Autograd detail", "Unknown" (the profiler's None: not categorized).
std::string_view memoryTimelineCategoryName(int category);

struct MemoryTimeline {
  bool raw = false;               // read from export_memory_timeline_raw's events
  std::vector<int64_t> times_ns;  // ascending; µs x 1000 for the [times, sizes] form
  std::vector<std::array<int64_t, kMemoryTimelineCategories>> bytes;  // per time, per category, after it
  int64_t total(size_t i) const;  // all categories at point i
  size_t peak() const;            // the first point with the largest total (0 when empty)
};

// True when the file's first bytes (inflated, for gzip) open with a list in a
// list ("[[" after blanks) and its name ends .json or .json.gz: a memory
// timeline, not a Kineto trace (an object), a Chrome trace's event array ("[{")
// or a snapshot. input/input_detect.cpp asks, for every front end.
bool looksLikeMemoryTimeline(const std::string& path, std::string_view text);

// Throws ConfigError naming the file, the field (e.g. "sizes[3]") and what
// is allowed. A timeline without any point is refused: there is nothing to show.
MemoryTimeline readMemoryTimeline(const std::string& path);
MemoryTimeline parseMemoryTimeline(const Json& doc, const std::string& path);

// analyze's report: the peak, each category's bytes there and its own peak.
Json memoryTimelineJson(const MemoryTimeline& t, const std::string& path);
void printMemoryTimelineText(const MemoryTimeline& t, const std::string& path, std::ostream& out);

}  // namespace shardscope::kineto
