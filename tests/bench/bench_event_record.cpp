// Cost of instrumentation: EventLog::record from one producer, from 2 or 4
// producers sharing one rank's log (target <= 50 ns per event), and the Chrome
// trace writer/reader on 1M events. The writer is compared with the same
// document built as an nlohmann::ordered_json and dumped (what the trace sink
// would cost on the JSON library) and with memcpy of its bytes (the limit). With threads, Time is elapsed wall time per
// event over all threads. Logs are recycled every 1M events so a long run does
// not hold gigabytes; chunk allocation stays inside the timed cost.
#include <benchmark/benchmark.h>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "config/config_json.h"
#include "common/json_tree.h"
#include "trace/chrome_trace_reader.h"
#include "trace/chrome_trace_writer.h"
#include "trace/event_log.h"

using namespace shardscope;

namespace {

constexpr int64_t kRecycleEvents = 1 << 20;

Event sampleEvent(int64_t i) {
  Event e;
  e.begin_ns = i * 100;
  e.end_ns = i * 100 + 50;
  e.bytes = 4096;
  e.rank = 0;
  e.block = static_cast<int16_t>(i & 7);
  e.lane = Lane::Compute;
  e.kind = EventKind::Forward;
  return e;
}

void BM_RecordOneThread(benchmark::State& state) {
  auto log = std::make_unique<EventLog>();
  int64_t i = 0;
  for (auto _ : state) {
    log->record(sampleEvent(i));
    if (++i % kRecycleEvents == 0) {
      state.PauseTiming();
      log = std::make_unique<EventLog>();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordOneThread);

// N producers (a rank's host and stream threads) into one shared log: every
// record contends on the log's slot counter. The iteration count is fixed so the
// shared log stays bounded (threads x 1M events).
std::unique_ptr<EventLog> g_shared_log;
void setupSharedLog(const benchmark::State&) { g_shared_log = std::make_unique<EventLog>(); }
void teardownSharedLog(const benchmark::State&) { g_shared_log.reset(); }

void BM_RecordSharedLog(benchmark::State& state) {
  EventLog& log = *g_shared_log;
  int64_t i = 0;
  for (auto _ : state) log.record(sampleEvent(i++));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordSharedLog)
    ->Threads(2)
    ->Threads(4)
    ->Iterations(kRecycleEvents)
    ->UseRealTime()
    ->Setup(setupSharedLog)
    ->Teardown(teardownSharedLog);

// The same threads, each into its own log (one rank per thread): no contention,
// so the gap to BM_RecordSharedLog is the cost of sharing a log.
std::vector<std::unique_ptr<EventLog>> g_rank_logs;
void setupRankLogs(const benchmark::State& state) {
  g_rank_logs.clear();
  for (int t = 0; t < state.threads(); ++t) g_rank_logs.push_back(std::make_unique<EventLog>());
}
void teardownRankLogs(const benchmark::State&) { g_rank_logs.clear(); }

void BM_RecordLogPerThread(benchmark::State& state) {
  EventLog& log = *g_rank_logs[static_cast<size_t>(state.thread_index())];
  int64_t i = 0;
  for (auto _ : state) log.record(sampleEvent(i++));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordLogPerThread)
    ->Threads(4)
    ->Iterations(kRecycleEvents)
    ->UseRealTime()
    ->Setup(setupRankLogs)
    ->Teardown(teardownRankLogs);

// A step-like mix over 2 ranks: compute X events, collectives with args,
// instants and Alloc/Free (which also write a counter with 10 categories).
RunTrace millionEventTrace() {
  RunTrace trace;
  trace.strategy = "ddp";
  trace.ranks = 2;
  trace.config = RunConfig{};
  trace.config->ranks = 2;
  trace.block_names = {"embed", "block1", "block2", "block3"};
  trace.events.resize(2);
  for (int r = 0; r < 2; ++r) {
    auto& events = trace.events[static_cast<size_t>(r)];
    events.reserve(500'000);
    for (int64_t i = 0; i < 500'000; ++i) {
      Event e;
      e.rank = static_cast<int16_t>(r);
      e.begin_ns = i * 1000 + 123;
      e.end_ns = e.begin_ns + 777;
      e.step = static_cast<int32_t>(i / 1000);
      e.op = static_cast<int32_t>(i);
      switch (i % 8) {
        case 0: case 1: e.kind = EventKind::Forward; e.lane = Lane::Compute; e.block = static_cast<int16_t>(i % 6); break;
        case 2: case 3: e.kind = EventKind::Backward; e.lane = Lane::Compute; e.block = static_cast<int16_t>(i % 6); break;
        case 4: e.kind = EventKind::AllReduce; e.lane = Lane::Comm; e.bucket = 2; e.bytes = 25 << 20; e.seq = static_cast<int32_t>(i); e.group = 0; e.dep = static_cast<int32_t>(i - 1); break;
        case 5: e.kind = EventKind::BucketReady; e.end_ns = e.begin_ns; e.bucket = 2; break;
        case 6: e.kind = EventKind::Alloc; e.end_ns = e.begin_ns; e.category = Category::Activation; e.bytes = 1 << 20; e.value = (i % 64) << 20; break;
        case 7: e.kind = EventKind::Free; e.end_ns = e.begin_ns; e.category = Category::Activation; e.bytes = 1 << 20; e.value = (i % 32) << 20; break;
      }
      events.push_back(e);
    }
  }
  return trace;
}

// Discards output but counts it: measures formatting, not the disk.
class CountingBuf : public std::streambuf {
 public:
  int64_t bytes = 0;

 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override {
    bytes += n;
    return n;
  }
  int_type overflow(int_type c) override {
    ++bytes;
    return traits_type::not_eof(c);
  }
};

void BM_WriteChromeTrace1M(benchmark::State& state) {
  const RunTrace trace = millionEventTrace();
  int64_t bytes = 0;
  for (auto _ : state) {
    CountingBuf buf;
    std::ostream out(&buf);
    writeChromeTrace(trace, out);
    bytes += buf.bytes;
  }
  state.SetItemsProcessed(state.iterations() * 1'000'000);
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_WriteChromeTrace1M)->Unit(benchmark::kMillisecond);

// The document writeChromeTrace writes (same members, order and values; times
// as doubles, whitespace aside), built as a tree and dumped by nlohmann.
Json traceDocument(const RunTrace& trace) {
  const auto isCollective = [](EventKind k) {
    return k == EventKind::AllReduce || k == EventKind::ReduceScatter || k == EventKind::AllGather;
  };
  const auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  Json events = Json::array();
  for (int rank = 0; rank < trace.ranks; ++rank) {
    const auto& list = trace.events[static_cast<size_t>(rank)];
    uint32_t used = 0;
    for (const Event& e : list) used |= 1u << static_cast<unsigned>(e.lane);
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", rank}, {"args", {{"name", "rank " + std::to_string(rank)}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", rank}, {"args", {{"sort_index", rank}}}});
    for (int lane = 0; lane < kLaneCount; ++lane) {
      if (!(used & (1u << lane))) continue;
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", rank}, {"tid", lane}, {"args", {{"name", laneName(static_cast<Lane>(lane))}}}});
      events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", rank}, {"tid", lane}, {"args", {{"sort_index", lane}}}});
    }
    std::array<int64_t, kCategoryCount> memory{};
    for (const Event& e : list) {
      const bool instant = isInstant(e.kind);
      std::string name(eventKindName(e.kind));
      if ((e.kind == EventKind::Forward || e.kind == EventKind::Backward) && e.block >= 0) {
        const auto block = static_cast<size_t>(e.block);
        name += ' ';
        name += block < trace.block_names.size() && !trace.block_names[block].empty() ? trace.block_names[block] : "block" + std::to_string(e.block);
      } else if (isCollective(e.kind) && e.bucket >= 0) {
        name += " bucket " + std::to_string(e.bucket);
      } else if (isCollective(e.kind) && e.unit >= 0) {
        name += " unit " + std::to_string(e.unit);
      }
      Json ev;
      ev["ph"] = instant ? "i" : "X";
      ev["name"] = std::move(name);
      ev["cat"] = eventKindName(e.kind);
      ev["pid"] = rank;
      ev["tid"] = static_cast<int>(e.lane);
      ev["ts"] = us(e.begin_ns);
      if (instant) ev["s"] = "t";
      else ev["dur"] = us(e.end_ns - e.begin_ns);
      Json args = Json::object();
      if (e.block != -1) args["block"] = e.block;
      if (e.unit != -1) args["unit"] = e.unit;
      if (e.bucket != -1) args["bucket"] = e.bucket;
      if (e.bytes != 0) args["bytes"] = e.bytes;
      if (e.step != -1) args["step"] = e.step;
      if (e.seq != -1) args["seq"] = e.seq;
      if (e.group != -1) args["group"] = e.group;
      if (e.op != -1) args["op"] = e.op;
      if (e.dep != -1) args["dep"] = e.dep;
      if (e.param != -1) args["param"] = e.param;
      const bool mem = e.kind == EventKind::Alloc || e.kind == EventKind::Free;
      if (mem || e.category != Category::Workspace) args["category"] = categoryName(e.category);
      if (mem || e.value != 0) args["value"] = e.value;
      if (e.flags != 0) args["flags"] = static_cast<int>(e.flags);
      const int64_t transfer = e.end_ns - e.begin_ns - (isCollective(e.kind) ? e.value : 0);
      if (isCollective(e.kind) && transfer > 0)
        args["GB/s"] = std::round(static_cast<double>(e.bytes) / static_cast<double>(transfer) * 1000.0) / 1000.0;
      if (!args.empty()) ev["args"] = std::move(args);
      events.push_back(std::move(ev));
      if (mem) {
        memory[static_cast<size_t>(e.category)] = e.value;
        Json counter{{"ph", "C"}, {"name", "memory"}, {"pid", rank}, {"ts", us(e.begin_ns)}};
        Json& totals = counter["args"] = Json::object();
        for (int c = 0; c < kCategoryCount; ++c) totals[std::string(categoryName(static_cast<Category>(c)))] = memory[static_cast<size_t>(c)];
        events.push_back(std::move(counter));
      }
    }
  }
  Json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ns";
  doc["metadata"] = {{"format", "shardscope-trace"}, {"version", 1}, {"strategy", trace.strategy}, {"ranks", trace.ranks},
                     {"params", trace.params}, {"config", configToJson(*trace.config)}, {"buckets", Json::array()},
                     {"units", Json::array()}, {"param_names", trace.param_names}, {"block_names", trace.block_names}};
  return doc;
}

void BM_WriteTraceNlohmann1M(benchmark::State& state) {
  const RunTrace trace = millionEventTrace();
  {  // the same document as writeChromeTrace's, checked on a slice of it
    RunTrace slice = trace;
    for (auto& events : slice.events) events.resize(5000);
    std::ostringstream written;
    writeChromeTrace(slice, written);
    if (Json::parse(written.str()) != traceDocument(slice)) {
      state.SkipWithError("traceDocument differs from writeChromeTrace's document");
      return;
    }
  }
  int64_t bytes = 0;
  for (auto _ : state) {
    CountingBuf buf;
    std::ostream out(&buf);
    out << traceDocument(trace) << '\n';
    bytes += buf.bytes;
  }
  state.SetItemsProcessed(state.iterations() * 1'000'000);
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_WriteTraceNlohmann1M)->Unit(benchmark::kMillisecond);

// Copying writeChromeTrace's output once: no serializer can beat it.
void BM_MemcpyTrace1M(benchmark::State& state) {
  std::ostringstream out;
  writeChromeTrace(millionEventTrace(), out);
  const std::string json = out.str();
  std::string copy(json.size(), '\0');
  for (auto _ : state) {
    std::memcpy(copy.data(), json.data(), json.size());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * 1'000'000);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(json.size()));
}
BENCHMARK(BM_MemcpyTrace1M)->Unit(benchmark::kMillisecond);

void BM_ReadChromeTrace1M(benchmark::State& state) {
  std::ostringstream out;
  writeChromeTrace(millionEventTrace(), out);
  const std::string json = out.str();
  for (auto _ : state) {
    RunTrace trace = readChromeTrace(json, "bench");
    benchmark::DoNotOptimize(trace.events.data());
  }
  state.SetItemsProcessed(state.iterations() * 1'000'000);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(json.size()));
}
BENCHMARK(BM_ReadChromeTrace1M)->Unit(benchmark::kMillisecond);

// nlohmann's SAX parser over the same text with a handler that keeps nothing:
// the floor under readChromeTrace while it parses with the library.
struct DiscardingSax : nlohmann::json_sax<Json> {
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

void BM_NlohmannSaxParse1M(benchmark::State& state) {
  std::ostringstream out;
  writeChromeTrace(millionEventTrace(), out);
  const std::string json = out.str();
  for (auto _ : state) {
    DiscardingSax sax;
    benchmark::DoNotOptimize(Json::sax_parse(json.begin(), json.end(), &sax));
  }
  state.SetItemsProcessed(state.iterations() * 1'000'000);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(json.size()));
}
BENCHMARK(BM_NlohmannSaxParse1M)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
