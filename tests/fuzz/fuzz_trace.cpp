// A trace file as File > Open trace takes it: the reader, then every Qt-free
// model the GUI's views build from the store (timeline, buckets, units,
// memory, dependency arrows) and the CLI's inspect report. A bad file must
// end in one ConfigError (a TraceFormatError naming the field, or a limit);
// anything else escaping, a crash, a sanitizer report or a huge allocation is
// a finding. A trace that opened must also export (File > Export trace) to a
// file that opens again.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "cli/inspect_command.h"
#include "inspect/bucket_activity.h"
#include "inspect/dependency_links.h"
#include "inspect/event_store.h"
#include "inspect/memory_series.h"
#include "inspect/timeline_layout.h"
#include "inspect/unit_states.h"
#include "trace/chrome_trace_reader.h"
#include "trace/chrome_trace_writer.h"

using namespace shardscope;

namespace {

// Views call the models for one viewport, one step, one rank at a time; a
// handful of each keeps an input's cost proportional to its size.
constexpr int kMaxQueries = 8;

void exerciseTimeline(const EventStore& store) {
  TimelineLayout layout;
  layout.sync(store);
  const int rows = static_cast<int>(layout.rows().size());
  (void)layout.rowAt(-1.0);
  (void)layout.rowAt(layout.totalHeight() / 2);
  for (int r = 0; r < std::min(store.rankCount(), kMaxQueries); ++r) (void)layout.rowOf(r, Lane::Compute);
  const double begin = static_cast<double>(layout.drawnBegin()), end = static_cast<double>(layout.drawnEnd());
  const double span = end - begin;
  // Zoom to fit, a zoomed-in window in the middle, and a window past the end.
  const double windows[][2] = {{begin, end}, {begin + span * 0.45, begin + span * 0.55}, {end, end + 1e6}};
  for (const auto& w : windows) {
    layout.layout(w[0], w[1], 800, 0, rows - 1);
    for (int row = 0; row < std::min(rows, kMaxQueries); ++row) {
      (void)layout.rowItems(row);
      for (double x : {0.0, 1.5, 400.0, 799.0}) {
        (void)layout.itemAt(row, x);
        (void)layout.markerAt(row, x, 4);
      }
    }
  }
}

void exerciseBuckets(const EventStore& store) {
  BucketActivity buckets;
  buckets.sync(store);
  (void)buckets.stepAt(store.beginNs());
  (void)buckets.stepAt(store.endNs());
  const int steps = buckets.stepCount();
  int step = buckets.defaultStep();
  for (int s : {0, step, steps - 1}) {
    if (s < 0 || s >= steps) continue;
    (void)buckets.stepSpan(s);
    (void)buckets.stepComplete(s);
    (void)buckets.neverReady(s);
    for (int r = 0; r < std::min(buckets.rankCount(), kMaxQueries); ++r)
      for (int b = 0; b < std::min(buckets.bucketCount(), kMaxQueries); ++b) (void)buckets.slot(s, r, b);
  }
}

void exerciseUnits(const EventStore& store) {
  UnitStates units;
  units.sync(store);
  const int64_t mid = store.beginNs() + (store.endNs() - store.beginNs()) / 2;
  for (int r = 0; r < std::min(units.rankCount(), kMaxQueries); ++r)
    for (int u = 0; u < std::min(units.unitCount(), kMaxQueries); ++u) {
      (void)units.spans(r, u);
      (void)units.stateAt(r, u, mid);
    }
  for (int u = 0; u < std::min(units.unitCount(), kMaxQueries); ++u) {
    (void)units.computeSpan(u, units.lastStep(), true);
    (void)units.computeSpan(u, units.lastStep(), false);
  }
}

void exerciseMemory(const EventStore& store) {
  MemorySeries memory;
  memory.sync(store);
  for (int r = 0; r < std::min(memory.rankCount(), kMaxQueries); ++r) {
    (void)memory.peakModelState(r);
    (void)memory.peakTotal(r);
    (void)memory.at(r, store.endNs());
  }
}

void exerciseLinks(const EventStore& store) {
  for (int r = 0; r < std::min(store.rankCount(), kMaxQueries); ++r) {
    const auto n = static_cast<int32_t>(std::min<size_t>(store.events(r).size(), kMaxQueries * 4));
    for (int32_t i = 0; i < n; ++i) (void)dependencyLinks(store, r, i);
  }
}

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_trace: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  EventStore store;
  try {
    store.setFromTrace(readChromeTrace(json, "fuzz.trace.json"));
    exerciseTimeline(store);
    exerciseBuckets(store);
    exerciseUnits(store);
    exerciseMemory(store);
    exerciseLinks(store);
    std::ostringstream report;
    printInspection(store, report);
  } catch (const ConfigError&) {
    return 0;  // a bad trace (TraceFormatError) or one too big to show: one clear error
  }

  std::ostringstream exported;
  writeChromeTrace(store.toRunTrace(), exported);
  try {
    (void)readChromeTrace(exported.str(), "exported.trace.json");
  } catch (const ConfigError& e) {
    finding("an opened trace, exported, does not open again", e.what());
  }
  return 0;
}
