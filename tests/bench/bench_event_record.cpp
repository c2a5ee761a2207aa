// Cost of instrumentation: EventLog::record from one producer and from five
// producers sharing one rank's log (its host thread and four streams; target
// <= 10 ns per event either way), beside the design it replaced (one shared
// atomic slot counter, kept below as SharedCounterEventLog so one run gives
// the ratio), and the Chrome trace writer/reader on 1M events. The writer is
// compared with the same document built as an nlohmann::ordered_json and
// dumped (what the trace sink would cost on the JSON library) and with memcpy
// of its bytes (the limit). With threads, Time is elapsed wall time per event
// over all threads and CPU is the CPU time each event cost its thread. Logs are
// recycled every 1M events so a long run does not hold gigabytes; chunk
// allocation stays inside the timed cost.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <streambuf>
#include <string>
#include <type_traits>
#include <vector>

#include "config/config_json.h"
#include "common/json_tree.h"
#include "trace/chrome_trace_reader.h"
#include "trace/chrome_trace_writer.h"
#include "trace/event_log.h"

using namespace shardscope;

namespace {

constexpr int64_t kRecycleEvents = 1 << 20;
constexpr int kRankThreads = 5;  // a rank's host thread and its four streams
// Tracy's published figure per zone (a begin and an end), not measured here.
constexpr const char* kTracyLabel = "Tracy, published: 2.25 ns per zone";

// The log before per-thread buffers: every record claims its slot with one
// fetch_add on a counter all producers share, then publishes a ready flag.
class SharedCounterEventLog {
 public:
  static constexpr size_t kChunkEvents = EventLog::kChunkEvents;
  static constexpr size_t kMaxChunks = EventLog::kMaxChunks;

  SharedCounterEventLog() : m_chunks(new std::atomic<Chunk*>[kMaxChunks]) {
    for (size_t i = 0; i < kMaxChunks; ++i) m_chunks[i].store(nullptr, std::memory_order_relaxed);
  }
  ~SharedCounterEventLog() {
    for (size_t i = 0; i < kMaxChunks; ++i) std::free(m_chunks[i].load(std::memory_order_relaxed));
  }

  void record(const Event& event) {
    const size_t slot = m_next.fetch_add(1, std::memory_order_relaxed);
    const size_t chunk_index = slot / kChunkEvents;
    if (chunk_index >= kMaxChunks) {
      m_dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    Chunk* chunk = chunkFor(chunk_index);
    if (!chunk) {
      m_dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const size_t i = slot % kChunkEvents;
    chunk->events[i] = event;
    chunk->ready[i].store(1, std::memory_order_release);
    if (i == kChunkEvents / 2 && chunk_index + 1 < kMaxChunks) chunkFor(chunk_index + 1);
  }

 private:
  struct Chunk {
    Event events[kChunkEvents];
    std::atomic<uint8_t> ready[kChunkEvents];
  };
  Chunk* chunkFor(size_t chunk_index) {
    Chunk* chunk = m_chunks[chunk_index].load(std::memory_order_acquire);
    if (chunk) return chunk;
    auto* fresh = static_cast<Chunk*>(std::calloc(1, sizeof(Chunk)));
    if (!fresh) return nullptr;
    Chunk* expected = nullptr;
    if (m_chunks[chunk_index].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) return fresh;
    std::free(fresh);
    return expected;
  }

  std::atomic<size_t> m_next{0};
  std::atomic<uint64_t> m_dropped{0};
  std::unique_ptr<std::atomic<Chunk*>[]> m_chunks;
};

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

template <class Log>
void labelDesign(benchmark::State& state) {
  if constexpr (std::is_same_v<Log, EventLog>) state.SetLabel(kTracyLabel);
  else state.SetLabel("shared atomic counter (the previous log)");
}

template <class Log>
void BM_RecordOneThread(benchmark::State& state) {
  auto log = std::make_unique<Log>();
  int64_t i = 0;
  for (auto _ : state) {
    log->record(sampleEvent(i));
    if (++i % kRecycleEvents == 0) {
      state.PauseTiming();
      log = std::make_unique<Log>();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
  labelDesign<Log>(state);
}
BENCHMARK_TEMPLATE(BM_RecordOneThread, EventLog);
BENCHMARK_TEMPLATE(BM_RecordOneThread, SharedCounterEventLog);

// The floor: each event stored into the next slot of a preallocated array
// of 1M events (64 MB, so not in cache, like a log's chunks).
void BM_StoreFloor(benchmark::State& state) {
  std::vector<Event> slots(static_cast<size_t>(kRecycleEvents));
  int64_t i = 0;
  for (auto _ : state) {
    slots[static_cast<size_t>(i & (kRecycleEvents - 1))] = sampleEvent(i);
    benchmark::ClobberMemory();
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StoreFloor);

// A rank's threads into its one log. The iteration count is fixed so the
// shared log stays bounded (threads x 1M events).
template <class Log>
std::unique_ptr<Log> g_shared_log;
template <class Log>
void setupSharedLog(const benchmark::State&) { g_shared_log<Log> = std::make_unique<Log>(); }
template <class Log>
void teardownSharedLog(const benchmark::State&) { g_shared_log<Log>.reset(); }

template <class Log>
void BM_RecordSharedLog(benchmark::State& state) {
  Log& log = *g_shared_log<Log>;
  int64_t i = 0;
  for (auto _ : state) log.record(sampleEvent(i++));
  state.SetItemsProcessed(state.iterations());
  labelDesign<Log>(state);
}
BENCHMARK_TEMPLATE(BM_RecordSharedLog, EventLog)
    ->Threads(kRankThreads)
    ->Iterations(kRecycleEvents)
    ->UseRealTime()
    ->Setup(setupSharedLog<EventLog>)
    ->Teardown(teardownSharedLog<EventLog>);
BENCHMARK_TEMPLATE(BM_RecordSharedLog, SharedCounterEventLog)
    ->Threads(kRankThreads)
    ->Iterations(kRecycleEvents)
    ->UseRealTime()
    ->Setup(setupSharedLog<SharedCounterEventLog>)
    ->Teardown(teardownSharedLog<SharedCounterEventLog>);

// The same threads, each into its own log (one rank per thread): the gap to
// BM_RecordSharedLog is what sharing a log costs.
template <class Log>
std::vector<std::unique_ptr<Log>> g_rank_logs;
template <class Log>
void setupRankLogs(const benchmark::State& state) {
  g_rank_logs<Log>.clear();
  for (int t = 0; t < state.threads(); ++t) g_rank_logs<Log>.push_back(std::make_unique<Log>());
}
template <class Log>
void teardownRankLogs(const benchmark::State&) { g_rank_logs<Log>.clear(); }

template <class Log>
void BM_RecordLogPerThread(benchmark::State& state) {
  Log& log = *g_rank_logs<Log>[static_cast<size_t>(state.thread_index())];
  int64_t i = 0;
  for (auto _ : state) log.record(sampleEvent(i++));
  state.SetItemsProcessed(state.iterations());
  labelDesign<Log>(state);
}
BENCHMARK_TEMPLATE(BM_RecordLogPerThread, EventLog)
    ->Threads(kRankThreads)
    ->Iterations(kRecycleEvents)
    ->UseRealTime()
    ->Setup(setupRankLogs<EventLog>)
    ->Teardown(teardownRankLogs<EventLog>);
BENCHMARK_TEMPLATE(BM_RecordLogPerThread, SharedCounterEventLog)
    ->Threads(kRankThreads)
    ->Iterations(kRecycleEvents)
    ->UseRealTime()
    ->Setup(setupRankLogs<SharedCounterEventLog>)
    ->Teardown(teardownRankLogs<SharedCounterEventLog>);

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

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // The first write to a fresh page is the kernel's cost (on a virtual machine
  // up to ~20 us per 4 KB page, 300 ns per event, for either log), and whether a
  // run pays it depends on when glibc hands freed chunks back to the OS. Keep
  // freed chunks in one heap and touch it once up front, so the record
  // benchmarks time the logs' own work and their chunk allocation.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_ARENA_MAX, 1);
  {
    EventLog warm;
    for (int64_t i = 0; i < (kRankThreads + 1) * kRecycleEvents; ++i) warm.record(sampleEvent(i));
  }
  std::printf("Reference, not measured: %s\n", kTracyLabel);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
