// Reading the profiler's memory timeline (memory_timeline.h). Source of the
// format: torch/profiler/_memory_profiler.py (MemoryProfileTimeline.
// _coalesce_timeline, export_memory_timeline, export_memory_timeline_raw and
// _CATEGORY_TO_INDEX / Action) and profiler.py's export_memory_timeline, which
// gzips either form by the path's suffix ("raw.json.gz": the raw events).
#include "kineto/memory_timeline.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "common/errors.h"
#include "common/units.h"
#include "kineto/trace_file.h"

namespace shardscope::kineto {

namespace {

// A timeline is rows of 9 small integers: 1 GiB of JSON is tens of millions of points.
constexpr uint64_t kMtlMaxBytes = uint64_t(1) << 30;

[[noreturn]] void mtlError(const std::string& path, const std::string& field, const std::string& rule) {
  throw ConfigError("memory timeline " + path + ": " + field + " " + rule);
}

int64_t mtlInt(const Json& v, const std::string& path, const std::string& field, const std::string& rule) {
  if (v.is_number_integer() || v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_float()) {  // json.dump of a Python int never writes one, but a float that is whole is fine
    const double d = v.get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  mtlError(path, field, rule + ", found " + std::string(v.type_name()));
}

std::string mtlMiB(int64_t bytes) { return bytesText(double(bytes), 2, ByteUnit::MiB); }

}  // namespace

std::string_view memoryTimelineCategoryName(int category) {
  static constexpr std::string_view kNames[kMemoryTimelineCategories] = {
      "Parameter", "Optimizer state", "Input", "Temporary", "Activation", "Gradient", "Autograd detail", "Unknown"};
  return category >= 0 && category < kMemoryTimelineCategories ? kNames[category] : std::string_view("?");
}

int64_t MemoryTimeline::total(size_t i) const {
  int64_t t = 0;
  for (const int64_t b : bytes[i]) t += b;
  return t;
}

size_t MemoryTimeline::peak() const {
  size_t best = 0;
  for (size_t i = 1; i < bytes.size(); ++i)
    if (total(i) > total(best)) best = i;
  return best;
}

bool looksLikeMemoryTimeline(const std::string& path, std::string_view text) {
  const std::string stem = isGzipPath(path) ? path.substr(0, path.size() - 3) : path;
  if (stem.size() < 5 || stem.compare(stem.size() - 5, 5, ".json") != 0) return false;
  // Both forms open with a list in a list ("[[t0, ..." or "[[t, action, ..."); a
  // Chrome trace in its array form opens "[{".
  int lists = 0;
  for (const char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c != '[') return false;
    if (++lists == 2) return true;
  }
  return false;
}

MemoryTimeline parseMemoryTimeline(const Json& doc, const std::string& path) {
  constexpr int C = kMemoryTimelineCategories;
  MemoryTimeline t;
  if (!doc.is_array()) mtlError(path, "the document", "must be a list: [times, sizes] or raw [[t, action, bytes, category], ...]");
  const bool coalesced = doc.size() == 2 && doc[0].is_array() && doc[1].is_array() &&
                         (doc[0].empty() || !doc[0][0].is_array());
  if (coalesced) {
    const Json& times = doc[0];
    const Json& sizes = doc[1];
    if (times.size() != sizes.size())
      mtlError(path, "times and sizes", "must be lists of one length, found " + std::to_string(times.size()) + " and " +
                                            std::to_string(sizes.size()));
    for (size_t i = 0; i < times.size(); ++i) {
      const std::string at = "[" + std::to_string(i) + "]";
      const int64_t us = mtlInt(times[i], path, "times" + at, "must be an integer (µs)");
      if (!t.times_ns.empty() && us * 1000 < t.times_ns.back())
        mtlError(path, "times" + at, "must not go back in time (" + std::to_string(us) + " µs after " +
                                         std::to_string(t.times_ns.back() / 1000) + ")");
      const Json& row = sizes[i];
      if (!row.is_array() || row.size() != C + 1)
        mtlError(path, "sizes" + at, "must be a list of " + std::to_string(C + 1) +
                                         " integers (0, then the bytes of Parameter, Optimizer state, Input, Temporary, "
                                         "Activation, Gradient, Autograd detail, Unknown)");
      std::array<int64_t, C> b{};
      for (int c = 0; c < C; ++c)
        b[c] = mtlInt(row[c + 1], path, "sizes" + at + "[" + std::to_string(c + 1) + "]", "must be an integer (bytes)");
      t.times_ns.push_back(us * 1000);
      t.bytes.push_back(b);
    }
  } else {
    // Raw events, in the profiler's timeline order; -1 (allocated before profiling) goes at the earliest time.
    struct MtlEvent {
      int64_t t, bytes;
      int category;
    };
    std::vector<MtlEvent> events;
    events.reserve(doc.size());
    int64_t t_min = -1;
    for (size_t i = 0; i < doc.size(); ++i) {
      const std::string at = "[" + std::to_string(i) + "]";
      const Json& e = doc[i];
      if (!e.is_array() || e.size() != 4)
        mtlError(path, at, "must be a raw event [time ns, action 1..4, bytes, category 0..7] or the whole file [times, sizes]");
      const int64_t tt = mtlInt(e[0], path, at + "[0]", "must be an integer time (ns, -1 before profiling)");
      const int64_t action = mtlInt(e[1], path, at + "[1]", "must be an integer action");
      if (action < 1 || action > 4)
        mtlError(path, at + "[1]", "must be an action in 1..4 (PREEXISTING, CREATE, INCREMENT_VERSION, DESTROY), found " +
                                       std::to_string(action));
      const int64_t bytes = mtlInt(e[2], path, at + "[2]", "must be an integer (bytes)");
      const int64_t cat = mtlInt(e[3], path, at + "[3]", "must be an integer category");
      if (cat < 0 || cat >= C)
        mtlError(path, at + "[3]", "must be a category in 0..7 (Parameter .. Unknown), found " + std::to_string(cat));
      if (tt < -1) mtlError(path, at + "[0]", "must be a time >= 0 (ns), or -1 before profiling, found " + std::to_string(tt));
      if (tt >= 0 && (t_min < 0 || tt < t_min)) t_min = tt;
      events.push_back({tt, bytes, static_cast<int>(cat)});
    }
    for (MtlEvent& e : events)
      if (e.t < 0) e.t = std::max<int64_t>(t_min, 0);
    std::stable_sort(events.begin(), events.end(), [](const MtlEvent& a, const MtlEvent& b) { return a.t < b.t; });
    t.raw = true;
    std::array<int64_t, C> now{};
    for (const MtlEvent& e : events) {
      now[e.category] += e.bytes;
      if (t.times_ns.empty() || t.times_ns.back() != e.t) {
        t.times_ns.push_back(e.t);
        t.bytes.push_back(now);
      } else {
        t.bytes.back() = now;
      }
    }
  }
  if (t.times_ns.empty()) mtlError(path, "the timeline", "has no points: the profiler recorded no memory on this device");
  return t;
}

MemoryTimeline readMemoryTimeline(const std::string& path) {
  const PaddedBuffer buf = readTraceFile(path, kMtlMaxBytes);
  Json doc;
  try {
    doc = Json::parse(std::string_view(buf.data.get(), buf.size));
  } catch (const Json::parse_error& e) {
    throw ConfigError("memory timeline " + path + ": not valid JSON (" + std::string(e.what()).substr(0, 160) + ")");
  }
  return parseMemoryTimeline(doc, path);
}

Json memoryTimelineJson(const MemoryTimeline& t, const std::string& path) {
  Json j = Json::object();
  j["path"] = path;
  j["form"] = t.raw ? "raw" : "timeline";
  j["points"] = t.times_ns.size();
  j["duration_us"] = static_cast<double>(t.times_ns.back() - t.times_ns.front()) / 1000.0;
  const size_t p = t.peak();
  j["peak_bytes"] = t.total(p);
  j["peak_at_us"] = static_cast<double>(t.times_ns[p] - t.times_ns.front()) / 1000.0;
  Json cats = Json::array();
  for (int c = 0; c < kMemoryTimelineCategories; ++c) {
    int64_t own = 0;
    for (const auto& row : t.bytes) own = std::max(own, row[c]);
    cats.push_back({{"category", std::string(memoryTimelineCategoryName(c))}, {"bytes_at_peak", t.bytes[p][c]}, {"peak_bytes", own}});
  }
  j["categories"] = cats;
  return j;
}

void printMemoryTimelineText(const MemoryTimeline& t, const std::string& path, std::ostream& out) {
  const size_t p = t.peak();
  out << "memory timeline " << path << " (PyTorch profiler, " << (t.raw ? "raw events" : "[times, sizes]") << "): "
      << t.times_ns.size() << " points over " << static_cast<double>(t.times_ns.back() - t.times_ns.front()) / 1000.0
      << " us\n";
  out << "  peak " << mtlMiB(t.total(p)) << " at " << static_cast<double>(t.times_ns[p] - t.times_ns.front()) / 1000.0
      << " us\n";
  out << "  category           at peak        own peak\n";
  for (int c = 0; c < kMemoryTimelineCategories; ++c) {
    int64_t own = 0;
    for (const auto& row : t.bytes) own = std::max(own, row[c]);
    char line[128];
    std::snprintf(line, sizeof line, "  %-16s %12s    %12s\n", std::string(memoryTimelineCategoryName(c)).c_str(),
                  mtlMiB(t.bytes[p][c]).c_str(), mtlMiB(own).c_str());
    out << line;
  }
}

}  // namespace shardscope::kineto
