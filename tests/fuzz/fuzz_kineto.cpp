// A PyTorch profiler (Kineto) trace as `shardscope-cli analyze` takes it: the
// simdjson walk, the trace index, HTA's metrics and the communication summary,
// then both reports (text and JSON), over the whole trace and over its last
// step. A bad document must end in one ConfigError. Walked in windows of a
// few bytes, on one thread and on three, the same document must read the same, and so must the
// document written to a file and read in parts by pread on three threads (loadKinetoFile's way with a
// large plain file). On a CPU with AVX2 the portable walk reads the same input too: both walks must agree.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>

#include "common/errors.h"
#include "inspect/collective_exposure.h"
#include "inspect/event_store.h"
#include "inspect/memory_series.h"
#include "inspect/timeline_layout.h"
#include "kineto/kineto_json_reader.h"
#include "kineto/kineto_walk_tuning.h"
#include "kineto/kineto_run_trace.h"
#include "kineto/kineto_parser.h"
#include "kineto/trace_diff.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_index.h"
#include "kineto/trace_set.h"

using namespace shardscope;
using namespace shardscope::kineto;

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_kineto: %s: %s\n", what, detail.c_str());
  std::abort();
}

// The document with simdjson's zeroed padding behind it, as readTraceFile leaves it.
PaddedBuffer padded(const uint8_t* data, size_t size) {
  constexpr size_t kPadding = 64;  // simdjson::SIMDJSON_PADDING
  PaddedBuffer b;
  b.size = size;
  b.capacity = size + kPadding;
  b.data = std::make_unique<char[]>(b.capacity);  // value-initialized: zeros
  if (size) std::memcpy(b.data.get(), data, size);
  return b;
}

// What readKinetoJson made of the input: its error, or its event count.
struct WalkResult {
  std::optional<std::string> error;
  size_t events = 0;
};

WalkResult walk(const PaddedBuffer& json, void (*reader)(const PaddedBuffer&, RankTrace&)) {
  WalkResult r;
  RankTrace t;
  t.path = "fuzz.json";
  try {
    reader(json, t);
    r.events = t.events.size();
  } catch (const ConfigError& e) {
    r.error = e.what();
  }
  return r;
}

// The input as a file, read by loadKinetoFile in parts (pread, a thread each)
// through windows of 32 bytes: its error with the file's name as the
// in-memory walk names it ("fuzz.json"), or its event count.
WalkResult loadInParts(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("fuzz_kineto_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return (dir / "fuzz.json").string();
  }();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  setKinetoChunkBytes(32);
  setKinetoParallelBytes(1);
  setKinetoWalkThreads(3);
  WalkResult r;
  try {
    r.events = loadKinetoFile(path).events.size();
  } catch (const ConfigError& e) {
    std::string text = e.what();
    for (size_t at; (at = text.find(path)) != std::string::npos;) text.replace(at, path.size(), "fuzz.json");
    r.error = text;
  }
  setKinetoWalkThreads(0);
  setKinetoParallelBytes(0);
  setKinetoChunkBytes(0);
  return r;
}

void analyze(TraceSet& set) {
  for (bool whole : {false, true}) {
    HtaOptions options;
    options.whole_trace = whole;
    const JobAnalysis job = analyzeTraceSet(set, options);
    std::ostringstream text, json;
    printAnalysisText(job, set, text);
    writeAnalysisJson(job, set, json);
  }
  // The job against itself (analyze --diff): every name on both sides, nothing changed.
  const TraceDiff diff = computeTraceDiff(set, set);
  for (const auto* rows : {&diff.ops, &diff.kernels})
    for (const TraceDiffRow& r : *rows)
      if (r.presence != TraceDiffPresence::Both || r.deltaNsPerStep() != 0 || r.control_count != r.test_count)
        finding("a trace diffed against itself shows a change", r.name);
  std::ostringstream text, json, csv;
  printTraceDiffText(diff, text);
  writeTraceDiffJson(diff, json);
  writeTraceDiffCsv(diff, csv);
}

}  // namespace

// The job as the GUI opens it: the import, then the views' models over it.
void openInViews(TraceSet set) {
  shardscope::RunTrace run;
  try {
    run = importedRunTrace(std::move(set));
  } catch (const ConfigError&) {
    return;  // a rank no view can show, refused by name
  }
  for (size_t r = 0; r < run.events.size(); ++r)
    for (const shardscope::Event& e : run.events[r]) {
      if (static_cast<size_t>(e.rank) != r) finding("an imported event sits in another rank's list", std::to_string(r));
      if (static_cast<size_t>(e.lane) >= run.imported->tracks[r].size() && !shardscope::isInstant(e.kind))
        finding("an imported box's lane names no track of its rank", std::to_string(static_cast<int>(e.lane)));
    }
  shardscope::EventStore store;
  store.setFromTrace(std::move(run));
  shardscope::TimelineLayout layout;
  layout.sync(store);
  layout.layout(static_cast<double>(store.beginNs()), static_cast<double>(store.endNs()) + 1, 1000, 0,
                static_cast<int>(layout.rows().size()) - 1);
  shardscope::MemorySeries memory;
  memory.sync(store);
  for (int r = 0; r < store.rankCount(); ++r) (void)shardscope::collectiveExposure(store, r, 0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const PaddedBuffer json = padded(data, size);
  TraceSet set;
  std::optional<std::string> error;
  try {
    RankTrace trace = parseKinetoTrace(json, "fuzz.json");
    if (trace.rank < 0) trace.rank = 0;  // as --rank-of fuzz.json=0 does
    set.indexes.push_back(buildTraceIndex(trace));
    set.origin_ns = INT64_MAX;
    for (const TraceEvent& e : trace.events)
      if (e.has(kHasTs)) set.origin_ns = std::min(set.origin_ns, trace.absoluteNs(e.ts_ns));
    if (set.origin_ns == INT64_MAX) set.origin_ns = 0;
    set.ranks.push_back(std::move(trace));
  } catch (const ConfigError& e) {
    error = e.what();
  }

  // Cut into windows of 32 bytes of events, the walk must read the same
  // events or fail with the same words (kineto_windowed_walk.h falls back).
  // And on three threads, a part of the events each.
  for (const unsigned threads : {1u, 3u}) {
    setKinetoChunkBytes(32);
    setKinetoParallelBytes(threads > 1 ? 1 : size_t(1) << 40);
    setKinetoWalkThreads(threads);
    const WalkResult windowed = walk(json, readKinetoJson);
    setKinetoWalkThreads(0);
    setKinetoParallelBytes(0);
    setKinetoChunkBytes(0);
    const std::string how = threads > 1 ? "the windowed walk on three threads" : "the windowed walk";
    if (windowed.error != error)
      finding((how + " and the whole walk disagree").c_str(),
              "whole: " + error.value_or("(valid)") + "; windowed: " + windowed.error.value_or("(valid)"));
    if (!error && windowed.events != set.ranks[0].events.size())
      finding((how + " read a different event count").c_str(),
              std::to_string(set.ranks[0].events.size()) + " vs " + std::to_string(windowed.events));
  }

  // A gzip input is inflated by the file reader, not walked as it is: not
  // comparable; nor is an empty one (only white space), which the file reader
  // refuses as empty before any walk.
  const bool blank = std::all_of(data, data + size, [](uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; });
  if (!blank && !(size >= 2 && data[0] == 0x1f && data[1] == 0x8b)) {
    const WalkResult parts = loadInParts(data, size);
    if (parts.error.has_value() != error.has_value() || (error && *parts.error != *error))
      finding("the file read in parts and the whole walk disagree",
              "whole: " + error.value_or("(valid)") + "; in parts: " + parts.error.value_or("(valid)"));
    if (!error && parts.events != set.ranks[0].events.size())
      finding("the file read in parts read a different event count",
              std::to_string(set.ranks[0].events.size()) + " vs " + std::to_string(parts.events));
  }

  if (kinetoAvx2WalkUsed()) {
    setKinetoPortableWalk(true);
    const WalkResult portable = walk(json, readKinetoJson);
    setKinetoPortableWalk(false);
    if (error.has_value() != portable.error.has_value())
      finding("the AVX2 and portable walks disagree on whether the document is valid",
              error ? "AVX2: " + *error : "portable: " + *portable.error);
    if (!error && portable.events != set.ranks[0].events.size())
      finding("the AVX2 and portable walks read different event counts",
              std::to_string(set.ranks[0].events.size()) + " vs " + std::to_string(portable.events));
  }
  if (error) return 0;

  try {
    analyze(set);
  } catch (const ConfigError&) {
    // a trace the analysis refuses with one clear error
  }
  openInViews(std::move(set));
  return 0;
}
