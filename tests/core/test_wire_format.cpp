// The messages rank processes send their collector: what the sender encodes
// decodes to the same records, and every kind of bad message (another
// program's bytes, another run, another version or byte order, a rank outside
// the run, a payload of the wrong size, events with impossible fields, a
// malformed result) is one WireError naming what is wrong.
#include <QtTest>

#include <cstring>

#include "launch/rank_result_json.h"
#include "launch/wire_format.h"

using namespace shardscope;

namespace {
constexpr uint64_t kRun = 42;

std::vector<uint8_t> eventsPayload(const std::vector<Event>& events) {
  std::vector<uint8_t> p(events.size() * sizeof(Event));
  std::memcpy(p.data(), events.data(), p.size());
  return p;
}

Event gatherEvent(int rank) {
  Event e;
  e.rank = static_cast<int16_t>(rank);
  e.kind = EventKind::AllGather;
  e.lane = Lane::Gather;
  e.begin_ns = 100;
  e.end_ns = 250;
  e.bytes = 4096;
  return e;
}

QString refusal(const std::vector<uint8_t>& header, const std::vector<uint8_t>& payload, int ranks = 4) {
  try {
    decodeWireMessage(header, payload, kRun, ranks);
  } catch (const WireError& e) {
    return QString::fromStdString(e.what());
  }
  return "accepted";
}

template <class T>
void poke(std::vector<uint8_t>& bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}
}  // namespace

class TestWireFormat : public QObject {
  Q_OBJECT

 private slots:
  void eachKindRoundTrips() {
    const std::vector<Event> events = {gatherEvent(2), gatherEvent(2)};
    const std::vector<uint8_t> payload = eventsPayload(events);  // decoded events view it
    WireMessage m = decodeWireMessage(wireHeader(WireKind::Events, 2, 2, kRun), payload, kRun, 4);
    QCOMPARE(int(m.kind), int(WireKind::Events));
    QCOMPARE(m.rank, 2);
    QCOMPARE(m.events.size(), size_t{2});
    QCOMPARE(std::memcmp(m.events.data(), events.data(), 2 * sizeof(Event)), 0);

    m = decodeWireMessage(wireHeader(WireKind::Loss, 1, 0, kRun), lossPayload(7, 2.25), kRun, 4);
    QCOMPARE(m.step, 7);
    QCOMPARE(m.loss, 2.25);

    const std::vector<float> w = {1.f, -2.f, 0.5f};
    m = decodeWireMessage(wireHeader(WireKind::Master, 0, 3, kRun), masterPayload(10, w), kRun, 4);
    QCOMPARE(m.offset, int64_t{10});
    QCOMPARE(m.master, w);

    RankResult r;
    r.ledger.peak[3] = 123;
    r.ledger.model_state_peak = 77;
    r.comm_bytes.all_gather = 5;
    r.fire_order = {2, 1, 0};
    r.unit_order = {{"all_gather", 0}, {"forward", 0}};
    r.tp_forward_bytes = {8, 9};
    r.activation_bytes_per_layer = 4321;
    const std::string json = rankResultJson(r, 6);
    const std::vector<uint8_t> text(json.begin(), json.end());
    m = decodeWireMessage(wireHeader(WireKind::Result, 3, static_cast<uint32_t>(text.size()), kRun), text, kRun, 4);
    int64_t padding = 0;
    const RankResult back = parseRankResultJson(m.text, &padding);
    QCOMPARE(padding, int64_t{6});
    QCOMPARE(back.ledger.peak[3], int64_t{123});
    QCOMPARE(back.ledger.model_state_peak, int64_t{77});
    QCOMPARE(back.comm_bytes.all_gather, int64_t{5});
    QCOMPARE(back.fire_order, r.fire_order);
    QCOMPARE(back.unit_order, r.unit_order);
    QCOMPARE(back.tp_forward_bytes, r.tp_forward_bytes);
    QCOMPARE(back.activation_bytes_per_layer, int64_t{4321});
  }

  void badHeadersAreRefused() {
    const std::vector<uint8_t> done = {1};
    std::vector<uint8_t> h = wireHeader(WireKind::Done, 0, 0, kRun);
    QVERIFY(refusal(h, done) == "accepted");
    QVERIFY(refusal({h.begin(), h.begin() + 31}, done).contains("header: 31 bytes, must be 32"));
    std::vector<uint8_t> bad = h;
    poke<uint32_t>(bad, 0, 0x12345678);
    QVERIFY(refusal(bad, done).contains("magic"));
    bad = h;
    poke<uint16_t>(bad, 6, 0x0201);
    QVERIFY(refusal(bad, done).contains("byte order"));
    bad = h;
    poke<uint16_t>(bad, 4, 2);
    QVERIFY(refusal(bad, done).contains("version 2, this build reads version 1"));
    QVERIFY(refusal(wireHeader(WireKind::Done, 0, 0, kRun + 1), done).contains("another run"));
    QVERIFY(refusal(wireHeader(WireKind::Done, 4, 0, kRun), done).contains("rank 4 must be in 0..3"));
    QVERIFY(refusal(wireHeader(WireKind::Done, -1, 0, kRun), done).contains("rank -1"));
    bad = h;
    poke<uint16_t>(bad, 8, 99);
    QVERIFY(refusal(bad, done).contains("kind 99 must be 1..20"));
  }

  void badPayloadsAreRefused() {
    QVERIFY(refusal(wireHeader(WireKind::Events, 1, 2, kRun), eventsPayload({gatherEvent(1)}))
                .contains("events message: 64 bytes, must be 128"));
    QVERIFY(refusal(wireHeader(WireKind::Events, 1, 1, kRun), eventsPayload({gatherEvent(2)}))
                .contains("rank 2 must be the sender's rank 1"));
    Event e = gatherEvent(1);
    e.kind = static_cast<EventKind>(200);
    QVERIFY(refusal(wireHeader(WireKind::Events, 1, 1, kRun), eventsPayload({e})).contains("kind 200 must be below"));
    e = gatherEvent(1);
    e.lane = static_cast<Lane>(9);
    QVERIFY(refusal(wireHeader(WireKind::Events, 1, 1, kRun), eventsPayload({e})).contains("lane 9"));
    e = gatherEvent(1);
    e.end_ns = e.begin_ns - 1;
    QVERIFY(refusal(wireHeader(WireKind::Events, 1, 1, kRun), eventsPayload({e})).contains("end_ns"));
    QVERIFY(refusal(wireHeader(WireKind::Loss, 0, 0, kRun), lossPayload(-1, 1.0)).contains("step -1"));
    QVERIFY(refusal(wireHeader(WireKind::Loss, 0, 0, kRun), {1, 2, 3}).contains("loss message: 3 bytes, must be 16"));
    QVERIFY(refusal(wireHeader(WireKind::Master, 0, 5, kRun), masterPayload(0, std::vector<float>(4)))
                .contains("master message"));
    QVERIFY(refusal(wireHeader(WireKind::Done, 0, 0, kRun), {2}).contains("outcome must be 0"));
    RunTrace::NodeClock clock{1, 2, 2, 1500, 16};
    QCOMPARE(refusal(wireHeader(WireKind::NodeClock, 2, 0, kRun), nodeClockPayload(clock)), QString("accepted"));
    clock.first_rank = 3;
    QVERIFY(refusal(wireHeader(WireKind::NodeClock, 2, 0, kRun), nodeClockPayload(clock))
                .contains("ranks 3 + 2 must lie in 0..3"));
    clock = {0, 0, 1, 1500, 16};
    QVERIFY(refusal(wireHeader(WireKind::NodeClock, 0, 0, kRun), nodeClockPayload(clock)).contains("node 0 must be"));
    QVERIFY(refusal(wireHeader(WireKind::Failed, 0, 10, kRun), {'a'}).contains("text message: 1 bytes, must be 10"));
  }

  void badResultsAreRefused() {
    int64_t padding = 0;
    const auto refused = [&](const std::string& text) -> QString {
      try {
        parseRankResultJson(text, &padding);
      } catch (const WireError& e) {
        return QString::fromStdString(e.what());
      }
      return "accepted";
    };
    QVERIFY(refused("{").contains("not JSON"));
    QVERIFY(refused("{}").contains("'ledger_current' is missing"));
    std::string good = rankResultJson(RankResult{}, 0);
    QCOMPARE(refused(good), QString("accepted"));
    std::string bad = good;
    bad.replace(bad.find("\"fire_order\":[]"), 15, "\"fire_order\":[\"x\"]");
    QVERIFY(refused(bad).contains("'fire_order' must hold integers"));
    bad = good;
    bad.replace(bad.find("\"ledger_peak\":["), 15, "\"ledger_peak\":[1,");
    QVERIFY(refused(bad).contains("'ledger_peak' must be an array of 10 integers"));
  }

  // The attach protocol's kinds (a served run and its inspectors): rank -1,
  // every field checked, padding zero, and each re-encodes to its bytes.
  void attachKindsRoundTripAndRefuse() {
    StepCommand c{StepCommandOp::Breakpoints};
    c.kinds = {EventKind::Forward, EventKind::OptimizerStep};
    c.units = {0, 3};
    const std::vector<uint8_t> command = commandPayload(c);
    WireMessage m = decodeWireMessage(wireHeader(WireKind::Command, -1, 0, kRun), command, kRun, 4);
    QVERIFY(m.command.op == StepCommandOp::Breakpoints);
    QCOMPARE(m.command.kinds, c.kinds);
    QCOMPARE(m.command.units, c.units);
    QCOMPARE(commandPayload(m.command), command);
    std::vector<uint8_t> bad = command;
    bad[2] = 0x2d;  // padding (what the fuzzer found first)
    QVERIFY(refusal(wireHeader(WireKind::Command, -1, 0, kRun), bad).contains("bytes 2..3 are padding"));
    bad = command;
    bad[0] = 9;
    QVERIFY(refusal(wireHeader(WireKind::Command, -1, 0, kRun), bad).contains("op 9 must be 1..5"));
    StepCommand step{StepCommandOp::Step};
    step.mode = StepMode::Pause;
    QVERIFY(refusal(wireHeader(WireKind::Command, -1, 0, kRun), commandPayload(step)).contains("granularity"));

    GateStateMessage g;
    g.stop_id = 7, g.stopped = true, g.paused = true;
    for (int r = 0; r < 4; ++r) {
      g.points.push_back({EventKind::Backward, 1, 2, r});
      g.times_ns.push_back(1000 + r);
      std::array<int64_t, kCategoryCount> books{};
      books[3] = 100 * r;
      g.ledgers.push_back(books);
    }
    const std::vector<uint8_t> gate = gateStatePayload(g);
    m = decodeWireMessage(wireHeader(WireKind::GateState, -1, 0, kRun), gate, kRun, 4);
    QCOMPARE(m.gate.points, g.points);
    QCOMPARE(m.gate.times_ns, g.times_ns);
    QCOMPARE(m.gate.ledgers, g.ledgers);
    QCOMPARE(gateStatePayload(m.gate), gate);
    QVERIFY(refusal(wireHeader(WireKind::GateState, -1, 0, kRun), gate, 8).contains("4 ranks, must be 0 or the run's 8"));
    bad = gate;
    bad[16 + 1] = 1;  // padding after rank 0's kind
    QVERIFY(refusal(wireHeader(WireKind::GateState, -1, 0, kRun), bad).contains("padding and must be 0"));
    // A pipeline's stop: each stage at its own microbatch and slot, as sent.
    GateStateMessage piped = g;
    for (int r = 0; r < 4; ++r) {
      piped.points[r].microbatch = r % 2;
      piped.points[r].slot = 10 + r;
    }
    m = decodeWireMessage(wireHeader(WireKind::GateState, -1, 0, kRun), gateStatePayload(piped), kRun, 4);
    QCOMPARE(m.gate.points, piped.points);

    // A hello may carry any run id (it is how the inspector learns it); others may not.
    m = decodeWireMessage(wireHeader(WireKind::AttachHello, -1, 0, 0), attachHelloPayload("me"), kRun, 4);
    QCOMPARE(m.protocol, kAttachProtocol);
    QCOMPARE(m.text, std::string("me"));
    QVERIFY(refusal(wireHeader(WireKind::Command, -1, 0, kRun + 1), command).contains("another run"));
    std::vector<uint8_t> ended = {0};
    const std::string why = "rank 2 hung";
    ended.insert(ended.end(), why.begin(), why.end());
    m = decodeWireMessage(wireHeader(WireKind::Ended, -1, 0, kRun), ended, kRun, 4);
    QVERIFY(!m.finished);
    QCOMPARE(m.text, why);
    QVERIFY(refusal(wireHeader(WireKind::Ended, -1, 0, kRun), {}).contains("outcome byte"));
    QVERIFY(refusal(wireHeader(WireKind::Bye, -1, 0, kRun), {1}).contains("bye message: 1 bytes, must be 0"));
    // Rank -1 is the attach protocol's only: a rank's message must name its rank.
    QVERIFY(refusal(wireHeader(WireKind::Loss, -1, 0, kRun), lossPayload(0, 1.0)).contains("rank -1 must be in 0..3"));
  }

  void gateKindsRoundTripAndRefuse() {
    GateArrival a;
    a.point = {EventKind::Forward, 3, 2, 1, 5, 41};  // a pipeline's pass: microbatch 5 at slot 41
    a.now_ns = 123456789;
    a.events_sent = 4242;
    a.current[static_cast<size_t>(Category::Gathered)] = 4096;
    a.peak[static_cast<size_t>(Category::Gathered)] = 8192;
    a.model_state_peak = 9000;
    a.total_peak = 10000;
    const std::vector<uint8_t> arrival = gateArrivalPayload(a);
    WireMessage m = decodeWireMessage(wireHeader(WireKind::GateArrived, 2, 0, kRun), arrival, kRun, 4);
    QCOMPARE(int(m.kind), int(WireKind::GateArrived));
    QCOMPARE(m.rank, 2);
    QCOMPARE(m.arrival.point, a.point);
    QCOMPARE(m.arrival.now_ns, a.now_ns);
    QCOMPARE(m.arrival.events_sent, a.events_sent);
    QCOMPARE(m.arrival.current, a.current);
    QCOMPARE(m.arrival.peak, a.peak);
    QCOMPARE(m.arrival.total_peak, a.total_peak);
    QCOMPARE(gateArrivalPayload(m.arrival), arrival);
    const std::vector<uint8_t> ledger = gateLedgerPayload(a);
    m = decodeWireMessage(wireHeader(WireKind::GateLedger, 1, 0, kRun), ledger, kRun, 4);
    QCOMPARE(m.arrival.current, a.current);
    QCOMPARE(m.arrival.model_state_peak, a.model_state_peak);
    QCOMPARE(gateLedgerPayload(m.arrival), ledger);
    m = decodeWireMessage(wireHeader(WireKind::GateGo, 3, 0, kRun), {}, kRun, 4);
    QCOMPARE(int(m.kind), int(WireKind::GateGo));
    QCOMPARE(m.rank, 3);
    m = decodeWireMessage(wireHeader(WireKind::GateAsk, 1, 0, kRun), {}, kRun, 4);
    QCOMPARE(int(m.kind), int(WireKind::GateAsk));
    QVERIFY(refusal(wireHeader(WireKind::GateAsk, 1, 0, kRun), {7}).contains("gate ask message: 1 bytes, must be 0"));

    // A rank's gate messages name the rank, belong to the run, and have their exact size.
    QVERIFY(refusal(wireHeader(WireKind::GateArrived, -1, 0, kRun), arrival).contains("rank -1 must be in 0..3"));
    QVERIFY(refusal(wireHeader(WireKind::GateGo, 4, 0, kRun), {}).contains("rank 4 must be in 0..3"));
    QVERIFY(refusal(wireHeader(WireKind::GateArrived, 0, 0, kRun + 1), arrival).contains("another run"));
    QVERIFY(refusal(wireHeader(WireKind::GateGo, 0, 0, kRun), {0}).contains("gate go message: 1 bytes, must be 0"));
    std::vector<uint8_t> bad(arrival.begin(), arrival.end() - 1);
    QVERIFY(refusal(wireHeader(WireKind::GateArrived, 0, 0, kRun), bad).contains("gate arrival: "));
    bad = arrival;
    bad[0] = 200;
    QVERIFY(refusal(wireHeader(WireKind::GateArrived, 0, 0, kRun), bad).contains("event kind 200 must be below"));
    bad = arrival;
    bad[2] = 1;
    QVERIFY(refusal(wireHeader(WireKind::GateArrived, 0, 0, kRun), bad).contains("padding and must be 0"));
    bad = arrival;
    poke(bad, 8, int32_t{-5});  // block
    QVERIFY(refusal(wireHeader(WireKind::GateArrived, 0, 0, kRun), bad).contains("must be -1 or more"));
    bad = arrival;
    poke(bad, 16, int32_t{-2});  // microbatch
    QVERIFY(refusal(wireHeader(WireKind::GateArrived, 0, 0, kRun), bad).contains("microbatch must be -1 or more"));
    bad = arrival;
    poke(bad, 20, int32_t{1});  // padding after the microbatch
    QVERIFY(refusal(wireHeader(WireKind::GateArrived, 0, 0, kRun), bad).contains("after a point's microbatch"));
    bad = arrival;
    poke(bad, 24, int64_t{-3});  // slot
    QVERIFY(refusal(wireHeader(WireKind::GateArrived, 0, 0, kRun), bad).contains("slot must be -1 (none) or more"));
    GateArrival over = a;
    over.current[0] = 10;  // more than its peak (0)
    QVERIFY(refusal(wireHeader(WireKind::GateLedger, 0, 0, kRun), gateLedgerPayload(over)).contains("at most its peak"));
    QVERIFY(refusal(wireHeader(WireKind::GateLedger, 0, 0, kRun), arrival).contains("gate ledger message"));
    QVERIFY(isAttachKind(WireKind::Ended) && !isAttachKind(WireKind::GateArrived) && !isAttachKind(WireKind::Hello));
    QVERIFY(isGateKind(WireKind::GateGo) && isGateKind(WireKind::GateAsk) && !isGateKind(WireKind::Ended));
  }
};

QTEST_GUILESS_MAIN(TestWireFormat)
#include "test_wire_format.moc"
