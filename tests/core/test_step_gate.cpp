// Stepping through a step: all ranks stop in lockstep before the same compute
// op; next op / unit / phase / step move them together; next action also stops
// at frees of gathered parameters and at collective launches; breakpoints stop
// on an op kind (a free, a launch) or a unit; the ledger at a stop shows the
// gathered parameters of the unit being computed; cancel works while stopped;
// a stepped modeled run writes the same trace as one run straight through.
// A worker process's gate hands every point to the launcher (and costs
// nothing when off); there the gate relay stops relayed ranks in lockstep,
// steps them, shows the ledgers they sent (the last to arrive asks the others
// for theirs then), and never hangs going away; it hears only connections
// with the run's client key (no key, or another key, gets no go).
#include <QtTest>

#include <atomic>
#include <chrono>
#include <thread>
#include <zmq.hpp>

#include <sstream>

#include "common/errors.h"
#include "engine/run.h"
#include "launch/gate_relay.h"
#include "launch/run_keys.h"
#include "launch/wire_format.h"
#include "launch/wire_socket.h"
#include "trace/chrome_trace_writer.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {

RunConfig zero3() {
  RunConfig c;
  c.strategy = Strategy::Zero3;
  c.ranks = 4;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 8;
  c.steps = 2;
  return c;
}

// Waits (bounded) for the next all-ranks stop after `after`; returns the points.
std::vector<GatePoint> nextStop(Run& run, uint64_t& after) {
  std::vector<GatePoint> points;
  uint64_t id = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline && !run.finished()) {
    if (run.gate().stopped(&points, &id) && id != after) {
      after = id;
      return points;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

// Records what a worker's gate hands over.
struct RecordingRemote final : RemoteGatePass {
  std::vector<std::pair<int, GatePoint>> passed;
  std::vector<int64_t> times;
  int settled_before = 0;
  int settles = 0;
  void pass(int rank, const GatePoint& point, int64_t now_ns, const RunControl&) override {
    settled_before += settles == static_cast<int>(passed.size()) + 1 ? 1 : 0;
    passed.push_back({rank, point});
    times.push_back(now_ns);
  }
};

// A worker's rank as the relay sees it: a DEALER that says where it is
// (with a ledger of `gathered` bytes) and waits for the go. False: no go in time.
bool arriveAndWait(zmq::socket_t& dealer, int rank, const GatePoint& point, int64_t gathered, uint64_t run_id,
                   const std::atomic<bool>* give_up = nullptr,
                   std::chrono::milliseconds wait = std::chrono::seconds(20)) {
  GateArrival a;
  a.point = point;
  a.now_ns = 1000 * (point.block + 1);
  a.current[static_cast<size_t>(Category::Gathered)] = gathered;
  a.peak = a.current;
  const std::vector<uint8_t> payload = gateArrivalPayload(a);
  const std::vector<uint8_t> header = wireHeader(WireKind::GateArrived, rank, uint32_t(payload.size()), run_id);
  dealer.send(zmq::buffer(header), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(payload), zmq::send_flags::none);
  const auto deadline = Clock::now() + wait;
  while (Clock::now() < deadline && !(give_up && give_up->load())) {
    zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(10));
    zmq::message_t h, p;
    if (receiveWireParts(dealer, h, p) == 2) {
      const WireMessage m = decodeWireMessage({h.data<uint8_t>(), h.size()}, {p.data<uint8_t>(), p.size()}, run_id, 2);
      if (m.kind == WireKind::GateGo && m.rank == rank) return true;
      if (m.kind == WireKind::GateAsk) {  // the ledger now: one byte more than at the arrival
        ++a.current[static_cast<size_t>(Category::Gathered)];
        a.peak = a.current;
        const std::vector<uint8_t> ledger = gateLedgerPayload(a);
        dealer.send(zmq::buffer(wireHeader(WireKind::GateLedger, rank, uint32_t(ledger.size()), run_id)),
                    zmq::send_flags::sndmore);
        dealer.send(zmq::buffer(ledger), zmq::send_flags::none);
      }
    }
  }
  return false;
}

void expectLockstep(const std::vector<GatePoint>& points) {
  QVERIFY(!points.empty());
  for (const GatePoint& p : points) QCOMPARE(p, points.front());
}

}  // namespace

class TestStepGate : public QObject {
  Q_OBJECT

 private slots:
  void stepsThroughAnFsdpStep() {
    Run run(zero3());
    run.gate().enable();
    run.gate().pause();
    run.start();
    uint64_t stop = 0;
    auto points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].kind, EventKind::Forward);  // the first op: the root's input projection
    QCOMPARE(points[0].block, 0);
    QCOMPARE(points[0].unit, 0);

    run.gate().step(StepMode::NextOp);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].kind, EventKind::Forward);
    QCOMPARE(points[0].unit, 1);  // block 0's unit
    // Stopped before unit 1 computes: its parameters are gathered on every rank.
    for (int r = 0; r < 4; ++r) QVERIFY(run.ledger(r).current[size_t(Category::Gathered)] > 0);

    run.gate().step(StepMode::NextUnit);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].unit, 2);

    run.gate().step(StepMode::NextPhase);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].kind, EventKind::Backward);
    QCOMPARE(points[0].step, 0);
    // Backward: the unit's full gradient exists next to its gathered params.
    run.gate().step(StepMode::NextUnit);
    points = nextStop(run, stop);
    QCOMPARE(points[0].kind, EventKind::Backward);
    for (int r = 0; r < 4; ++r) QVERIFY(run.ledger(r).current[size_t(Category::GradFull)] > 0);

    run.gate().step(StepMode::NextPhase);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].kind, EventKind::OptimizerStep);

    run.gate().step(StepMode::NextStep);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[0].step, 1);
    QCOMPARE(points[0].kind, EventKind::Forward);

    run.gate().resume();
    const RunResult r = run.wait();
    QCOMPARE(int(r.losses.size()), 2);
  }

  void breakpointsOnKindAndUnit() {
    Run run(zero3());
    run.gate().enable();
    run.gate().setBreakpoints({EventKind::OptimizerStep}, {3});
    run.start();
    uint64_t stop = 0;
    std::vector<std::pair<EventKind, int>> seen;
    for (int i = 0; i < 8; ++i) {
      const auto points = nextStop(run, stop);
      if (points.empty()) break;
      expectLockstep(points);
      seen.emplace_back(points[0].kind, points[0].unit);
      run.gate().resume();
    }
    run.wait();
    // Per step: unit 3 forward, unit 3 backward, the optimizer.
    const std::vector<std::pair<EventKind, int>> expected{
        {EventKind::Forward, 3}, {EventKind::Backward, 3}, {EventKind::OptimizerStep, -1},
        {EventKind::Forward, 3}, {EventKind::Backward, 3}, {EventKind::OptimizerStep, -1}};
    QCOMPARE(seen, expected);
  }

  void ddpStopsToo() {
    RunConfig c = zero3();
    c.strategy = Strategy::Ddp;
    Run run(c);
    run.gate().enable();
    run.gate().setBreakpoints({EventKind::Backward}, {});
    run.start();
    uint64_t stop = 0;
    int stops = 0;
    while (true) {
      const auto points = nextStop(run, stop);
      if (points.empty()) break;
      expectLockstep(points);
      ++stops;
      run.gate().resume();
      if (stops == 2 * 6) break;
    }
    run.wait();
    QCOMPARE(stops, 2 * 6);  // input, 4 blocks, head per step
  }

  void pauseFromAFreeRunStopsInLockstep() {
    // Running freely the ranks drift apart by an op or more; Pause must
    // still stop them all at one point (the furthest rank's next).
    for (int attempt = 0; attempt < 5; ++attempt) {
      RunConfig c = zero3();
      c.steps = 1000;
      Run run(c);
      run.gate().enable();
      run.start();
      while (run.stepsDone() < 1 && !run.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(attempt * 3));
      run.gate().pause();
      uint64_t stop = 0;
      expectLockstep(nextStop(run, stop));
      run.cancel();
      QVERIFY_THROWS_EXCEPTION(RunAborted, run.wait());
    }
  }

  void replicatedRanksStopTogether() {
    // 64 meta ranks are simulated once: the copies stop where rank 0 stops.
    RunConfig c = zero3();
    c.backend = Backend::Meta;
    c.clock = ClockKind::Modeled;
    c.ranks = 64;
    c.batch = 64;
    Run run(c);
    QVERIFY(run.replicated());
    run.gate().enable();
    run.gate().pause();
    run.start();
    uint64_t stop = 0;
    auto points = nextStop(run, stop);
    QCOMPARE(points.size(), size_t{64});
    expectLockstep(points);
    run.gate().step(StepMode::NextUnit);
    points = nextStop(run, stop);
    expectLockstep(points);
    QCOMPARE(points[63].unit, 1);
    run.gate().resume();
    QCOMPARE(int(run.wait().losses.size()), 2);
  }

  void stepByActionStopsAtFreesAndLaunches() {
    RunConfig c = zero3();
    c.prefetch = Prefetch::None;
    c.steps = 1;
    Run run(c);
    run.gate().enable();
    run.gate().pause();
    run.start();
    uint64_t stop = 0;
    std::vector<std::pair<EventKind, int>> seen;
    for (auto points = nextStop(run, stop); !points.empty(); points = nextStop(run, stop)) {
      expectLockstep(points);
      const GatePoint& p = points[0];
      seen.emplace_back(p.kind, p.unit);
      if (p.kind == EventKind::Free) {
        // Before the free the unit's gathered parameters are still there.
        for (int r = 0; r < 4; ++r) QVERIFY(run.ledger(r).current[size_t(Category::Gathered)] > 0);
      }
      run.gate().step(StepMode::NextAction);
    }
    run.wait();
    // The first pause is at the first compute op; then, without prefetch, each
    // unit's gather launch, its forward and its free (unit 1 first).
    const auto at = [&](EventKind k, int unit) {
      return std::find(seen.begin(), seen.end(), std::make_pair(k, unit)) - seen.begin();
    };
    QVERIFY(at(EventKind::AllGather, 1) < at(EventKind::Forward, 1));
    QVERIFY(at(EventKind::Forward, 1) < at(EventKind::Free, 1));
    QVERIFY(at(EventKind::Free, 1) < at(EventKind::AllGather, 2));
    QVERIFY(at(EventKind::ReduceScatter, 4) < static_cast<std::ptrdiff_t>(seen.size()));
    const auto count = [&](EventKind k) { return std::count_if(seen.begin(), seen.end(), [k](const auto& e) { return e.first == k; }); };
    QCOMPARE(count(EventKind::ReduceScatter), 5);  // every unit's gradients, root included
    QCOMPARE(count(EventKind::Free), 10);          // forward (4 blocks + root) and backward (5)
    QCOMPARE(count(EventKind::OptimizerStep), 1);

    // A breakpoint on frees stops only there; by op steps over them.
    Run frees(c);
    frees.gate().enable();
    frees.gate().setBreakpoints(breakEventKinds({BreakOp::Free}), {});
    frees.start();
    stop = 0;
    int free_stops = 0;
    for (auto points = nextStop(frees, stop); !points.empty(); points = nextStop(frees, stop)) {
      QCOMPARE(points[0].kind, EventKind::Free);
      ++free_stops;
      frees.gate().step(StepMode::NextOp);
      points = nextStop(frees, stop);
      if (points.empty()) break;
      QVERIFY(isComputeGate(points[0].kind) || points[0].kind == EventKind::Free);
      if (points[0].kind == EventKind::Free) ++free_stops;
      frees.gate().resume();
    }
    frees.wait();
    QVERIFY(free_stops >= 5);

    // ZeRO: the all-gather of the updated parameters is launched after the optimizer.
    RunConfig z = zero3();
    z.strategy = Strategy::Zero1;
    z.steps = 1;
    Run zero(z);
    zero.gate().enable();
    zero.gate().setBreakpoints(breakEventKinds({BreakOp::AllGather, BreakOp::OptimizerStep}), {});
    zero.start();
    stop = 0;
    std::vector<EventKind> kinds;
    for (auto points = nextStop(zero, stop); !points.empty(); points = nextStop(zero, stop)) {
      kinds.push_back(points[0].kind);
      zero.gate().resume();
    }
    zero.wait();
    QCOMPARE(kinds, (std::vector<EventKind>{EventKind::OptimizerStep, EventKind::AllGather}));
  }

  void steppedModeledRunWritesTheSameTrace() {
    // Gate points cost nothing on the modeled clock: a run stepped by action
    // through its first step writes the trace a straight run writes.
    RunConfig c = zero3();
    c.clock = ClockKind::Modeled;
    c.profile = "h100-sxm";
    c.prefetch = Prefetch::None;
    const auto traceText = [](Run& run) {
      std::ostringstream out;
      writeChromeTrace(run.trace(), out);
      return out.str();
    };
    Run straight(c);
    straight.execute();
    Run stepped(c);
    stepped.gate().enable();
    stepped.gate().pause();
    stepped.start();
    uint64_t stop = 0;
    for (int i = 0; i < 40; ++i) {
      if (nextStop(stepped, stop).empty()) break;
      stepped.gate().step(StepMode::NextAction);
    }
    stepped.gate().resume();
    stepped.wait();
    QVERIFY(traceText(stepped) == traceText(straight));
  }

  void aWorkersGateHandsEveryPointToTheLauncher() {
    RunControl control;
    StepGate gate(2, control);
    RecordingRemote remote;
    gate.setRemote(&remote);
    gate.pass(0, {EventKind::Forward, 0, 0, -1}, 5);
    QVERIFY(remote.passed.empty());  // a disabled gate costs nothing, remote or not
    gate.enable();
    gate.pause();  // the worker's own controller side is not what stops it
    gate.pass(1, {EventKind::Forward, 0, 2, -1}, 7, [&] { ++remote.settles; });
    gate.pass(0, {EventKind::Free, 0, 2, 1}, 9);
    QCOMPARE(remote.passed.size(), size_t{2});
    QCOMPARE(remote.passed[0].first, 1);
    QCOMPARE(remote.passed[0].second, (GatePoint{EventKind::Forward, 0, 2, -1}));
    QCOMPARE(remote.passed[1].second.kind, EventKind::Free);
    QCOMPARE(remote.times, (std::vector<int64_t>{7, 9}));
    QCOMPARE(remote.settled_before, 1);  // what the views read is complete before the launcher hears of it
    QVERIFY(!gate.stopped());
  }

  void passIfFreeNeverBlocksAndCountsOnce() {
    RunControl control;
    StepGate gate(2, control);
    gate.enable();
    QVERIFY(gate.passIfFree(0, {EventKind::Forward, 0, 0, -1}, 1));  // running freely: passed
    QVERIFY(gate.passIfFree(1, {EventKind::Forward, 0, 0, -1}, 1));
    gate.pause();  // stops every rank at compute pass 2
    QVERIFY(gate.passIfFree(0, {EventKind::Free, 0, 0, 0}, 2));  // a free is no pause stop
    QVERIFY(!gate.passIfFree(0, {EventKind::Forward, 0, 1, -1}, 3));
    QVERIFY(!gate.passIfFree(0, {EventKind::Forward, 0, 1, -1}, 3));  // refused points are not counted
    QVERIFY(!gate.passIfFree(1, {EventKind::Forward, 0, 1, -1}, 3));
    std::thread r0([&] { gate.pass(0, {EventKind::Forward, 0, 1, -1}, 3); });
    std::thread r1([&] { gate.pass(1, {EventKind::Forward, 0, 1, -1}, 4); });
    std::vector<GatePoint> points;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!gate.stopped(&points) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    QCOMPARE(points, (std::vector<GatePoint>(2, GatePoint{EventKind::Forward, 0, 1, -1})));
    gate.resume();
    r0.join();
    r1.join();
  }

  void relayedRanksStopAtTheLaunchersGate() {
    RunConfig c = zero3();
    c.ranks = 2;
    c.launch = Launch::Processes;
    Run launcher(c, kRanksElsewhere);
    launcher.setRemoteRanks([](RemoteRankFeed&) {});  // never started: its ledgers are the relayed ones
    launcher.gate().enable();
    launcher.gate().pause();
    RemoteRankFeed feed(launcher);
    constexpr uint64_t kRunId = 77;
    const RunKeys keys = makeRunKeys();
    auto relay = std::make_unique<GateRelay>(feed, "127.0.0.1", kRunId, keys);
    // Read here, not in the rank threads: the test resets relay while they run
    // (ZeroMQ's own ordering is invisible to ThreadSanitizer).
    const std::string endpoint = relay->endpoint();
    // Each rank: forward of blocks 0..3 of step 0, as a worker's rank passes them.
    std::atomic<int> gone[2] = {0, 0};
    std::atomic<bool> lost{false}, give_up{false};
    zmq::context_t context;
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
      ranks.emplace_back([&, r] {
        zmq::socket_t dealer(context, zmq::socket_type::dealer);
        dealer.set(zmq::sockopt::linger, 0);
        secureAsRunClient(dealer, keys);
        dealer.connect(endpoint);
        for (int b = 0; b < 4; ++b) {
          if (!arriveAndWait(dealer, r, {EventKind::Forward, 0, b, -1}, 100 * (b + 1) + r, kRunId, &give_up)) {
            lost = true;
            return;
          }
          ++gone[r];
        }
      });
    uint64_t stop = 0;
    std::vector<GatePoint> points;
    std::vector<int64_t> times;
    const auto nextRelayedStop = [&] {
      const auto deadline = Clock::now() + std::chrono::seconds(20);
      uint64_t id = 0;
      while (Clock::now() < deadline) {
        if (launcher.gate().stopped(&points, &id, &times) && id != stop) {
          stop = id;
          return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return false;
    };
    QVERIFY(nextRelayedStop());
    expectLockstep(points);
    QCOMPARE(points[0], (GatePoint{EventKind::Forward, 0, 0, -1}));
    QCOMPARE(times, (std::vector<int64_t>{1000, 1000}));
    // The last rank to arrive asked the other for its ledger now (one byte more in this test).
    const auto gathered = [&](int r) { return launcher.ledger(r).current[static_cast<size_t>(Category::Gathered)]; };
    QCOMPARE(gathered(0) + gathered(1), 100 + 101 + 1);
    QVERIFY(gathered(1) == 101 || gathered(1) == 102);
    QCOMPARE(gone[0].load() + gone[1].load(), 0);
    launcher.gate().step(StepMode::NextOp);
    QVERIFY(nextRelayedStop());
    expectLockstep(points);
    QCOMPARE(points[1].block, 1);
    QCOMPARE(gathered(0) + gathered(1), 200 + 201 + 1);
    QCOMPARE(gone[0].load(), 1);
    launcher.gate().step(StepMode::NextOp);
    QVERIFY(nextRelayedStop());
    QCOMPARE(points[0].block, 2);
    // Going away while the ranks wait at a stop returns at once (its ranks are gone).
    const auto t0 = Clock::now();
    relay.reset();
    QVERIFY(std::chrono::duration<double>(Clock::now() - t0).count() < 2.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    give_up = true;
    for (std::thread& t : ranks) t.join();
    QVERIFY(lost.load());  // no go comes from a relay that is gone
    QVERIFY(gone[0].load() >= 2);
  }

  void aReleasedRelayLetsEveryRankGo() {
    RunConfig c = zero3();
    c.ranks = 2;
    c.launch = Launch::Processes;
    Run launcher(c, kRanksElsewhere);
    launcher.setRemoteRanks([](RemoteRankFeed&) {});
    launcher.gate().enable();
    launcher.gate().setBreakpoints({EventKind::Backward}, {});
    RemoteRankFeed feed(launcher);
    const RunKeys keys = makeRunKeys();
    GateRelay relay(feed, "127.0.0.1", 5, keys);
    zmq::context_t context;
    std::atomic<int> passed{0};
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
      ranks.emplace_back([&, r] {
        zmq::socket_t dealer(context, zmq::socket_type::dealer);
        dealer.set(zmq::sockopt::linger, 0);
        secureAsRunClient(dealer, keys);
        dealer.connect(relay.endpoint());
        for (EventKind k : {EventKind::Forward, EventKind::Backward, EventKind::Backward})
          passed += arriveAndWait(dealer, r, {k, 0, 0, -1}, 0, 5) ? 1 : 0;
      });
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (!launcher.gate().stopped() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    QVERIFY(launcher.gate().stopped());  // the breakpoint on backward
    QCOMPARE(passed.load(), 2);
    relay.releaseAll();  // a rank died: the others go on, breakpoints or not
    for (std::thread& t : ranks) t.join();
    QCOMPARE(passed.load(), 6);
  }

  // Another account that reads a worker's command line knows the relay's
  // address and the run id: without the run's client key it gets no go and
  // its arrivals never reach the gate (its ledger is not shown).
  void theRelayHearsOnlyTheRunsKey() {
    RunConfig c = zero3();
    c.ranks = 2;
    c.launch = Launch::Processes;
    Run launcher(c, kRanksElsewhere);
    launcher.setRemoteRanks([](RemoteRankFeed&) {});
    launcher.gate().enable();  // no stop: an arrival heard is passed at once
    RemoteRankFeed feed(launcher);
    constexpr uint64_t kRunId = 9;
    const RunKeys keys = makeRunKeys();
    GateRelay relay(feed, "127.0.0.1", kRunId, keys);
    zmq::context_t context;
    const auto attempt = [&](const RunKeys* as, int64_t gathered) {
      zmq::socket_t dealer(context, zmq::socket_type::dealer);
      dealer.set(zmq::sockopt::linger, 0);
      if (as) secureAsRunClient(dealer, *as);
      dealer.connect(relay.endpoint());
      return arriveAndWait(dealer, 1, {EventKind::Forward, 0, 0, -1}, gathered, kRunId, nullptr,
                           std::chrono::milliseconds(1500));
    };
    const auto gathered = [&] { return launcher.ledger(1).current[static_cast<size_t>(Category::Gathered)]; };
    QVERIFY(!attempt(nullptr, 111));  // plain ZMTP, no key at all
    RunKeys stranger = makeRunKeys();
    stranger.server_public = keys.server_public;  // even knowing the relay's public key
    QVERIFY(!attempt(&stranger, 222));
    QCOMPARE(gathered(), 0);  // neither arrival reached the run
    QVERIFY(attempt(&keys, 333));  // the run's own worker
    QCOMPARE(gathered(), 333);
  }

  void cancelWhileStopped() {
    Run run(zero3());
    run.gate().enable();
    run.gate().pause();
    run.start();
    uint64_t stop = 0;
    QVERIFY(!nextStop(run, stop).empty());
    const auto t0 = Clock::now();
    run.cancel();
    QVERIFY_THROWS_EXCEPTION(RunAborted, run.wait());
    QVERIFY(std::chrono::duration<double>(Clock::now() - t0).count() < 2.0);
  }
};

QTEST_APPLESS_MAIN(TestStepGate)
#include "test_step_gate.moc"
