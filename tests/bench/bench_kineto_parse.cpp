// Reading a PyTorch profiler trace: parse + index throughput of core/kineto
// on two generated Kineto traces — "synthetic" (float µs timestamps with ns
// digits, kernels, launches, collectives, memory instants, few args) and
// "real_shaped" (one rank of an FSDP job in Kineto's own layout with a real
// trace's arg mix: real_shaped_trace.h) — against simdjson's own full DOM parse of the same buffer
// (the parser's limit) and Python's json.load of the same file (what HTA
// does), timed by /usr/bin/python3 in the same run; and the synthetic trace
// gzipped, inflated by zlib's stream and by libdeflate (whole buffer) in the
// same run, next to a memcpy of the JSON (the memory limit).
// SHARDSCOPE_BENCH_KINETO_MB sets the traces' size (default 200);
// `bench_kineto_parse --write-real-shaped PATH [--mb N] [--rank R] [--world W]
// [--shard-group S] [--integer-ts] [--no-python-stack]` writes the real-shaped
// trace and exits.
#include <benchmark/benchmark.h>
#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <cstdlib>
#include <fstream>
#include <string>

#include "inspect/event_store.h"
#include "inspect/timeline_layout.h"
#include "kineto/kineto_json_reader.h"
#include "kineto/kineto_walk_tuning.h"
#include "kineto/kineto_parser.h"
#include "kineto/kineto_run_trace.h"
#include "kineto/trace_set.h"
#include "kineto/trace_file.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_index.h"
#include "real_shaped_trace.h"

using namespace shardscope::kineto;

namespace {

size_t targetBytes() {
  const char* mb = std::getenv("SHARDSCOPE_BENCH_KINETO_MB");
  return static_cast<size_t>(mb ? std::atof(mb) : 200.0) * 1000 * 1000;
}

// A trace shaped like a Kineto export of a DDP step loop.
std::string generateTrace(size_t bytes) {
  std::string s;
  s.reserve(bytes + (1 << 20));
  s += "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8},\n"
       "\"traceEvents\": [\n";
  char line[4096];
  int64_t corr = 1, step = 1;
  double t = 1000.0;
  while (s.size() < bytes) {
    const double step_start = t;
    for (int op = 0; op < 200 && s.size() < bytes; ++op, ++corr) {
      std::snprintf(line, sizeof line,
                    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 4242, \"tid\": 4242, "
                    "\"ts\": %.3f, \"dur\": 12.125, \"args\": {\"External id\": %lld, \"Record function id\": 0, "
                    "\"Ev Idx\": %lld}},\n"
                    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 4242, "
                    "\"tid\": 4242, \"ts\": %.3f, \"dur\": 4.250, \"args\": {\"External id\": %lld, \"cbid\": 211, "
                    "\"correlation\": %lld}},\n"
                    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize"
                    "128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas\", \"pid\": 0, \"tid\": 7, "
                    "\"ts\": %.3f, \"dur\": 35.517, \"args\": {\"External id\": %lld, \"queued\": 0, \"device\": 0, "
                    "\"context\": 1, \"stream\": 7, \"correlation\": %lld, \"registers per thread\": 168, "
                    "\"shared memory\": 213248, \"blocks per SM\": 0.5, \"warps per SM\": 2, \"grid\": [66, 1, 1], "
                    "\"block\": [384, 1, 1], \"est. achieved occupancy %%\": 3}},\n"
                    "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": "
                    "4242, \"tid\": 4242, \"ts\": %.3f, \"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": "
                    "139872261980160, \"Bytes\": %lld, \"Total Allocated\": %lld, \"Total Reserved\": 4294967296}},\n",
                    t, (long long)corr, (long long)corr, t + 1.5, (long long)corr, (long long)corr, t + 20.0,
                    (long long)corr, (long long)corr, t + 2.0,
                    // an activation allocated on even ops and freed on odd ones, so the totals agree with the deltas
                    (long long)(op % 2 == 0 ? 2097152 : -2097152), (long long)(1000000000 + (op % 2 == 0 ? 2097152 : 0)));
      s += line;
      if (op % 20 == 19) {
        std::snprintf(line, sizeof line,
                      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 4242, \"tid\": "
                      "4242, \"ts\": %.3f, \"dur\": 30.000, \"args\": {\"Collective name\": \"allreduce\", \"dtype\": "
                      "\"BFloat16\", \"In msg nelems\": 6553600, \"Out msg nelems\": 6553600, \"Group size\": 8, "
                      "\"Process Group Name\": \"0\", \"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7]\"}},\n"
                      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*"
                      ", unsigned long, ncclWork*)\", \"pid\": 0, \"tid\": 20, \"ts\": %.3f, \"dur\": 410.250, \"args\": "
                      "{\"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 20, \"correlation\": %lld}},\n",
                      t + 5.0, t + 40.0, (long long)corr);
        s += line;
      }
      t += 40.123;
    }
    std::snprintf(line, sizeof line,
                  "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%lld\", \"pid\": 4242, "
                  "\"tid\": 4242, \"ts\": %.3f, \"dur\": %.3f, \"args\": {}},\n",
                  (long long)step++, step_start, t - step_start);
    s += line;
  }
  s += "{\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \"tid\": \"\", \"ts\": 1}\n],\n"
       "\"traceName\": \"generated\", \"baseTimeNanoseconds\": 1700000000000000000}\n";
  return s;
}

// The generated traces, written once to /tmp and reused by later runs.
const std::string& tracePath() {
  static const std::string path = [] {
    const size_t bytes = targetBytes();
    const std::string p = "/tmp/shardscope_bench_kineto_v2_" + std::to_string(bytes / 1000000) + "MB.json";
    std::ifstream probe(p, std::ios::binary | std::ios::ate);
    if (!probe || static_cast<size_t>(probe.tellg()) < bytes) std::ofstream(p, std::ios::binary) << generateTrace(bytes);
    return p;
  }();
  return path;
}

const std::string& realShapedPath() {
  static const std::string path = [] {
    const size_t bytes = targetBytes();
    const std::string p = "/tmp/shardscope_bench_kineto_real_v2_" + std::to_string(bytes / 1000000) + "MB.json";
    std::ifstream probe(p, std::ios::binary | std::ios::ate);
    if (!probe || static_cast<size_t>(probe.tellg()) < bytes) {
      shardscope::bench::RealShapedOptions o;
      o.bytes = bytes;
      std::ofstream(p, std::ios::binary) << shardscope::bench::writeRealShapedTrace(o);
    }
    return p;
  }();
  return path;
}

// The same trace gzipped (zlib level 6, like Python's gzip default 9 but quicker to make).
const std::string& gzipPath() {
  static const std::string path = [] {
    const std::string p = tracePath() + ".gz";
    std::ifstream probe(p, std::ios::binary);
    if (!probe) {
      std::ifstream in(tracePath(), std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      gzFile gz = gzopen(p.c_str(), "wb6");
      gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
      gzclose(gz);
    }
    return p;
  }();
  return path;
}

const PaddedBuffer& traceBuffer() {
  static const PaddedBuffer b = readTraceFile(tracePath());
  return b;
}

const PaddedBuffer& realShapedBuffer() {
  static const PaddedBuffer b = readTraceFile(realShapedPath());
  return b;
}

// Which generated trace a benchmark reads: the synthetic one (few args) or the real-shaped one.
struct Trace {
  const std::string& (*path)();
  const PaddedBuffer& (*buffer)();
};
const Trace kSynthetic{tracePath, traceBuffer};
const Trace kRealShaped{realShapedPath, realShapedBuffer};

// Arg 0: the whole document as one simdjson document; 1: its events in
// windows, on every core (what parseKinetoTrace does with a large document);
// 2: windows on one thread. Wall time: the walk runs on several threads.
void BM_KinetoParseIndex(benchmark::State& state, Trace trace) {
  const PaddedBuffer& json = trace.buffer();
  const bool windows = state.range(0) >= 1;
  setKinetoChunkBytes(windows ? 0 : size_t(1) << 40);
  if (state.range(0) != 1) setKinetoWalkThreads(1);
  size_t events = 0, held = 0;
  uint32_t walked_windows = 0, parts = 0;
  for (auto _ : state) {
    RankTrace t = parseKinetoTrace(json, trace.path());
    TraceIndex idx = buildTraceIndex(t);
    benchmark::DoNotOptimize(idx.collectives.data());
    events = t.events.size();
    held = t.memoryBytes();
    walked_windows = t.json_windows;
    parts = t.json_parts;
  }
  setKinetoChunkBytes(0);
  setKinetoWalkThreads(0);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size));
  state.counters["events_per_s"] = benchmark::Counter(double(events) * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["bytes_per_event"] = double(held) / double(events);
  state.counters["events"] = double(events);
  state.counters["windows"] = walked_windows;
  state.counters["threads"] = parts;
  state.counters["avx2_walk"] = kinetoAvx2WalkUsed() ? 1 : 0;
  state.SetLabel(!windows ? "whole document" : state.range(0) == 1 ? "windows, every core" : "windows, one thread");
}
BENCHMARK_CAPTURE(BM_KinetoParseIndex, synthetic, kSynthetic)
    ->Arg(0)->Arg(2)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK_CAPTURE(BM_KinetoParseIndex, real_shaped, kRealShaped)
    ->Arg(2)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// From the file to the index, as `shardscope-cli analyze` reads one file (and
// as Python's json.load(open(...)) below reads it): the read into fresh
// memory included.
// Arg 0: one thread (streamed through a buffer of a few windows); 1: every
// core, a part of the file each (read with pread, walked in windows).
void BM_KinetoLoadFile(benchmark::State& state, Trace trace) {
  if (state.range(0) == 0) setKinetoWalkThreads(1);
  size_t bytes = 0;
  uint32_t parts = 0;
  for (auto _ : state) {
    RankTrace t = loadKinetoFile(trace.path());
    TraceIndex idx = buildTraceIndex(t);
    benchmark::DoNotOptimize(idx.collectives.data());
    bytes = t.json_bytes;
    parts = t.json_parts;
  }
  setKinetoWalkThreads(0);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["threads"] = parts;
}
BENCHMARK_CAPTURE(BM_KinetoLoadFile, synthetic, kSynthetic)
    ->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_KinetoLoadFile, real_shaped, kRealShaped)
    ->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// What `shardscope-cli analyze FILE` does after the program has started: the
// load (read, parse, index) and every analysis, without printing.
void BM_KinetoAnalyze(benchmark::State& state, Trace trace) {
  size_t bytes = 0;
  for (auto _ : state) {
    const TraceSet set = loadTraceSet({trace.path()}, {.rank_of = {{trace.path(), 0}}});
    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    benchmark::DoNotOptimize(job.ranks.data());
    bytes = set.ranks[0].json_bytes;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK_CAPTURE(BM_KinetoAnalyze, real_shaped, kRealShaped)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// What File ▸ Open does with a job once read: parse + index, the import into
// the views' events, the store, the timeline's first index and one frame's
// layout (zoomed out) — the time until the trace is on screen, less painting.
void BM_KinetoOpenInViews(benchmark::State& state) {
  const PaddedBuffer& json = traceBuffer();
  size_t events = 0;
  for (auto _ : state) {
    TraceSet set;
    set.ranks.push_back(parseKinetoTrace(json, tracePath()));
    set.indexes.push_back(buildTraceIndex(set.ranks.back()));
    shardscope::EventStore store;
    store.setFromTrace(importedRunTrace(std::move(set)));
    shardscope::TimelineLayout layout;
    layout.sync(store);
    layout.layout(static_cast<double>(store.beginNs()), static_cast<double>(store.endNs()), 1600, 0,
                  static_cast<int>(layout.rows().size()) - 1);
    benchmark::DoNotOptimize(layout.items().data());
    events = store.eventCount();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size));
  state.counters["view_events"] = double(events);
}
BENCHMARK(BM_KinetoOpenInViews)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();

// Arg 0: zlib's streaming inflate; 1: libdeflate, whole buffer (what
// readTraceFile picks when built with it).
void BM_KinetoReadGzip(benchmark::State& state) {
  const std::string& gz = gzipPath();
  const bool fast = state.range(0) == 1;
  if (fast && !haveLibdeflate()) {
    state.SkipWithError("built without libdeflate");
    return;
  }
  std::ifstream probe(gz, std::ios::binary | std::ios::ate);
  const auto gz_bytes = static_cast<double>(probe.tellg());
  size_t json = 0;
  for (auto _ : state) {
    const PaddedBuffer b = readTraceFile(gz, kMaxTraceBytes, fast ? GzipInflater::Fastest : GzipInflater::Zlib);
    json = b.size;
    benchmark::DoNotOptimize(b.data.get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json));  // inflated bytes
  state.counters["gz_MB"] = gz_bytes / 1e6;
  state.SetLabel(fast ? "libdeflate" : "zlib");
}
BENCHMARK(BM_KinetoReadGzip)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(2);

// From the .gz file to the index, as `analyze` and File ▸ Open read one:
// inflated whole (libdeflate when built with it), then walked on every core.
void BM_KinetoLoadGzipFile(benchmark::State& state) {
  const std::string& gz = gzipPath();
  size_t bytes = 0;
  for (auto _ : state) {
    RankTrace t = loadKinetoFile(gz);
    TraceIndex idx = buildTraceIndex(t);
    benchmark::DoNotOptimize(idx.collectives.data());
    bytes = t.json_bytes;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));  // inflated bytes
}
BENCHMARK(BM_KinetoLoadGzipFile)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();

// Copying the JSON once: what any reader of the buffer pays at least. The
// copy's pages are touched before the clock starts (a first touch is a page
// fault, not memory bandwidth).
void BM_MemcpyTrace(benchmark::State& state, Trace trace) {
  const PaddedBuffer& json = trace.buffer();
  std::unique_ptr<char[]> copy(new char[json.size]);
  std::memset(copy.get(), 1, json.size);
  for (auto _ : state) {
    std::memcpy(copy.get(), json.data.get(), json.size);
    benchmark::DoNotOptimize(copy.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size));
}
BENCHMARK_CAPTURE(BM_MemcpyTrace, synthetic, kSynthetic)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(BM_MemcpyTrace, real_shaped, kRealShaped)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_SimdjsonDomParse(benchmark::State& state, Trace trace) {
  const PaddedBuffer& json = trace.buffer();
  simdjson::dom::parser parser;
  simdjson::dom::element warm;  // one untimed parse: the parser's buffers touched once, as when reused
  if (parser.parse(json.data.get(), json.size, false).get(warm)) state.SkipWithError("simdjson parse failed");
  for (auto _ : state) {
    simdjson::dom::element doc;
    if (parser.parse(json.data.get(), json.size, false).get(doc)) state.SkipWithError("simdjson parse failed");
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size));
  state.SetLabel(simdjson::get_active_implementation()->name());
}
BENCHMARK_CAPTURE(BM_SimdjsonDomParse, synthetic, kSynthetic)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_SimdjsonDomParse, real_shaped, kRealShaped)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_PythonJsonLoad(benchmark::State& state, Trace trace) {
  const std::string cmd = "/usr/bin/python3 -c \"import json,sys,time; t=time.perf_counter(); "
                          "json.load(open(sys.argv[1])); print(time.perf_counter()-t)\" " + trace.path();
  for (auto _ : state) {
    std::FILE* p = popen(cmd.c_str(), "r");
    double seconds = -1;
    if (!p || std::fscanf(p, "%lf", &seconds) != 1) state.SkipWithError("/usr/bin/python3 did not report a time");
    if (p) pclose(p);
    state.SetIterationTime(seconds);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * trace.buffer().size));
}
BENCHMARK_CAPTURE(BM_PythonJsonLoad, synthetic, kSynthetic)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_PythonJsonLoad, real_shaped, kRealShaped)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);

}  // namespace

// bench_kineto_parse --write-real-shaped PATH [--mb N] [--rank R] [--world W]
// [--shard-group S] [--integer-ts] [--no-python-stack]: writes the real-shaped
// trace (N MB, default 200) and exits, so that `shardscope-cli analyze` and
// Python can be timed on the same file.
int writeRealShaped(int argc, char** argv) {
  shardscope::bench::RealShapedOptions o;
  for (int i = 3; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool valued = flag == "--mb" || flag == "--rank" || flag == "--world" || flag == "--shard-group";
    if (valued && i + 1 >= argc) {
      std::fprintf(stderr, "error: %s needs a value\n", flag.c_str());
      return 2;
    }
    if (flag == "--mb") o.bytes = static_cast<size_t>(std::max(0.0, std::atof(argv[++i])) * 1e6);
    else if (flag == "--rank") o.rank = std::atoi(argv[++i]);
    else if (flag == "--world") o.world = std::atoi(argv[++i]);
    else if (flag == "--shard-group") o.shard_group = std::atoi(argv[++i]);
    else if (flag == "--integer-ts") o.integer_ts = true;
    else if (flag == "--no-python-stack") o.python_stack = false;
    else {
      std::fprintf(stderr,
                   "error: --write-real-shaped takes --mb N, --rank R, --world W, --shard-group S, --integer-ts, "
                   "--no-python-stack, not '%s'\n", flag.c_str());
      return 2;
    }
  }
  if (const std::string e = shardscope::bench::realShapedOptionsError(o); !e.empty()) {
    std::fprintf(stderr, "error: %s\n", e.c_str());
    return 2;
  }
  std::ofstream out(argv[2], std::ios::binary);
  out << shardscope::bench::writeRealShapedTrace(o);
  if (!out.flush()) {
    std::fprintf(stderr, "error: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--write-real-shaped") == 0) return writeRealShaped(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
