// The path a --launch processes run's events take to the launcher: rank
// producers send batches of 64-byte records over ZeroMQ (PUSH, TCP loopback),
// the collector checks each message (decodeWireMessage) and records every
// event into its rank's EventLog, as RemoteRankFeed::events does.
//   throughput: 8 producer threads (one per rank process), events per second
//               taken by one collector; beside it the same bytes through
//               ZeroMQ without the check and record, and memcpy of them into
//               warm memory and into fresh memory (the limits on this
//               machine: the logs' pages are fresh).
//   latency:    a producer records events with their time, a forwarder drains
//               its log every 10 ms (the worker's cadence) and sends; the
//               collector measures record -> its store, p50 / p99 / max.
// Prints one table; no timing is asserted anywhere.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "launch/wire_format.h"
#include "trace/event_log.h"
#include "bench_figures.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {
constexpr int kRanks = 8;
constexpr size_t kBatch = 16384;  // the worker's batch
constexpr uint64_t kRun = 7;

Event sample(int rank, int64_t i) {
  Event e;
  e.rank = static_cast<int16_t>(rank);
  e.begin_ns = i * 100;
  e.end_ns = i * 100 + 50;
  e.lane = Lane::Compute;
  e.kind = EventKind::Forward;
  return e;
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double threadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Throughput {
  double events_per_s = 0;
  double collector_cpu_ns_per_event = 0;  // the collector thread's own CPU time
};

// Through the collector at `bind` (tcp or ipc); check_and_record = false: ZeroMQ alone.
Throughput throughput(const std::string& bind, size_t batches_per_rank, bool check_and_record) {
  zmq::context_t context(2);
  zmq::socket_t pull(context, zmq::socket_type::pull);
  pull.set(zmq::sockopt::rcvhwm, 0);
  pull.bind(bind);
  const std::string endpoint = pull.get(zmq::sockopt::last_endpoint);
  std::vector<std::unique_ptr<EventLog>> logs;
  for (int r = 0; r < kRanks; ++r) logs.push_back(std::make_unique<EventLog>());
  std::vector<std::thread> producers;
  for (int r = 0; r < kRanks; ++r)
    producers.emplace_back([&, r] {
      zmq::socket_t push(context, zmq::socket_type::push);
      push.connect(endpoint);
      std::vector<Event> batch(kBatch);
      for (size_t i = 0; i < kBatch; ++i) batch[i] = sample(r, static_cast<int64_t>(i));
      const std::vector<uint8_t> header = wireHeader(WireKind::Events, r, kBatch, kRun);
      for (size_t b = 0; b < batches_per_rank; ++b) {
        push.send(zmq::buffer(header), zmq::send_flags::sndmore);
        push.send(zmq::buffer(batch), zmq::send_flags::none);
      }
    });
  const size_t total = batches_per_rank * kRanks;
  Clock::time_point start;
  double cpu_start = 0;
  for (size_t m = 0; m < total; ++m) {
    zmq::message_t h, p;
    (void)pull.recv(h);
    (void)pull.recv(p);
    if (m == 0) {  // after connect and the first message
      start = Clock::now();
      cpu_start = threadCpuSeconds();
    }
    if (!check_and_record) continue;
    const WireMessage msg = decodeWireMessage({h.data<uint8_t>(), h.size()}, {p.data<uint8_t>(), p.size()}, kRun,
                                              kRanks);
    logs[static_cast<size_t>(msg.rank)]->record(msg.events.data(), msg.events.size());
  }
  const double s = seconds(start, Clock::now());
  const double cpu = threadCpuSeconds() - cpu_start;
  for (std::thread& t : producers) t.join();
  const double events = static_cast<double>((total - 1) * kBatch);
  return {events / s, cpu / events * 1e9};
}

double memcpyEventsPerSecond() {
  std::vector<Event> a(kBatch * 64), b(kBatch * 64);
  const auto start = Clock::now();
  constexpr int kRounds = 20;
  for (int i = 0; i < kRounds; ++i) {
    std::memcpy(b.data(), a.data(), a.size() * sizeof(Event));
    a[static_cast<size_t>(i)].bytes = b[static_cast<size_t>(i) + 1].bytes;  // keep the copies
  }
  return static_cast<double>(kRounds) * static_cast<double>(a.size()) / seconds(start, Clock::now());
}

// The limit for filing events into memory no one has touched yet (what a
// collector's logs are): memcpy of `events` records into a fresh mapping,
// ordinary 4 KiB pages or advised huge pages (the block pool's). On a virtual
// machine the page faults, not the copy, set this.
double freshMemcpyEventsPerSecond(size_t events, bool huge_pages) {
  std::vector<Event> source(kBatch);
  const size_t bytes = events * sizeof(Event);
  const size_t align = size_t(2) << 20;
  void* raw = mmap(nullptr, bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return 0;
  char* to = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + align - 1) & ~(align - 1));
  if (huge_pages) madvise(to, bytes, MADV_HUGEPAGE);
  const auto start = Clock::now();
  for (size_t at = 0; at < bytes; at += kBatch * sizeof(Event))
    std::memcpy(to + at, source.data(), std::min(kBatch * sizeof(Event), bytes - at));
  const double s = seconds(start, Clock::now());
  munmap(raw, bytes + align);
  return static_cast<double>(events) / s;
}

struct Latency {
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
};

Latency latency(int events_per_ms, int run_ms) {
  zmq::context_t context;
  zmq::socket_t pull(context, zmq::socket_type::pull);
  pull.set(zmq::sockopt::rcvhwm, 0);
  pull.bind("tcp://127.0.0.1:*");
  const std::string endpoint = pull.get(zmq::sockopt::last_endpoint);
  EventLog source, store;
  std::atomic<bool> done{false};
  const auto origin = Clock::now();
  const auto now_ns = [&] { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin).count(); };
  std::thread producer([&] {
    for (int ms = 0; ms < run_ms; ++ms) {
      for (int i = 0; i < events_per_ms; ++i) {
        Event e = sample(0, 0);
        e.begin_ns = e.end_ns = now_ns();
        source.record(e);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    done.store(true);
  });
  std::thread forwarder([&] {
    zmq::socket_t push(context, zmq::socket_type::push);
    push.connect(endpoint);
    size_t cursor = 0;
    std::vector<Event> batch;
    bool last = false;
    while (!last) {
      last = done.load();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      batch.clear();
      cursor = source.readFrom(cursor, batch);
      for (size_t i = 0; i < batch.size(); i += kBatch) {
        const size_t n = std::min(kBatch, batch.size() - i);
        push.send(zmq::buffer(wireHeader(WireKind::Events, 0, static_cast<uint32_t>(n), kRun)), zmq::send_flags::sndmore);
        push.send(zmq::const_buffer(batch.data() + i, n * sizeof(Event)), zmq::send_flags::none);
      }
    }
    const uint8_t finished = 1;
    push.send(zmq::buffer(wireHeader(WireKind::Done, 0, 0, kRun)), zmq::send_flags::sndmore);
    push.send(zmq::const_buffer(&finished, 1), zmq::send_flags::none);
  });
  std::vector<int64_t> delays;
  while (true) {
    zmq::message_t h, p;
    (void)pull.recv(h);
    (void)pull.recv(p);
    const WireMessage m = decodeWireMessage({h.data<uint8_t>(), h.size()}, {p.data<uint8_t>(), p.size()}, kRun, 1);
    if (m.kind == WireKind::Done) break;
    store.record(m.events.data(), m.events.size());
    const int64_t at = now_ns();
    for (const Event& e : m.events) delays.push_back(at - e.begin_ns);
  }
  producer.join();
  forwarder.join();
  std::sort(delays.begin(), delays.end());
  const auto pct = [&](double q) { return delays[static_cast<size_t>(q * static_cast<double>(delays.size() - 1))] / 1e6; };
  return {pct(0.5), pct(0.99), delays.back() / 1e6};
}
}  // namespace

int main(int argc, char** argv) {
  const bench::BenchFigures figures(argc, argv);
  const size_t batches = 64;  // 8 ranks x 64 x 16384 = 8.4M events
  const std::string ipc = "ipc:///tmp/shardscope-bench-collector-" + std::to_string(getpid());
  std::printf("collector throughput, %d rank producers, %zu-event batches (M events/s; collector thread CPU ns/event)\n",
              kRanks, kBatch);
  for (const auto& [name, bind] : {std::pair<const char*, std::string>{"TCP loopback", "tcp://127.0.0.1:*"},
                                   std::pair<const char*, std::string>{"Unix socket (ipc)", ipc}}) {
    const Throughput collector = throughput(bind, batches, true);
    const Throughput transport = throughput(bind, batches, false);
    std::printf("  %-18s ZeroMQ + check + record %7.2f (%5.1f ns)   ZeroMQ alone %7.2f (%5.1f ns)\n", name,
                collector.events_per_s / 1e6, collector.collector_cpu_ns_per_event, transport.events_per_s / 1e6,
                transport.collector_cpu_ns_per_event);
    const bool tcp = bind.starts_with("tcp");
    figures.add(tcp ? "collector_tcp" : "collector_ipc", collector.events_per_s / 1e6, "M_events/s");
    figures.add(tcp ? "zeromq_tcp" : "zeromq_ipc", transport.events_per_s / 1e6, "M_events/s");
  }
  const double warm = memcpyEventsPerSecond();
  std::printf("  %-18s %7.2f M events/s (the limit in warm memory)\n", "memcpy", warm / 1e6);
  const size_t events = batches * kRanks * kBatch;
  const double fresh = freshMemcpyEventsPerSecond(events, false);
  std::printf("  %-18s %7.2f M events/s with 4 KiB pages, %.2f M with huge pages (the limit in fresh memory)\n",
              "memcpy to fresh", fresh / 1e6, freshMemcpyEventsPerSecond(events, true) / 1e6);
  figures.add("memcpy_warm", warm / 1e6, "M_events/s");
  figures.add("memcpy_fresh", fresh / 1e6, "M_events/s");
  const Latency l = latency(200, 2000);
  std::printf("latency record() -> collector's log, 200 events/ms for 2 s, 10 ms forwarding\n");
  std::printf("  p50 %.2f ms   p99 %.2f ms   max %.2f ms\n", l.p50_ms, l.p99_ms, l.max_ms);
  figures.add("latency_p99", l.p99_ms, "ms");
  return 0;
}
