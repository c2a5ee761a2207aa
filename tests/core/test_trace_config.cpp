// A trace carries its run typed: the config comes back from the file as a
// RunConfig (old or unreadable configs as none), and its communicator groups
// give each collective its own group size, so bus bandwidth follows
// nccl-tests on HSDP's shard and replica groups, not the world size.
#include <QtTest>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "config/config_json.h"
#include "config/settings.h"
#include "engine/run.h"
#include "trace/chrome_trace_reader.h"
#include "trace/chrome_trace_writer.h"

using namespace shardscope;

namespace {

RunConfig hsdp() {
  RunConfig c;
  c.strategy = Strategy::Hsdp;
  c.ranks = 8;
  c.shard_group = 4;
  c.model.layers = 2;
  c.model.hidden = 32;
  c.model.io_dim = 16;
  c.batch = 8;
  c.steps = 1;
  c.backend = Backend::Meta;
  c.clock = ClockKind::Modeled;
  return c;
}

std::string written(const RunTrace& t) {
  std::ostringstream os;
  writeChromeTrace(t, os);
  return os.str();
}

}  // namespace

class TestTraceConfig : public QObject {
  Q_OBJECT
 private slots:
  void configComesBackTyped() {
    RunConfig c = hsdp();
    c.prefetch = Prefetch::Forward;
    c.inject_branch = InjectBranch{1, 0};
    RunTrace t;
    t.strategy = strategyName(c.strategy);
    t.ranks = c.ranks;
    t.config = c;
    const RunTrace back = readChromeTrace(written(t), "typed");
    QVERIFY(back.config.has_value());
    QCOMPARE(runArgs(*back.config), runArgs(c));
    QCOMPARE(back.config->backend, Backend::Meta);
    // The typed members alone (no "args", as an older writer might leave) give the same run.
    nlohmann::ordered_json j = configToJson(c);
    j.erase("args");
    j.erase("command");
    // (sharded defaults come back given explicitly, so compare what the JSON says, not the flags)
    nlohmann::ordered_json again = configToJson(configFromJson(j));
    again.erase("args");
    again.erase("command");
    QCOMPARE(QString::fromStdString(again.dump()), QString::fromStdString(j.dump()));
  }

  void unreadableConfigOpensWithoutOne() {
    // Flags of another build and no config at all: the trace opens, with no config (backend unknown).
    const std::string other =
        R"({"traceEvents":[],"metadata":{"strategy":"ddp","ranks":2,"config":{"args":["--warp","9"]}}})";
    const RunTrace a = readChromeTrace(other, "other");
    QVERIFY(!a.config.has_value());
    QCOMPARE(a.ranks, 2);
    QCOMPARE(a.groups.size(), size_t{1});  // only the world is known
    const RunTrace b = readChromeTrace(R"({"traceEvents":[],"metadata":{"strategy":"ddp","ranks":2}})", "old");
    QVERIFY(!b.config.has_value());
    // A config key of the wrong type is named in the error configFromJson gives.
    try {
      configFromJson(nlohmann::ordered_json::parse(R"({"strategy":"ddp","ranks":true})"));
      QFAIL("a boolean rank count was accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find("\"ranks\"") != std::string::npos, e.what());
    }
  }

  void hsdpCollectivesUseTheirGroupSize() {
    Run run(hsdp());
    run.execute();
    const RunTrace t = run.trace();
    // world, two shard groups (gather + reduce each), four replica groups.
    QCOMPARE(t.groups.size(), size_t{1 + 2 * 2 + 4});
    for (size_t i = 0; i < t.groups.size(); ++i) QCOMPARE(t.groups[i].id, static_cast<int>(i));
    QCOMPARE(t.groups[0].ranks.size(), size_t{8});
    QCOMPARE(t.groups[1].name, std::string("shard0.gather"));
    QCOMPARE(t.groups[1].ranks, (std::vector<int>{0, 1, 2, 3}));
    QCOMPARE(t.groups[5].name, std::string("replica0"));
    QCOMPARE(t.groups[5].ranks, (std::vector<int>{0, 4}));
    for (const CommGroup& g : t.groups) QVERIFY(g.link != LinkLevel::Unknown);  // the engine knows its links
    std::set<std::pair<EventKind, int>> seen;  // (kind, group size)
    for (const std::vector<Event>& rank : t.events)
      for (const Event& e : rank)
        if (e.kind == EventKind::AllGather || e.kind == EventKind::ReduceScatter || e.kind == EventKind::AllReduce) {
          const CommGroup* g = t.group(e.group);
          QVERIFY(g != nullptr);
          QVERIFY(std::find(g->ranks.begin(), g->ranks.end(), e.rank) != g->ranks.end());
          seen.insert({e.kind, t.groupSize(e)});
        }
    // Gathers and reduce-scatters inside a shard group of 4; the shard's all-reduce across 2 replicas.
    QVERIFY(seen.count({EventKind::AllGather, 4}));
    QVERIFY(seen.count({EventKind::ReduceScatter, 4}));
    QVERIFY(seen.count({EventKind::AllReduce, 2}));
    QVERIFY(!seen.count({EventKind::AllGather, 8}));
    // nccl-tests: all-gather / reduce-scatter busbw = algbw (n-1)/n, all-reduce 2(n-1)/n.
    QCOMPARE(busBandwidthFactor(EventKind::AllGather, 4), 0.75);
    QCOMPARE(busBandwidthFactor(EventKind::ReduceScatter, 4), 0.75);
    QCOMPARE(busBandwidthFactor(EventKind::AllReduce, 2), 1.0);
    QCOMPARE(busBandwidthFactor(EventKind::AllReduce, 8), 1.75);
    // An opened trace derives the same groups from its config.
    const RunTrace back = readChromeTrace(written(t), "hsdp");
    QCOMPARE(back.groups.size(), t.groups.size());
    for (size_t i = 0; i < t.groups.size(); ++i) {
      QCOMPARE(back.groups[i].ranks, t.groups[i].ranks);
      QCOMPARE(back.groups[i].name, t.groups[i].name);
    }
  }

  void settingsTableCoversEveryFlag() {
    // Every flag the usage lists parses, and the meta rank limit in messages is the table's.
    const std::string usage = runUsage();
    for (const Setting& s : settings())
      if (s.flag) QVERIFY2(usage.find(std::string(s.flag) + " ") != std::string::npos, s.flag);
    RunConfig c;
    c.ranks = 65;
    c.batch = 65;
    try {
      validate(c);
      QFAIL("65 CPU ranks were accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find("simulates up to 16384") != std::string::npos, e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestTraceConfig)
#include "test_trace_config.moc"
