// Reading a snapshot's segments and device traces, then the backward replay
// (totals) and the forward one (categories at the peak). Both walk the same
// entries; when the trace and the segments disagree, the backward totals are
// kept and the entries where they went below zero are counted.
#include "postmortem/memory_snapshot.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "common/input_file.h"
#include "postmortem/pickle_reader.h"
#include "postmortem/snapshot_ledger.h"

namespace shardscope::postmortem {

namespace {

[[noreturn]] void snapshotFieldError(const std::string& path, const std::string& rule, const ValueTree& t, const Value* v) {
  std::string found = v == nullptr ? "it is missing" : "found " + std::string(valueKindName(v->kind));
  if (v != nullptr && (v->kind == ValueKind::Int || v->kind == ValueKind::BigInt || v->kind == ValueKind::Str))
    found += " " + t.toJson(*v).dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 48);
  throw PostmortemFormatError("memory snapshot: " + path + " " + rule + ", " + found);
}

// Where a value sits, for messages only: "device_traces[0]" and an index, joined when an error needs it.
struct SnapshotPath {
  SnapshotPath(const std::string& b, size_t i = SIZE_MAX) : base(b), index(i) {}  // NOLINT: strings convert
  const std::string& base;
  size_t index;  // SIZE_MAX: base alone
  std::string str() const { return index == SIZE_MAX ? base : base + "[" + std::to_string(index) + "]"; }
};

int64_t snapshotInt(const ValueTree& t, const Value& dict, const char* key, const SnapshotPath& path, bool required,
                    int64_t fallback = 0) {
  const Value* v = t.get(dict, key);
  if (v == nullptr && !required) return fallback;
  if (v == nullptr || v->kind != ValueKind::Int || v->i < 0)
    snapshotFieldError(path.str() + "." + key, "must be an integer >= 0 (below 2^63)", t, v);
  return v->i;
}

// Stacks already classified, by container: the memo lets many entries share
// one frames list, which must not cost its length once per entry.
using SnapshotFramesCache = std::unordered_map<uint64_t, std::pair<SnapshotCategory, bool>>;

SnapshotCategory snapshotFramesCategory(const ValueTree& t, const Value* frames, bool& any_frame,
                                        SnapshotFramesCache& cache) {
  any_frame = false;
  if (frames == nullptr || !t.isSeq(*frames)) return SnapshotCategory::Other;
  if (auto it = cache.find(frames->index); it != cache.end()) {
    any_frame = it->second.second;
    return it->second.first;
  }
  FrameClassifier c;
  const size_t n = t.size(*frames);
  for (size_t i = 0; i < n; ++i) {
    const Value f = t.at(*frames, i);
    if (f.kind != ValueKind::Dict) continue;
    FrameText ft;
    if (const Value* name = t.get(f, "name")) ft.name = t.text(*name);
    if (const Value* file = t.get(f, "filename")) ft.filename = t.text(*file);
    c.add(ft);
  }
  any_frame = c.anyFrame();
  cache[frames->index] = {c.result(), any_frame};
  return c.result();
}

bool snapshotActionFrom(std::string_view s, SnapshotAction& out) {
  static const std::pair<std::string_view, SnapshotAction> kActions[] = {
      {"alloc", SnapshotAction::Alloc},
      {"free_requested", SnapshotAction::FreeRequested},
      {"free_completed", SnapshotAction::FreeCompleted},
      {"free", SnapshotAction::FreeCompleted},  // memory_viz's merged free_requested + free_completed
      {"segment_alloc", SnapshotAction::SegmentAlloc},
      {"segment_free", SnapshotAction::SegmentFree},
      {"segment_map", SnapshotAction::SegmentMap},
      {"segment_unmap", SnapshotAction::SegmentUnmap},
      {"snapshot", SnapshotAction::Snapshot},
      {"oom", SnapshotAction::Oom},
  };
  for (const auto& [name, action] : kActions)
    if (name == s) {
      out = action;
      return true;
    }
  return false;
}

struct SnapshotBlock {
  int64_t addr = 0;
  int64_t size = 0;
  SnapshotCategory category = SnapshotCategory::Other;
  bool any_frame = false;
  const Value* frames = nullptr;  // in the tree
};

struct SnapshotDeviceInput {
  std::vector<SnapshotBlock> live_blocks;  // active blocks of the final segments
  int64_t reserved = 0;
  bool present = false;
  const Value* trace = nullptr;
};

void snapshotReadTrace(const ValueTree& t, const Value& trace, const std::string& path, SnapshotDevice& d,
                       std::vector<int64_t>& addrs, SnapshotFramesCache& cache) {
  const size_t n = t.size(trace);
  if (n >= static_cast<size_t>(INT32_MAX))
    throw PostmortemFormatError("memory snapshot: " + path + " has " + std::to_string(n) +
                                " entries, more than the 2^31 - 1 a trace may hold");
  d.actions.reserve(n);
  d.sizes.reserve(n);
  d.categories.reserve(n);
  d.stackless.reserve(n);
  addrs.reserve(n);
  bool all_time = true;
  std::vector<int64_t> times;
  times.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Value e = t.at(trace, i);
    const SnapshotPath at{path, i};
    if (e.kind != ValueKind::Dict) snapshotFieldError(at.str(), "must be a dict (a trace entry)", t, &e);
    const Value* action = t.get(e, "action");
    if (action == nullptr || action->kind != ValueKind::Str)
      snapshotFieldError(at.str() + ".action", "must be a string", t, action);
    SnapshotAction a;
    if (!snapshotActionFrom(t.text(*action), a))
      throw PostmortemFormatError("memory snapshot: " + at.str() + ".action '" + std::string(t.text(*action)).substr(0, 48) +
                                  "' is none of alloc, free_requested, free_completed, segment_alloc, segment_free, "
                                  "segment_map, segment_unmap, snapshot, oom");
    const bool sized = a != SnapshotAction::Snapshot;
    const int64_t size = snapshotInt(t, e, "size", at, sized);
    int64_t addr = 0;
    if (a == SnapshotAction::Oom) {
      SnapshotOom oom;
      oom.index = i;
      oom.requested_bytes = size;
      oom.device_free_bytes = snapshotInt(t, e, "device_free", at, false, -1);
      d.ooms.push_back(oom);
    } else if (a != SnapshotAction::Snapshot) {
      addr = snapshotInt(t, e, "addr", at, true);
    }
    const Value* tu = t.get(e, "time_us");
    if (tu != nullptr && tu->kind == ValueKind::Int) {
      times.push_back(tu->i);
    } else if (int64_t whole = 0; tu != nullptr && tu->kind == ValueKind::Float && wholeFloat(std::floor(tu->f), whole)) {
      times.push_back(whole);
    } else {
      all_time = false;
    }
    bool any_frame = false;
    SnapshotCategory cat = SnapshotCategory::Other;
    if (a == SnapshotAction::Alloc) cat = snapshotFramesCategory(t, t.get(e, "frames"), any_frame, cache);
    d.actions.push_back(a);
    d.sizes.push_back(size);
    d.categories.push_back(cat);
    addrs.push_back(addr);
    d.stackless.push_back(any_frame ? 0 : 1);
  }
  if (all_time && n > 0) {
    d.time_us = std::move(times);
    for (SnapshotOom& o : d.ooms) o.time_us = d.time_us[o.index];
    d.time_axis = std::is_sorted(d.time_us.begin(), d.time_us.end());
  }
}

// Allocated/reserved change an entry makes.
void snapshotDelta(SnapshotAction a, int64_t size, int64_t& allocated, int64_t& reserved) {
  allocated = reserved = 0;
  switch (a) {
    case SnapshotAction::Alloc: allocated = size; break;
    case SnapshotAction::FreeCompleted: allocated = -size; break;
    case SnapshotAction::SegmentAlloc:
    case SnapshotAction::SegmentMap: reserved = size; break;
    case SnapshotAction::SegmentFree:
    case SnapshotAction::SegmentUnmap: reserved = -size; break;
    default: break;
  }
}

// An allocation's frames as memory_viz shows them, and its user frame. Many
// allocations may share one frames list (the memo): each copy is charged.
void snapshotFrames(const ValueTree& t, const Value* frames, SnapshotAllocation& a, ExpansionBudget& budget) {
  if (frames == nullptr || !t.isSeq(*frames)) return;
  const size_t n = t.size(*frames);
  budget.charge(n * sizeof(SnapshotFrame));
  a.frames.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Value f = t.at(*frames, i);
    if (f.kind != ValueKind::Dict) continue;
    FrameText ft;
    if (const Value* file = t.get(f, "filename")) ft.filename = t.text(*file);
    if (const Value* name = t.get(f, "name")) ft.name = t.text(*name);
    if (!memoryVizShowsFrame(ft)) {
      ++a.frames_omitted;
      continue;
    }
    if (a.user_frame < 0 && isPythonFrame(ft)) a.user_frame = static_cast<int32_t>(a.frames.size());
    SnapshotFrame sf;
    budget.charge(ft.filename.size() + ft.name.size());
    sf.filename = std::string(ft.filename);
    sf.name = std::string(ft.name);
    if (const Value* line = t.get(f, "line"); line != nullptr && line->kind == ValueKind::Int) sf.line = line->i;
    a.frames.push_back(std::move(sf));
  }
  if (a.user_frame < 0 && !a.frames.empty()) a.user_frame = 0;
}

// A live allocation at the peak before its frames are read.
struct SnapshotCandidate {
  int64_t size = 0, addr = 0, entry = -1;
  SnapshotCategory category = SnapshotCategory::Other;
  const Value* frames = nullptr;  // blocks of the final segments
};

// The totals (backward from the final segments), which entry allocated each
// freed block (forward), the ledger at the peak and its largest allocations.
void snapshotReplay(const ValueTree& t, const Value* trace, SnapshotDevice& d, const SnapshotDeviceInput& in,
                    const std::vector<int64_t>& addrs, ExpansionBudget& budget) {
  const size_t n = d.entries();
  d.final_reserved = in.reserved;
  d.final_allocated = 0;
  for (const SnapshotBlock& b : in.live_blocks) d.final_allocated += b.size;

  // Backward: the totals after every entry. Sizes are below 2^63 each and a
  // ring holds far fewer than 2^32 entries, but sums are still checked.
  d.allocated.resize(n);
  d.reserved.resize(n);
  int64_t alloc = d.final_allocated, res = d.final_reserved;
  for (size_t i = n; i-- > 0;) {
    d.allocated[i] = alloc;
    d.reserved[i] = res;
    if (alloc < 0 || res < 0) ++d.inconsistent_entries;
    int64_t da, dr;
    snapshotDelta(d.actions[i], d.sizes[i], da, dr);
    if (__builtin_sub_overflow(alloc, da, &alloc) || __builtin_sub_overflow(res, dr, &res))
      throw PostmortemFormatError("memory snapshot: device " + std::to_string(d.device) +
                                  ": the trace's sizes add up past 2^63 bytes at entry " + std::to_string(i));
  }
  d.initial_allocated = alloc;
  d.initial_reserved = res;
  if (alloc < 0 || res < 0) ++d.inconsistent_entries;
  d.peak_allocated = alloc;
  d.peak_reserved = res;
  for (size_t i = 0; i < n; ++i) {
    if (d.allocated[i] > d.peak_allocated) {
      d.peak_allocated = d.allocated[i];
      d.peak_allocated_index = static_cast<int64_t>(i);
    }
    if (d.reserved[i] > d.peak_reserved) {
      d.peak_reserved = d.reserved[i];
      d.peak_reserved_index = static_cast<int64_t>(i);
    }
  }

  // Forward: which entry allocated each freed block. A block the trace frees
  // without allocating it was live before the first entry; so was a final
  // block the trace never allocated.
  d.alloc_of.assign(n, -1);
  std::unordered_map<int64_t, int32_t> open;
  const auto other = static_cast<size_t>(SnapshotCategory::Other);
  for (size_t i = 0; i < n; ++i) {
    if (d.actions[i] == SnapshotAction::Alloc) {
      open[addrs[i]] = static_cast<int32_t>(i);
    } else if (d.actions[i] == SnapshotAction::FreeCompleted) {
      if (auto it = open.find(addrs[i]); it != open.end()) {
        d.alloc_of[i] = it->second;
        open.erase(it);
      } else {
        d.initial_by_category[other] += d.sizes[i];
        d.initial_before_trace_bytes += d.sizes[i];
      }
    }
  }
  std::vector<SnapshotCandidate> live;
  for (const SnapshotBlock& b : in.live_blocks) {
    if (open.count(b.addr) != 0) continue;
    d.initial_by_category[static_cast<size_t>(b.category)] += b.size;
    if (!b.any_frame) d.initial_no_stack_bytes += b.size;
    live.push_back(SnapshotCandidate{b.size, b.addr, -1, b.category, b.frames});
  }

  const SnapshotLedger at_peak = snapshotLedgerAt(d, d.peak_allocated_index);
  d.peak_by_category = at_peak.by_category;
  d.peak_no_stack_bytes = at_peak.no_stack_bytes;
  d.peak_before_trace_bytes = at_peak.before_trace_bytes;

  // Live at the peak: the entries up to it not freed by then, the blocks
  // freed only after it that were allocated before the trace, and the final
  // blocks from before the trace (above).
  const size_t upto = static_cast<size_t>(d.peak_allocated_index + 1);
  std::vector<uint8_t> freed(upto, 0);
  for (size_t i = 0; i < upto; ++i)
    if (d.actions[i] == SnapshotAction::FreeCompleted && d.alloc_of[i] >= 0) freed[static_cast<size_t>(d.alloc_of[i])] = 1;
  for (size_t i = 0; i < upto; ++i)
    if (d.actions[i] == SnapshotAction::Alloc && !freed[i])
      live.push_back(SnapshotCandidate{d.sizes[i], addrs[i], static_cast<int64_t>(i), d.categories[i], nullptr});
  for (size_t i = upto; i < n; ++i)
    if (d.actions[i] == SnapshotAction::FreeCompleted && d.alloc_of[i] < 0)
      live.push_back(SnapshotCandidate{d.sizes[i], addrs[i], -1, SnapshotCategory::Other, nullptr});
  d.peak_live_allocations = live.size();
  const size_t keep = std::min(live.size(), kSnapshotLargestKept);
  std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(keep), live.end(),
                    [](const SnapshotCandidate& a, const SnapshotCandidate& b) {
                      return a.size != b.size ? a.size > b.size : a.entry < b.entry;
                    });
  d.peak_largest.reserve(keep);
  for (size_t k = 0; k < keep; ++k) {
    const SnapshotCandidate& c = live[k];
    SnapshotAllocation a;
    a.size = c.size;
    a.addr = c.addr;
    a.entry = c.entry;
    a.category = c.category;
    const Value* frames = c.frames;
    if (c.entry >= 0 && trace != nullptr) {
      const Value e = t.at(*trace, static_cast<size_t>(c.entry));
      frames = t.get(e, "frames");
    }
    snapshotFrames(t, frames, a, budget);
    d.peak_largest.push_back(std::move(a));
  }
}

}  // namespace

bool isMemorySnapshot(const ValueTree& t) {
  return t.root.kind == ValueKind::Dict && (t.get(t.root, "segments") != nullptr || t.get(t.root, "device_traces") != nullptr);
}

MemorySnapshot buildMemorySnapshot(const ValueTree& t) {
  if (t.root.kind != ValueKind::Dict)
    throw PostmortemFormatError("memory snapshot: the document must be a dict with 'segments' and 'device_traces', found " +
                                std::string(valueKindName(t.root.kind)));
  const Value* segments = t.get(t.root, "segments");
  if (segments == nullptr || segments->kind != ValueKind::List)
    snapshotFieldError("segments", "must be a list (the allocator's final segments)", t, segments);
  const Value* traces = t.get(t.root, "device_traces");
  if (traces != nullptr && traces->kind != ValueKind::List)
    snapshotFieldError("device_traces", "must be a list (one trace per device)", t, traces);

  constexpr int64_t kMaxDevices = 4096;
  std::vector<SnapshotDeviceInput> inputs;
  SnapshotFramesCache frames_cache;
  auto device = [&](int64_t index, const std::string& path) -> SnapshotDeviceInput& {
    if (index >= kMaxDevices)
      throw PostmortemFormatError("memory snapshot: " + path + " is " + std::to_string(index) +
                                  ", more devices than the 4096 a snapshot may name");
    if (static_cast<size_t>(index) >= inputs.size()) inputs.resize(static_cast<size_t>(index) + 1);
    return inputs[static_cast<size_t>(index)];
  };

  const size_t nseg = t.size(*segments);
  for (size_t s = 0; s < nseg; ++s) {
    const Value seg = t.at(*segments, s);
    const std::string at = "segments[" + std::to_string(s) + "]";
    if (seg.kind != ValueKind::Dict) snapshotFieldError(at, "must be a dict (a segment)", t, &seg);
    SnapshotDeviceInput& in = device(snapshotInt(t, seg, "device", at, true), at + ".device");
    in.present = true;
    const int64_t total = snapshotInt(t, seg, "total_size", at, true);
    if (__builtin_add_overflow(in.reserved, total, &in.reserved))
      throw PostmortemFormatError("memory snapshot: " + at + ".total_size: the segments add up past 2^63 bytes");
    int64_t addr = snapshotInt(t, seg, "address", at, false, 0);
    const Value* blocks = t.get(seg, "blocks");
    if (blocks == nullptr) continue;
    if (blocks->kind != ValueKind::List) snapshotFieldError(at + ".blocks", "must be a list", t, blocks);
    const size_t nb = t.size(*blocks);
    const std::string blocks_path = at + ".blocks";
    for (size_t b = 0; b < nb; ++b) {
      const Value blk = t.at(*blocks, b);
      const SnapshotPath bat{blocks_path, b};
      if (blk.kind != ValueKind::Dict) snapshotFieldError(bat.str(), "must be a dict (a block)", t, &blk);
      const int64_t size = snapshotInt(t, blk, "size", bat, true);
      const int64_t block_addr = snapshotInt(t, blk, "address", bat, false, addr);
      const Value* state = t.get(blk, "state");
      if (state == nullptr || state->kind != ValueKind::Str)
        snapshotFieldError(bat.str() + ".state", "must be a string (active_allocated, active_pending_free or inactive)", t, state);
      const std::string_view st = t.text(*state);
      if (st == "active_allocated" || st == "active_pending_free") {
        SnapshotBlock sb;
        sb.addr = block_addr;
        sb.size = snapshotInt(t, blk, "requested_size", bat, false, size);
        sb.frames = t.get(blk, "frames");
        sb.category = snapshotFramesCategory(t, sb.frames, sb.any_frame, frames_cache);
        in.live_blocks.push_back(sb);
      } else if (st != "inactive") {
        throw PostmortemFormatError("memory snapshot: " + bat.str() + ".state '" + std::string(st).substr(0, 48) +
                                    "' is none of active_allocated, active_pending_free, inactive");
      }
      if (__builtin_add_overflow(block_addr, size, &addr))
        throw PostmortemFormatError("memory snapshot: " + bat.str() + ": address + size passes 2^63");
    }
  }
  const size_t ntraces = traces == nullptr ? 0 : t.size(*traces);
  for (size_t d = 0; d < ntraces; ++d) {
    const Value trace = t.at(*traces, d);
    const std::string at = "device_traces[" + std::to_string(d) + "]";
    if (trace.kind != ValueKind::List) snapshotFieldError(at, "must be a list (a device's trace entries)", t, &trace);
    SnapshotDeviceInput& in = device(static_cast<int64_t>(d), at);
    if (t.size(trace) > 0) in.present = true;
    in.trace = &t.container(*traces)->items[d];
  }

  MemorySnapshot out;
  ExpansionBudget budget(t.source_bytes);
  for (size_t i = 0; i < inputs.size(); ++i) {
    SnapshotDeviceInput& in = inputs[i];
    if (!in.present) continue;
    SnapshotDevice dm;
    dm.device = static_cast<int>(i);
    std::vector<int64_t> addrs;
    if (in.trace != nullptr)
      snapshotReadTrace(t, *in.trace, "device_traces[" + std::to_string(i) + "]", dm, addrs, frames_cache);
    snapshotReplay(t, in.trace, dm, in, addrs, budget);
    out.devices.push_back(std::move(dm));
  }
  return out;
}

MemorySnapshot readMemorySnapshotFile(const std::string& path) {
  const std::string bytes = readInputFile(path, traceFileRule());
  try {
    return buildMemorySnapshot(readPostmortemDocument(bytes));
  } catch (const PostmortemFormatError& e) {
    throw PostmortemFormatError(path + ": " + e.what());
  }
}

}  // namespace shardscope::postmortem
