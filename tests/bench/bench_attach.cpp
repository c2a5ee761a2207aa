// An inspector catching up on a served run (run --serve): a finished modeled
// run's events, read from its logs by the server, sent as 4,096-event batches
// over ZeroMQ (TCP loopback) and filed into the attached Run's logs — from
// hello to the last message. Beside it, in the same run: the server's read of
// the logs alone, and memcpy of the same bytes (this machine's limit). Timed
// from the attach to the last event filed on the inspector's side.
// Prints one table; no timing is asserted anywhere.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "attach/attach_client.h"
#include "attach/run_server.h"
#include "engine/run.h"
#include "bench_figures.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

int main(int argc, char** argv) {
  const bench::BenchFigures figures(argc, argv);
  const int steps = argc > 1 ? std::atoi(argv[1]) : 300;
  RunConfig c;
  c.strategy = Strategy::Zero3;
  c.ranks = 8;
  c.model.layers = 8;
  c.model.hidden = 64;
  c.batch = 16;
  c.steps = steps;
  c.clock = ClockKind::Modeled;
  Run served(c);
  const RunResult result = served.execute();
  size_t events = 0;
  for (int r = 0; r < c.ranks; ++r) events += served.eventLog(r).publishedCount();
  const double mib = static_cast<double>(events * sizeof(Event)) / (1024.0 * 1024.0);

  // The server's read of its logs, batch by batch, as it serves them.
  auto t0 = Clock::now();
  std::vector<Event> scratch;
  size_t read = 0;
  for (int r = 0; r < c.ranks; ++r)
    for (size_t cursor = 0; cursor < served.eventLog(r).publishedCount();) {
      scratch.clear();
      cursor = served.eventLog(r).readFrom(cursor, scratch, RunServer::kBatchEvents);
      read += scratch.size();
    }
  const double read_s = secondsSince(t0);

  // memcpy of the same bytes (into memory already touched).
  std::vector<Event> all = served.eventLog(0).snapshot();
  all.resize(events);
  std::vector<Event> copy(events);
  std::memcpy(copy.data(), all.data(), events * sizeof(Event));
  t0 = Clock::now();
  std::memcpy(copy.data(), all.data(), events * sizeof(Event));
  const double memcpy_s = secondsSince(t0);

  // Catching up: hello, description, every event, the results, the end.
  ServeOptions options;
  options.address = parseServeAddress("127.0.0.1:0", "--serve", true);
  RunServer server(served, options);
  server.start();
  t0 = Clock::now();
  AttachOptions attach;
  attach.address = parseServeAddress(server.endpoint(), "attach", false);
  AttachedRun attached = attachToRun(attach);
  attached.run->start();
  // Until the inspector's logs hold every event (its result, computed from
  // them at the end, is the Run's own work, not the transport's).
  size_t received = 0;
  while (received < events && secondsSince(t0) < 600) {
    received = 0;
    for (int r = 0; r < c.ranks; ++r) received += attached.run->eventLog(r).publishedCount();
    if (received < events) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const double catchup_s = secondsSince(t0);
  RunResult ended = result;
  server.finish(&ended, "");
  attached.run->wait();

  std::printf("attach catch-up: %zu events (%.1f MiB) of a %d-step zero3 run on %d ranks, %zu received\n", events, mib,
              steps, c.ranks, received);
  std::printf("  %-44s %12s %10s\n", "path", "events/s", "GiB/s");
  const auto row = [&](const char* what, size_t n, double s) {
    std::printf("  %-44s %12.3g %10.2f\n", what, static_cast<double>(n) / s,
                static_cast<double>(n * sizeof(Event)) / s / (1024.0 * 1024.0 * 1024.0));
  };
  row("inspector catch-up (serve, ZeroMQ, file)", received, catchup_s);
  row("server's read of the logs alone", read, read_s);
  row("memcpy of the same bytes (limit)", events, memcpy_s);
  std::printf("  catch-up / memcpy: %.3f\n", memcpy_s / catchup_s);
  figures.add("catchup", static_cast<double>(received) / catchup_s / 1e6, "M_events/s");
  figures.add("server_read", static_cast<double>(read) / read_s / 1e6, "M_events/s");
  figures.add("memcpy", static_cast<double>(events) / memcpy_s / 1e6, "M_events/s");
  return received == events ? 0 : 1;
}
