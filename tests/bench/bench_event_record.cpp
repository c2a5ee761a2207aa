// Cost of instrumentation: EventLog::record from one producer, from 2 or 4
// producers sharing one rank's log (target <= 50 ns per event), and the Chrome
// trace writer/reader on 1M events. With threads, Time is elapsed wall time per
// event over all threads. Logs are recycled every 1M events so a long run does
// not hold gigabytes; chunk allocation stays inside the timed cost.
#include <benchmark/benchmark.h>

#include <memory>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

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

}  // namespace

BENCHMARK_MAIN();
