// The windowed walk of a trace's events (large documents are walked a window
// of events at a time, kineto_windowed_walk.h) must read exactly what the walk
// of the whole document reads: every fixture, cut into windows of a few dozen
// bytes, gives the same events, strings, tables and metadata, or the same
// error; cuts that land inside a string or a nested value fall back to the
// whole walk; the buffer reads as it came afterwards. Walked on several
// threads (a part of the events each, merged in file order), the same again,
// string ids included; and so a plain file read in parts by pread, each
// streamed by its own thread (the index and the analysis too).
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/errors.h"
#include "kineto/kineto_json_reader.h"
#include "kineto/kineto_walk_tuning.h"
#include "kineto/kineto_parser.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_file.h"
#include "kineto/trace_index.h"

using namespace shardscope;
using namespace shardscope::kineto;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/";

struct Parsed {
  std::optional<RankTrace> trace;
  std::string error;
};

int g_parallel_walks = 0;  // walks that really ran in parts

Parsed parseWithWindow(const PaddedBuffer& json, size_t window) {
  setKinetoChunkBytes(window);
  Parsed p;
  try {
    p.trace = parseKinetoTrace(json, "t.json");
  } catch (const ConfigError& e) {
    p.error = e.what();
  }
  setKinetoChunkBytes(0);
  return p;
}

// loadKinetoFile's trace of a file, or its error.
Parsed loadParsed(const std::string& path) {
  Parsed p;
  try {
    p.trace = loadKinetoFile(path);
  } catch (const ConfigError& e) {
    p.error = e.what();
  }
  return p;
}

PaddedBuffer bufferOf(const std::string& text) {
  PaddedBuffer b;
  b.size = text.size();
  b.capacity = text.size() + 64;
  b.data = std::make_unique<char[]>(b.capacity);
  std::memcpy(b.data.get(), text.data(), text.size());
  return b;
}

// Every field of a RankTrace, compared; "" when equal, else what differs.
std::string difference(const RankTrace& a, const RankTrace& b) {
  if (a.rank != b.rank || a.rank_from_metadata != b.rank_from_metadata || a.world_size != b.world_size)
    return "rank / world size";
  if (a.base_time_ns != b.base_time_ns) return "baseTimeNanoseconds";
  if (a.bare_array != b.bare_array || a.any_float_ts != b.any_float_ts) return "document flags";
  if (a.strings.size() != b.strings.size()) return "string count";
  for (uint32_t i = 0; i < a.strings.size(); ++i)
    if (a.str(i) != b.str(i)) return "string " + std::to_string(i);
  if (a.events.size() != b.events.size()) return "event count";
  for (size_t i = 0; i < a.events.size(); ++i) {
    const TraceEvent &x = a.events[i], &y = b.events[i];
    if (x.ts_ns != y.ts_ns || x.dur_ns != y.dur_ns || x.correlation != y.correlation || x.name != y.name ||
        x.track != y.track || x.stream != y.stream || x.extra != y.extra || x.cat != y.cat || x.ph != y.ph ||
        x.kind != y.kind || x.flags != y.flags)
      return "event " + std::to_string(i);
  }
  if (a.tracks.size() != b.tracks.size()) return "track count";
  for (size_t i = 0; i < a.tracks.size(); ++i)
    if (a.tracks[i].pid != b.tracks[i].pid || a.tracks[i].tid != b.tracks[i].tid) return "track";
  if (a.categories != b.categories) return "categories";
  if (a.collective_args.size() != b.collective_args.size()) return "collective args count";
  for (size_t i = 0; i < a.collective_args.size(); ++i) {
    const CollectiveArgs &x = a.collective_args[i], &y = b.collective_args[i];
    if (x.collective_name != y.collective_name || x.dtype != y.dtype || x.pg_name != y.pg_name ||
        x.pg_ranks != y.pg_ranks || x.input_dims != y.input_dims || x.in_nelems != y.in_nelems ||
        x.out_nelems != y.out_nelems || x.group_size != y.group_size)
      return "collective args " + std::to_string(i);
  }
  if (a.sync_args.size() != b.sync_args.size()) return "sync args count";
  for (size_t i = 0; i < a.sync_args.size(); ++i)
    if (a.sync_args[i].record_correlation != b.sync_args[i].record_correlation ||
        a.sync_args[i].wait_on_stream != b.sync_args[i].wait_on_stream)
      return "sync args " + std::to_string(i);
  const auto sameMemory = [](const std::vector<MemorySample>& p, const std::vector<MemorySample>& q) {
    if (p.size() != q.size()) return false;
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i].bytes != q[i].bytes || p[i].total_allocated != q[i].total_allocated ||
          p[i].total_reserved != q[i].total_reserved || p[i].addr != q[i].addr || p[i].event != q[i].event ||
          p[i].tid != q[i].tid || p[i].device_type != q[i].device_type || p[i].device_id != q[i].device_id)
        return false;
    return true;
  };
  if (!sameMemory(a.memory, b.memory) || !sameMemory(a.out_of_memory, b.out_of_memory)) return "memory samples";
  if (a.big_integers.size() != b.big_integers.size()) return "big integer count";
  for (size_t i = 0; i < a.big_integers.size(); ++i)
    if (a.big_integers[i].field != b.big_integers[i].field || a.big_integers[i].text != b.big_integers[i].text ||
        a.big_integers[i].byte_offset != b.big_integers[i].byte_offset)
      return "big integer " + std::to_string(i);
  if (a.process_names != b.process_names || a.thread_names != b.thread_names || a.process_labels != b.process_labels)
    return "metadata names";
  return "";
}

// Parses `json` whole and in windows of each size; checks the two agree and
// leave the buffer as it was: "" when they do, else what differs. `most`:
// the most windows any walk used.
std::string windowsDisagree(const PaddedBuffer& json, const std::string& what, uint32_t* most = nullptr) {
  const std::string before(json.data.get(), json.size);
  const Parsed whole = parseWithWindow(json, size_t(1) << 40);  // never windowed
  uint32_t windows = 0;
  for (size_t window : {16, 40, 97, 256, 1000}) {
    const Parsed cut = parseWithWindow(json, window);
    // The same windows walked on three threads, a part of the events each.
    setKinetoParallelBytes(1);
    setKinetoWalkThreads(3);
    const Parsed parts = parseWithWindow(json, window);
    setKinetoWalkThreads(0);
    setKinetoParallelBytes(0);
    if (parts.error != cut.error || parts.trace.has_value() != cut.trace.has_value())
      return what + ", windows of " + std::to_string(window) + " on three threads: " +
             (parts.error.empty() ? "read" : parts.error) + " / " + (cut.error.empty() ? "read" : cut.error);
    if (parts.trace) {
      const std::string diff = difference(*cut.trace, *parts.trace);
      if (!diff.empty()) return what + ", windows of " + std::to_string(window) + " on three threads: differs in " + diff;
      if (parts.trace->json_parts > 1) ++g_parallel_walks;
    }
    const std::string at = what + ", windows of " + std::to_string(window) + " bytes";
    if (std::string(json.data.get(), json.size) != before) return "the buffer changed: " + at;
    if (!whole.trace) {
      if (cut.error != whole.error)
        return at + ": the error differs:\n  whole:    " + whole.error + "\n  windowed: " + cut.error;
      continue;
    }
    if (!cut.trace) return at + ": failed where the whole walk did not: " + cut.error;
    const std::string diff = difference(*whole.trace, *cut.trace);
    if (!diff.empty()) return at + ": differs in " + diff;
    windows = std::max(windows, cut.trace->json_windows);
  }
  if (most) *most = windows;
  return "";
}

#define AGREE(json, what)                                   \
  do {                                                      \
    const std::string why = windowsDisagree(json, what);    \
    QVERIFY2(why.empty(), why.c_str());                     \
  } while (0)

std::string events(int n, const std::string& extra_args = "") {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i) s += ",\n  ";
    s += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k" + std::to_string(i % 3) + "\", \"pid\": 0, \"tid\": " +
         std::to_string(7 + i % 2) + ", \"ts\": " + std::to_string(1000 + 10 * i) + ".125, \"dur\": 4, \"args\": " +
         "{\"stream\": " + std::to_string(7 + i % 2) + ", \"correlation\": " + std::to_string(i) + extra_args + "}}";
  }
  return s;
}


// What `analyze` prints and writes of one trace (text and JSON): equal for
// two reads when their index and every analysis agree.
std::string analysisOf(RankTrace trace) {
  TraceSet set;
  if (trace.rank < 0) trace.rank = 0;
  std::ostringstream out;
  try {
    set.indexes.push_back(buildTraceIndex(trace));
    set.ranks.push_back(std::move(trace));
    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    printAnalysisText(job, set, out);
    writeAnalysisJson(job, set, out);
  } catch (const ConfigError& e) {
    out << "refused: " << e.what();
  }
  return out.str();
}

// A file read through loadKinetoFile in parts (pread, one thread each) with
// windows of `window` bytes on `threads` threads, against the whole file
// walked at once: "" when they agree (trace, index and analysis, or the
// same error), else what differs. `parts`: the most parts any load used.
std::string partsDisagree(const std::string& path, uint32_t* parts = nullptr) {
  Parsed whole;
  try {
    whole.trace = parseKinetoTrace(readTraceFile(path), path);
  } catch (const ConfigError& e) {
    whole.error = e.what();
  }
  // Parsed again: a trace is not copied, and the analysis takes one.
  const std::string whole_analysis = whole.trace ? analysisOf(parseKinetoTrace(readTraceFile(path), path)) : "";
  for (unsigned threads : {2u, 3u})
    for (size_t window : {16, 64, 333}) {
      setKinetoChunkBytes(window);
      setKinetoParallelBytes(1);
      setKinetoWalkThreads(threads);
      Parsed loaded = loadParsed(path);
      setKinetoWalkThreads(0);
      setKinetoParallelBytes(0);
      setKinetoChunkBytes(0);
      const std::string at = path + ", in parts on " + std::to_string(threads) + " threads, windows of " +
                             std::to_string(window);
      if (!whole.trace) {
        if (loaded.error != whole.error) return at + ": the error differs:\n  whole: " + whole.error + "\n  parts: " + loaded.error;
        continue;
      }
      if (!loaded.trace) return at + ": failed: " + loaded.error;
      const std::string diff = difference(*whole.trace, *loaded.trace);
      if (!diff.empty()) return at + ": differs in " + diff;
      if (parts) *parts = std::max(*parts, loaded.trace->json_parts);
      if (analysisOf(std::move(*loaded.trace)) != whole_analysis) return at + ": the analysis differs";
    }
  return "";
}
}  // namespace

class TestKinetoWindows : public QObject {
  Q_OBJECT

 private slots:
  void everyFixtureReadsTheSameInWindows() {
    int fixtures = 0, windowed = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(kData)) {
      const std::string path = entry.path().string();
      const bool json = path.ends_with(".json") || path.ends_with(".json.gz");
      if (!entry.is_regular_file() || !json || path.ends_with("truncated.json.gz")) continue;
      const PaddedBuffer buffer = readTraceFile(path);
      uint32_t windows = 0;
      const std::string why = windowsDisagree(buffer, path, &windows);
      QVERIFY2(why.empty(), why.c_str());
      if (windows > 2) ++windowed;
      ++fixtures;
    }
    QVERIFY2(fixtures >= 12, "the fixtures were not found");
    QVERIFY2(g_parallel_walks >= 20, qPrintable(QString("only %1 walks ran in parts").arg(g_parallel_walks)));
    // The big fixtures (object and bare-array form) were really cut, not all read whole.
    QVERIFY2(windowed >= 8, qPrintable(QString("only %1 fixtures were walked in windows").arg(windowed)));
  }

  void filesStreamedThroughWindowsReadTheSame() {
    // loadKinetoFile streams a plain file through a buffer of four windows;
    // with tiny windows every fixture is read in many refills (and the
    // buffer grows where a tail outlasts it). The same trace or error as the
    // whole file walked at once.
    QTemporaryDir dir;
    int streamed = 0;
    const auto check = [&](const std::string& path) -> std::string {
      const PaddedBuffer whole_buffer = readTraceFile(path);
      const Parsed whole = parseWithWindow(whole_buffer, size_t(1) << 40);
      for (size_t window : {16, 64, 333}) {
        setKinetoChunkBytes(window);
        Parsed loaded = loadParsed(path);
        setKinetoChunkBytes(0);
        const std::string at = path + ", streamed in windows of " + std::to_string(window);
        if (!whole.trace) {
          if (loaded.error != std::string(whole.error).replace(whole.error.find("t.json"), 6, path))
            return at + ": the error differs: " + loaded.error + " / " + whole.error;
          continue;
        }
        if (!loaded.trace) return at + ": failed: " + loaded.error;
        const std::string diff = difference(*whole.trace, *loaded.trace);
        if (!diff.empty()) return at + ": differs in " + diff;
        if (loaded.trace->json_streamed) ++streamed;
      }
      return "";
    };
    for (const auto& entry : std::filesystem::recursive_directory_iterator(kData)) {
      const std::string path = entry.path().string();
      if (!entry.is_regular_file() || !path.ends_with(".json")) continue;
      const std::string why = check(path);
      QVERIFY2(why.empty(), why.c_str());
    }
    QVERIFY2(streamed >= 12, qPrintable(QString("only %1 loads were streamed").arg(streamed)));
    // A long tail of keys after the events: the buffer grows to hold it.
    const std::string tail = "\"big\": [" + std::string(5000, '1') + "], \"distributedInfo\": {\"rank\": 2}";
    const std::string path = dir.filePath("tail.json").toStdString();
    std::ofstream(path) << "{\"traceEvents\": [" << events(30) << "], " << tail << "}";
    const std::string why = check(path);
    QVERIFY2(why.empty(), why.c_str());
    setKinetoChunkBytes(64);
    const RankTrace t = loadKinetoFile(path);
    setKinetoChunkBytes(0);
    QVERIFY(t.json_streamed);
    QCOMPARE(t.rank, 2);
    // A file cut short mid-event: the whole walk's error, with its position.
    const std::string cut = dir.filePath("cut.json").toStdString();
    std::ofstream(cut) << "{\"traceEvents\": [" << events(30).substr(0, 3000);
    QVERIFY(check(cut).empty());
  }

  void filesReadInPartsReadTheSame() {
    // loadKinetoFile reads a large plain file on every core: cut into parts
    // at event boundaries, each part read by pread and streamed through its
    // own buffer by its own thread, the parts merged in file order. With tiny
    // windows and parts every fixture is cut so; the trace, its index and
    // the analysis are the whole walk's, or the error is.
    uint32_t most = 0;
    int in_parts = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(kData)) {
      const std::string path = entry.path().string();
      if (!entry.is_regular_file() || !path.ends_with(".json")) continue;
      uint32_t parts = 0;
      const std::string why = partsDisagree(path, &parts);
      QVERIFY2(why.empty(), why.c_str());
      in_parts += parts > 1;
      most = std::max(most, parts);
    }
    QVERIFY2(in_parts >= 10, qPrintable(QString("only %1 fixtures were read in parts").arg(in_parts)));
    QCOMPARE(most, uint32_t{3});

    QTemporaryDir dir;
    const auto write = [&](const std::string& name, const std::string& text) {
      const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
      std::ofstream(path, std::ios::binary) << text;
      return path;
    };
    // Kineto's layout (an event over several lines); a few names and args
    // whose strings hold escaped quotes, braces and "}, {": part boundaries
    // (and windows) that fall inside them make those reads fall back, the
    // others read in parts, and the result is the same.
    std::string kineto = "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"rank\": 1, \"world_size\": 2},\n"
                         "  \"traceEvents\": [\n";
    for (int i = 0; i < 120; ++i) {
      const std::string tricky = i == 37 ? "op \\\"}, {\\\" x" : i == 82 ? "q}\\\\\\\", {\\\"" : "aten::mm";
      kineto += std::string(i ? ",\n" : "") + "  {\n    \"ph\": \"X\", \"cat\": \"" + (i % 2 ? "cpu_op" : "kernel") +
                "\", \"name\": \"" + tricky + "\", \"pid\": " + std::to_string(i % 2 ? 4242 : 0) +
                ", \"tid\": " + std::to_string(i % 2 ? 4242 : 7) + ",\n    \"ts\": " + std::to_string(1000 + 10 * i) +
                ".125, \"dur\": 4.5,\n    \"args\": {\n      \"External id\": " + std::to_string(i) +
                (i == 61 ? ", \"note\": \"}, {\\\"a\\\": [1, {\\\"b\\\"}]\"" : "") + ", \"Input Dims\": [[4, 4], []], " +
                "\"stream\": 7, \"correlation\": " + std::to_string(i / 2) + "\n    }\n  }";
    }
    kineto += "\n  ],\n  \"traceName\": \"t\",\n  \"baseTimeNanoseconds\": 1700000000000000000\n}\n";
    uint32_t parts = 0;
    std::string why = partsDisagree(write("kineto_layout.json", kineto), &parts);
    QVERIFY2(why.empty(), why.c_str());
    QVERIFY(parts > 1);
    // A bare array (the older export), and files smaller than a part, a window or two.
    why = partsDisagree(write("bare.json", "[" + events(50) + "]\n"), &parts);
    QVERIFY2(why.empty(), why.c_str());
    for (int n : {1, 2, 3, 5}) {
      why = partsDisagree(write("small" + std::to_string(n) + ".json", "{\"traceEvents\": [" + events(n) + "]}"));
      QVERIFY2(why.empty(), why.c_str());
    }
    // Errors are the whole walk's: a bad value in a later part, a key given
    // before and after the events (each part saw it once), bytes after the
    // document, and a file cut short.
    std::string bad = "{\"traceEvents\": [" + events(60) + "]}";
    bad.replace(bad.find("\"ts\": 1500"), 10, "\"ts\": \"x\" ");
    for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
             {"bad_ts.json", bad},
             {"twice.json", "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [" + events(60) +
                                "], \"distributedInfo\": {\"rank\": 1}}"},
             {"trailing.json", "{\"traceEvents\": [" + events(60) + "]} x"},
             {"cut.json", "{\"traceEvents\": [" + events(60).substr(0, 4000)}}) {
      why = partsDisagree(write(name, text));
      QVERIFY2(why.empty(), why.c_str());
    }
    setKinetoChunkBytes(64);
    setKinetoParallelBytes(1);
    setKinetoWalkThreads(2);
    bool refused = false;
    try {
      (void)loadKinetoFile(dir.filePath("twice.json").toStdString());
    } catch (const ConfigError& e) {
      refused = std::string(e.what()).find("\"distributedInfo\" again") != std::string::npos;
    }
    setKinetoWalkThreads(0);
    setKinetoParallelBytes(0);
    setKinetoChunkBytes(0);
    QVERIFY(refused);
  }

  void keysAfterTheEventsAreRead() {
    const PaddedBuffer b = bufferOf("{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0}, {\"id\": 1}],\n"
                                    " \"traceEvents\": [" + events(40) + "],\n"
                                    " \"distributedInfo\": {\"rank\": 3, \"world_size\": 4},"
                                    " \"baseTimeNanoseconds\": 1700000000000000000}");
    uint32_t windows = 0;
    const std::string why = windowsDisagree(b, "keys after", &windows);
    QVERIFY2(why.empty(), why.c_str());
    QVERIFY(windows > 10);
    const Parsed p = parseWithWindow(b, 64);
    QVERIFY(p.trace);
    QCOMPARE(p.trace->rank, 3);
    QCOMPARE(*p.trace->base_time_ns, int64_t{1700000000000000000});
    QCOMPARE(p.trace->events.size(), size_t{40});
  }

  void cutsInsideStringsOrNestedValuesFallBack() {
    // Every event carries "}, {" inside a string and inside a nested array of
    // objects: some cuts land there, those walks fall back to the whole document.
    const PaddedBuffer b = bufferOf("{\"traceEvents\": [" +
                                    events(60, ", \"note\": \"a}, {b\", \"list\": [{\"x\": 1}, {\"y\": 2}]") +
                                    "], \"distributedInfo\": {\"rank\": 0}}");
    AGREE(b, "strings with }, {");
    const Parsed p = parseWithWindow(b, 64);
    QVERIFY(p.trace);
    QCOMPARE(p.trace->events.size(), size_t{60});
    QCOMPARE(p.trace->json_windows, uint32_t{1});  // every try found a cut it could not use
  }

  void anErrorInALaterWindowIsTheWholeWalksError() {
    std::string text = "{\"traceEvents\": [" + events(50) + "]}";
    const size_t at = text.find("\"ts\": 1400");  // event 40
    QVERIFY(at != std::string::npos);
    text.replace(at, 10, "\"ts\": \"x\" ");
    const PaddedBuffer b = bufferOf(text);
    AGREE(b, "bad ts");
    const Parsed p = parseWithWindow(b, 64);
    QVERIFY(!p.trace);
    QVERIFY2(p.error.find("byte " + std::to_string(at + 6)) != std::string::npos, p.error.c_str());
    QVERIFY2(p.error.find("a number for \"ts\"") != std::string::npos, p.error.c_str());
  }

  void aCutShortDocumentFailsAsWhole() {
    const std::string text = "{\"traceEvents\": [" + events(30) + "], \"distributedInfo\": {\"rank\": 1}}";
    for (size_t keep : {text.size() - 1, text.size() - 30, text.size() / 2}) {
      const PaddedBuffer b = bufferOf(text.substr(0, keep));
      AGREE(b, "cut at " + std::to_string(keep));
      QVERIFY(!parseWithWindow(b, 64).trace);
    }
  }

  void bareArraysAndTrailingBytes() {
    AGREE(bufferOf("[" + events(30) + "]\n"), "bare array");
    QVERIFY(parseWithWindow(bufferOf("[" + events(30) + "]\n"), 64).trace->json_windows > 5);
    AGREE(bufferOf("[" + events(30) + "] x"), "bytes after a bare array");
    AGREE(bufferOf("{\"traceEvents\": [" + events(30) + "]} {}"), "bytes after the object");
    AGREE(bufferOf("{\"traceEvents\": [" + events(30) + "], \"traceEvents\": [" + events(3) + "]}"),
                      "traceEvents twice");
  }
};

QTEST_GUILESS_MAIN(TestKinetoWindows)
#include "test_kineto_windows.moc"
