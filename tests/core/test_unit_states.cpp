// The FSDP unit states agree with the memory ledger at every moment: a unit
// shows gathering, gathered or computing exactly while its gathered buffer is
// allocated, so the bytes of those units are the ledger's gathered bytes, on
// every rank, in complete runs and in the partial event set a stopped run has
// (the root stays gathered through the whole forward, as the engine holds it).
// Unit ids are data: a trace with 32768 ranks and unit 32767 maps them densely
// instead of sizing arrays by them.
#include <QtTest>

#include <fstream>
#include <set>
#include <string>

#include "engine/run.h"
#include "inspect/event_store.h"
#include "inspect/memory_series.h"
#include "inspect/unit_states.h"
#include "model/model_spec.h"
#include "parallel/fsdp_units.h"

using namespace shardscope;

namespace {

RunConfig zero3(Prefetch prefetch, bool reshard = true) {
  RunConfig c;
  c.strategy = Strategy::Zero3;
  c.ranks = 4;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 8;
  c.steps = 2;
  c.prefetch = prefetch;
  c.reshard_after_forward = reshard;
  c.clock = ClockKind::Modeled;
  c.profile = "h100-sxm";
  c.timeout_ms = 20000;
  return c;
}

// Each unit's gathered bytes, as the engine allocates them (padded to the group).
std::vector<int64_t> unitBytes(const RunConfig& c) {
  const ModelSpec spec(c.model);
  const FsdpUnits units(spec, c.unitBlocks(), c.shardGroupSize());
  std::vector<int64_t> out;
  for (const FsdpUnit& u : units.units()) out.push_back(u.padded * 2);
  return out;
}

// The events a live store holds at time t: every op that ended by then.
RunTrace until(const RunTrace& full, int64_t t) {
  RunTrace cut = full;
  for (std::vector<Event>& events : cut.events) {
    std::vector<Event> kept;
    for (const Event& e : events)
      if (e.end_ns <= t) kept.push_back(e);
    events = std::move(kept);
  }
  return cut;
}

int64_t rssKiB() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      int64_t kib = 0;
      status >> kib;
      return kib;
    }
    status.ignore(1 << 12, '\n');
  }
  return 0;
}

// At t, on every rank: units holding their parameters ⇔ their gathered
// allocation is live, and together they are the ledger's gathered bytes.
void checkAgainstLedger(const EventStore& store, const std::vector<int64_t>& bytes, int64_t t, const char* what) {
  UnitStates states;
  states.sync(store);
  MemorySeries memory;
  memory.sync(store);
  QCOMPARE(states.unitCount(), static_cast<int>(bytes.size()));
  for (int r = 0; r < store.rankCount(); ++r) {
    int64_t shown = 0;
    for (int u = 0; u < states.unitCount(); ++u) {
      const UnitState s = states.stateAt(r, u, t);
      const int64_t held = states.heldBytes(r, u, t);
      QVERIFY2(holdsParameters(s) == (held > 0),
               qPrintable(QStringLiteral("%1, t = %2: rank %3 unit %4 shows state %5 while it holds %6 B")
                              .arg(QLatin1String(what))
                              .arg(t)
                              .arg(r)
                              .arg(u)
                              .arg(static_cast<int>(s))
                              .arg(held)));
      if (holdsParameters(s)) shown += bytes[static_cast<size_t>(states.unitId(u))];
    }
    const int64_t ledger = memory.at(r, t).bytes[static_cast<size_t>(Category::Gathered)];
    QVERIFY2(shown + states.unattributedBytes(r, t) == ledger,
             qPrintable(QStringLiteral("%1, t = %2: rank %3 units show %4 B gathered, the ledger %5 B")
                            .arg(QLatin1String(what))
                            .arg(t)
                            .arg(r)
                            .arg(shown)
                            .arg(ledger)));
  }
}

}  // namespace

class TestUnitStates : public QObject {
  Q_OBJECT

 private slots:
  void gridAgreesWithTheLedgerAtEveryMoment_data() {
    QTest::addColumn<int>("prefetch");
    QTest::addColumn<bool>("reshard");
    QTest::addColumn<int>("unitBlocks");
    QTest::newRow("no prefetch") << static_cast<int>(Prefetch::None) << true << 1;
    QTest::newRow("prefetch both") << static_cast<int>(Prefetch::Both) << true << 1;
    QTest::newRow("no reshard") << static_cast<int>(Prefetch::Both) << false << 1;
    QTest::newRow("two blocks per unit") << static_cast<int>(Prefetch::Forward) << true << 2;
  }
  void gridAgreesWithTheLedgerAtEveryMoment() {
    QFETCH(int, prefetch);
    QFETCH(bool, reshard);
    QFETCH(int, unitBlocks);
    RunConfig c = zero3(static_cast<Prefetch>(prefetch), reshard);
    c.unit_blocks = unitBlocks;
    Run run(c);
    run.execute();
    const RunTrace trace = run.trace();
    const std::vector<int64_t> bytes = unitBytes(c);
    EventStore store;
    store.setFromTrace(trace);
    // Every moment anything happens on rank 0, and just after it.
    std::set<int64_t> moments;
    for (const Event& e : store.events(0)) {
      moments.insert(e.begin_ns);
      moments.insert(e.end_ns);
      moments.insert(e.end_ns + 1);
    }
    for (int64_t t : moments) checkAgainstLedger(store, bytes, t, "whole run");

    // A stopped run's store holds only what ended: at each forward of step 1,
    // the root (unit 0) is still gathered, as the engine keeps it for the
    // head, and the grid says so before the head's forward exists.
    int forwards = 0;
    for (const Event& e : store.events(0)) {
      if (e.kind != EventKind::Forward || e.step != 1) continue;
      EventStore live;
      live.setFromTrace(until(trace, e.begin_ns));
      checkAgainstLedger(live, bytes, e.begin_ns, "stopped run");
      UnitStates states;
      states.sync(live);
      for (int r = 0; r < live.rankCount(); ++r)
        QVERIFY2(holdsParameters(states.stateAt(r, states.indexOf(0), e.begin_ns)),
                 qPrintable(QStringLiteral("root not gathered on rank %1 before the forward of block %2")
                                .arg(r)
                                .arg(e.block)));
      ++forwards;
    }
    QVERIFY(forwards >= 3);
  }

  void unitIdsFromAFileAreMappedDensely() {
    // 32768 ranks declared, one unit numbered 32767: a few hundred bytes of
    // states, not ranks × (largest id + 1) arrays.
    RunTrace trace;
    trace.strategy = "zero3";
    trace.ranks = 32768;
    trace.events.resize(1);
    const auto add = [&](EventKind kind, int64_t b, int64_t e, Lane lane) {
      Event ev;
      ev.kind = kind;
      ev.begin_ns = b;
      ev.end_ns = e;
      ev.lane = lane;
      ev.step = 0;
      ev.rank = 0;
      if (!isInstant(kind) || kind == EventKind::Alloc || kind == EventKind::Free) ev.unit = -1;
      return &trace.events[0].emplace_back(ev);
    };
    add(EventKind::StepBegin, 0, 0, Lane::Host);
    Event* alloc = add(EventKind::Alloc, 10, 10, Lane::Host);
    alloc->category = Category::Gathered;
    alloc->bytes = alloc->value = 4096;
    add(EventKind::AllGather, 10, 20, Lane::Gather)->unit = 32767;
    add(EventKind::Forward, 20, 30, Lane::Compute)->unit = 32767;
    Event* free = add(EventKind::Free, 30, 30, Lane::Host);
    free->category = Category::Gathered;
    free->bytes = 4096;
    add(EventKind::StepEnd, 40, 40, Lane::Host);
    EventStore store;
    store.setFromTrace(trace);
    const int64_t before = rssKiB();
    UnitStates states;
    states.sync(store);
    QVERIFY2(rssKiB() - before < 64 * 1024, qPrintable(QStringLiteral("%1 KiB for one unit").arg(rssKiB() - before)));
    QCOMPARE(states.unitCount(), 1);
    QCOMPARE(states.unitId(0), 32767);
    QCOMPARE(states.indexOf(32767), 0);
    QCOMPARE(states.indexOf(5), -1);
    QCOMPARE(states.stateAt(0, 0, 15), UnitState::Gathering);
    QCOMPARE(states.stateAt(0, 0, 25), UnitState::Computing);
    QCOMPARE(states.stateAt(0, 0, 35), UnitState::Freed);
    QCOMPARE(states.stateAt(0, 0, 45), UnitState::Sharded);
    QCOMPARE(states.heldBytes(0, 0, 25), int64_t{4096});
    QCOMPARE(states.stateAt(32767, 0, 25), UnitState::Sharded);  // a rank without events
    QCOMPARE(states.stateAt(0, 1, 25), UnitState::Sharded);      // no such unit index
  }
};

QTEST_MAIN(TestUnitStates)
#include "test_unit_states.moc"
