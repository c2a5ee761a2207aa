// The modeled clock: a run priced under a hardware profile is deterministic
// (byte-identical trace), collectives start when the last rank arrives and
// take latency x ring steps + bytes / link bandwidth on the right link (HSDP:
// gathers inside the node, only the replica all-reduce crosses nodes), and
// prefetch lets a gather overlap the previous unit's compute.
#include <QtTest>

#include <map>
#include <sstream>

#include "analysis/run_summary.h"
#include "engine/cost_model.h"
#include "engine/run.h"
#include "model/hardware_profile.h"
#include "trace/chrome_trace_writer.h"

using namespace shardscope;

namespace {

RunConfig modeled(const char* strategy, int ranks) {
  RunConfig c;
  c.strategy = strategy;
  c.ranks = ranks;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 2 * ranks;
  c.steps = 2;
  c.clock = ClockKind::Modeled;
  c.profile = "h100-sxm";
  return c;
}

std::string traceText(const RunConfig& c) {
  Run run(c);
  run.execute();
  RunTrace t = run.trace();
  t.config_json = configJson(c);
  std::ostringstream os;
  writeChromeTrace(t, os);
  return os.str();
}

int64_t transferNs(const Event& e) { return e.end_ns - e.begin_ns - e.value; }

}  // namespace

class TestModeledClock : public QObject {
  Q_OBJECT

 private slots:
  void deterministicTrace_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("ddp") << "ddp";
    QTest::newRow("zero2") << "zero2";
    QTest::newRow("zero3") << "zero3";
  }

  void deterministicTrace() {
    QFETCH(QString, strategy);
    const RunConfig c = modeled(qPrintable(strategy), 4);
    const std::string a = traceText(c), b = traceText(c);
    QVERIFY(a.size() > 1000);
    QVERIFY2(a == b, "two modeled runs of the same config wrote different traces");
  }

  // Every collective's transfer costs exactly what the profile says for the
  // bytes this rank sent, and starts no earlier than any member's arrival.
  void collectivesPricedByTheProfile() {
    const RunConfig c = modeled("zero3", 4);
    Run run(c);
    const RunResult r = run.execute();
    const RunTrace t = run.trace();
    const CostModel cost(loadProfile("h100-sxm"));
    const std::vector<int> world{0, 1, 2, 3};
    std::map<std::pair<int, int>, int64_t> start_of;  // (group, seq) -> begin of transfer
    int checked = 0;
    for (int rank = 0; rank < 4; ++rank)
      for (const Event& e : t.events[rank]) {
        if (e.kind != EventKind::AllGather && e.kind != EventKind::ReduceScatter) continue;
        // Ring: each rank sends (P-1)/P of the full buffer.
        const double sent = double(e.bytes) * 3 / 4;
        QCOMPARE(transferNs(e), cost.collectiveNs(e.kind, sent, world));
        const int64_t start = e.begin_ns + e.value;
        auto [it, fresh] = start_of.emplace(std::make_pair(int(e.group), e.seq), start);
        if (!fresh) QCOMPARE(start, it->second);  // all ranks start together
        ++checked;
      }
    QVERIFY(checked > 20);
    QVERIFY(r.last_step.size() == 4);
    QVERIFY(r.mfu() > 0.0 && r.mfu() < 1.0);
  }

  // HSDP on 2 nodes x 8 GPUs (h100-sxm: 8 per node) with shard groups of 8:
  // every all-gather and reduce-scatter stays on NVLink, only the gradient
  // all-reduce across replicas crosses the inter-node link.
  void hybridShardingKeepsGathersInsideTheNode() {
    RunConfig c = modeled("hsdp", 16);
    c.shard_group = 8;
    c.model.layers = 2;
    c.steps = 1;
    Run run(c);
    run.execute();
    const RunTrace t = run.trace();
    const HardwareProfile p = loadProfile("h100-sxm");
    const CostModel cost(p);
    std::vector<int> node0, across{0, 8};
    for (int r = 0; r < 8; ++r) node0.push_back(r);
    QVERIFY(cost.sameNode(node0));
    QVERIFY(!cost.sameNode(across));
    int gathers = 0, all_reduces = 0;
    for (const Event& e : t.events[0]) {
      if (e.kind == EventKind::AllGather || e.kind == EventKind::ReduceScatter) {
        QCOMPARE(transferNs(e), cost.collectiveNs(e.kind, double(e.bytes) * 7 / 8, node0));
        ++gathers;
      }
      if (e.kind == EventKind::AllReduce) {
        // Two replicas: a ring of 2 sends half of the shard twice.
        QCOMPARE(transferNs(e), cost.collectiveNs(e.kind, double(e.bytes), across));
        ++all_reduces;
      }
    }
    QVERIFY(gathers > 0);
    QVERIFY(all_reduces > 0);
  }

  // The seed: "while unit i computes, the gather for unit i+1 is already in
  // flight". On a slow link the exposed communication drops with prefetch.
  void prefetchHidesGathers() {
    // A slow device on a slow link, so a unit's compute and its gather take
    // comparable time even for this small model (written here: fixed figures).
    QTemporaryDir dir;
    const QString path = dir.filePath("slow-device.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"name": "slow-device", "description": "test: compute and link of similar speed",
      "device": {"bf16_tflops": 0.05, "mem_bandwidth_gb_per_s": 50, "mem_capacity_gb": 16, "compute_efficiency": 1.0},
      "intra_node": {"bandwidth_gb_per_s": 1, "latency_us": 5},
      "inter_node": {"bandwidth_gb_per_s": 1, "latency_us": 5},
      "gpus_per_node": 8, "sources": ["made up for a test"]})");
    f.close();
    auto exposed = [&](Prefetch p) {
      RunConfig c = modeled("zero3", 2);
      c.model.hidden = 256;
      c.batch = 64;
      c.profile = path.toStdString();
      c.prefetch = p;
      const RunResult r = Run(c).execute();
      int64_t e = 0;
      for (const StepMetrics& m : r.last_step) e += m.exposed_comm_ns;
      return e;
    };
    const int64_t with = exposed(Prefetch::Both), without = exposed(Prefetch::None);
    qInfo("exposed communication: %lld ns with prefetch, %lld ns without", (long long)with, (long long)without);
    QVERIFY(with < without);
  }
};

QTEST_APPLESS_MAIN(TestModeledClock)
#include "test_modeled_clock.moc"
