// A trace's numbers never size memory, overflow or pass as sense. Each case is
// a class a fuzz campaign found through the path the GUI's Open trace takes
// (the reader, then the Qt-free models): one event with args.step 20,000,000
// or 2,147,483,647; metadata.ranks 32768 with bucket 32767; a bucket index of
// 70,000; ts 9e15 + dur 9e15; a negative dur; repeated keys; memory values at
// int64's edge; a viewport zoomed past int64; a profile of 1e-300 TFLOPS and
// an op the modeled clock cannot price. The models must come out with one
// entry per id present, in bounded memory and time.
#include <QElapsedTimer>
#include <QtTest>

#include <sys/resource.h>

#include <limits>
#include <string>

#include "common/errors.h"
#include "inspect/bucket_activity.h"
#include "inspect/event_store.h"
#include "inspect/memory_series.h"
#include "inspect/timeline_layout.h"
#include "model/hardware_profile.h"
#include "rank/cost_model.h"
#include "trace/chrome_trace_reader.h"

using namespace shardscope;

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// A trace of `events` (comma-separated event objects) and `metadata` (an object's members).
std::string trace(const std::string& events, const std::string& metadata = "") {
  return "{\"traceEvents\":[" + events + "],\"metadata\":{\"format\":\"shardscope-trace\",\"version\":1" +
         (metadata.empty() ? "" : "," + metadata) + "}}";
}

std::string instant(const std::string& cat, int pid, const std::string& args, double ts = 1) {
  return "{\"ph\":\"i\",\"name\":\"" + cat + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":0,\"ts\":" + std::to_string(ts) + ",\"s\":\"t\",\"args\":{" + args + "}}";
}

std::string box(const std::string& cat, int pid, int tid, const std::string& ts, const std::string& dur,
                const std::string& args = "") {
  return "{\"ph\":\"X\",\"name\":\"" + cat + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + ts + ",\"dur\":" + dur + ",\"args\":{" + args + "}}";
}

// The TraceFormatError message for json ("" when it reads).
QString traceError(const std::string& json) {
  try {
    (void)readChromeTrace(json, "limits.trace.json");
  } catch (const TraceFormatError& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

long peakRssKb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// The models Open trace builds, over one store.
struct Models {
  EventStore store;
  TimelineLayout timeline;
  BucketActivity buckets;
  MemorySeries memory;

  explicit Models(RunTrace t) {
    store.setFromTrace(std::move(t));
    timeline.sync(store);
    buckets.sync(store);
    memory.sync(store);
    timeline.layout(0, 1e6, 1200, 0, static_cast<int>(timeline.rows().size()) - 1);
  }
};

constexpr long kMaxGrowthKb = 256 * 1024;  // far above what these tiny traces need, far below per-id arrays

}  // namespace

class TestTraceLimits : public QObject {
  Q_OBJECT

 private slots:
  void hugeStepIsOneEntry_data() {
    QTest::addColumn<int>("step");
    QTest::newRow("20,000,000") << 20'000'000;
    QTest::newRow("int32 max") << std::numeric_limits<int32_t>::max();
  }

  // On one event's args.step the models once allocated per-step arrays (8 GiB, or bad_alloc).
  void hugeStepIsOneEntry() {
    QFETCH(int, step);
    const std::string s = std::to_string(step);
    const std::string json =
        trace(instant("step_begin", 0, "\"step\":" + s) + "," +
              box("all_reduce", 0, 2, "2", "3", "\"step\":" + s + ",\"bucket\":0,\"bytes\":64") + "," +
              instant("bucket_ready", 0, "\"step\":" + s + ",\"bucket\":0", 1.5) + "," +
              instant("step_end", 0, "\"step\":" + s, 9),
              "\"strategy\":\"ddp\",\"ranks\":1");
    const long before = peakRssKb();
    QElapsedTimer timer;
    timer.start();
    Models m(readChromeTrace(json, "step.trace.json"));
    QVERIFY2(timer.elapsed() < 5000, qPrintable(QString::number(timer.elapsed())));
    QVERIFY2(peakRssKb() - before < kMaxGrowthKb, qPrintable(QString::number(peakRssKb() - before)));
    QCOMPARE(m.timeline.stepStarts().size(), size_t{1});
    QCOMPARE(m.timeline.stepStarts().front().step, step);
    QCOMPARE(m.timeline.stepStarts().front().ns, int64_t{1000});
    QCOMPARE(m.buckets.stepCount(), 1);
    QCOMPARE(m.buckets.stepId(0), step);
    QVERIFY(m.buckets.stepComplete(0));
    QCOMPARE(m.buckets.defaultStep(), 0);
    QVERIFY(m.buckets.slot(0, 0, 0).ready());
    QVERIFY(m.buckets.slot(0, 0, 0).launched());
    QCOMPARE(m.buckets.stepAt(2500), 0);
  }

  // metadata.ranks 32768 with bucket 32767 once aborted in 0.2 s (ranks x buckets cells per step).
  void manyRanksAndAHighBucketStayBounded() {
    const std::string json =
        trace(instant("bucket_ready", 0, "\"step\":0,\"bucket\":32767") + "," +
                  box("all_reduce", 32767, 2, "2", "1", "\"step\":3,\"bucket\":32767"),
              "\"strategy\":\"ddp\",\"ranks\":32768,\"buckets\":[{\"index\":32767,\"bytes\":64},{\"index\":3,\"bytes\":8}]");
    const long before = peakRssKb();
    QElapsedTimer timer;
    timer.start();
    Models m(readChromeTrace(json, "ranks.trace.json"));
    QVERIFY2(timer.elapsed() < 10000, qPrintable(QString::number(timer.elapsed())));
    QVERIFY2(peakRssKb() - before < kMaxGrowthKb, qPrintable(QString::number(peakRssKb() - before)));
    QCOMPARE(m.store.rankCount(), 32768);
    QCOMPARE(m.buckets.rankCount(), 32768);
    // Buckets are the ids present (metadata and events), densely, in id order.
    QCOMPARE(m.buckets.bucketCount(), 2);
    QCOMPARE(m.buckets.bucketId(0), 3);
    QCOMPARE(m.buckets.bucketId(1), 32767);
    QCOMPARE(m.buckets.bucketId(2), -1);
    QCOMPARE(m.buckets.stepCount(), 2);
    QVERIFY(m.buckets.slot(0, 0, 1).ready());
    QVERIFY(!m.buckets.slot(0, 1, 1).ready());
    QVERIFY(m.buckets.slot(1, 32767, 1).launched());
    QCOMPARE(m.buckets.totals(0).ready, 1);
    QCOMPARE(m.buckets.totals(1).launched, 1);
    // One rank readied bucket 32767 in step 0: the other 32767 never did.
    const auto never = m.buckets.neverReady(0);
    QCOMPARE(never.size(), size_t{1});
    QCOMPARE(never.front().bucket, 1);
    QCOMPARE(never.front().ranks.size(), size_t{32767});
    QCOMPARE(never.front().ranks.front(), 1);
    QCOMPARE(m.memory.rankCount(), 32768);
    QCOMPARE(m.timeline.rowOf(32767, Lane::Comm) >= 0, true);
  }

  void bucketAndUnitIndicesAreBounded_data() {
    QTest::addColumn<QString>("metadata");
    QTest::addColumn<QString>("needle");
    QTest::newRow("bucket 70000") << R"("buckets":[{"index":70000,"bytes":8}])"
                                  << "metadata.buckets[0].index: expected an integer in [0, 32767], got 70000";
    QTest::newRow("bucket int32 max") << R"("buckets":[{"index":0,"bytes":8},{"index":2147483647,"bytes":8}])"
                                      << "metadata.buckets[1].index: expected an integer in [0, 32767]";
    QTest::newRow("unit int32 max") << R"("units":[{"index":2147483647}])"
                                    << "metadata.units[0].index: expected an integer in [0, 32767], got 2147483647";
    QTest::newRow("ranks") << R"("ranks":32769)" << "metadata.ranks: expected an integer in [0, 32768]";
  }

  // Events name buckets and units by int16 ids: an index of 70,000 (which
  // overflowed ranks * buckets in an int) or 2^31-1 (+1 overflowed) is an error.
  void bucketAndUnitIndicesAreBounded() {
    QFETCH(QString, metadata);
    QFETCH(QString, needle);
    const QString e = traceError(trace("", metadata.toStdString()));
    QVERIFY2(e.contains(needle), qPrintable(e));
  }

  void timesThatOverflowAreRefused_data() {
    QTest::addColumn<QString>("ts");
    QTest::addColumn<QString>("dur");
    QTest::addColumn<QString>("needle");
    QTest::newRow("ts 9e15 + dur 9e15") << "9e15" << "9e15" << "traceEvents[0].ts: expected a time in microseconds (a number, |t| <= 1e15";
    QTest::newRow("dur 9e15") << "1" << "9e15" << "traceEvents[0].dur: expected a time in microseconds";
    QTest::newRow("dur 1e300") << "1" << "1e300" << "traceEvents[0].dur";
    QTest::newRow("ts -9.2e15") << "-9.2e15" << "1" << "traceEvents[0].ts";
    QTest::newRow("negative dur") << "5" << "-2"
                                  << "traceEvents[0].dur: expected a duration >= 0 microseconds (\"forward\" ends before it begins), got -2";
    QTest::newRow("negative dur fraction") << "5" << "-0.001" << "traceEvents[0].dur: expected a duration >= 0";
  }

  // ts 9e15 + dur 9e15 overflowed int64 ns (UBSan); a negative dur drew slivers without a word.
  void timesThatOverflowAreRefused() {
    QFETCH(QString, ts);
    QFETCH(QString, dur);
    QFETCH(QString, needle);
    const QString e = traceError(trace(box("forward", 0, 1, ts.toStdString(), dur.toStdString())));
    QVERIFY2(e.contains(needle), qPrintable(e));
  }

  void largestTimesStillRead() {
    const RunTrace t = readChromeTrace(trace(box("forward", 0, 1, "1e15", "1e15") + "," + box("forward", 0, 1, "-1e15", "0")),
                                       "edge.trace.json");
    QCOMPARE(t.events[0][0].begin_ns, int64_t{1'000'000'000'000'000'000});
    QCOMPARE(t.events[0][0].end_ns, int64_t{2'000'000'000'000'000'000});
    QCOMPARE(t.events[0][1].begin_ns, -int64_t{1'000'000'000'000'000'000});
    Models m(t);  // differences of any two times fit int64 (UBSan checks)
    QCOMPARE(m.store.endNs() - m.store.beginNs(), int64_t{3'000'000'000'000'000'000});
    QCOMPARE(m.timeline.drawnEnd(), int64_t{2'000'000'000'000'000'000});
  }

  void repeatedKeysAreRefused_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("needle");
    const std::string ok = box("forward", 0, 1, "1", "2");
    const auto q = [](const std::string& s) { return QString::fromStdString(s); };
    QTest::newRow("event ts") << q(trace(R"({"ph":"X","cat":"forward","pid":0,"tid":1,"ts":1,"ts":2,"dur":1})"))
                              << "traceEvents[0].ts: appears twice; a key may appear once in an object";
    QTest::newRow("args bucket") << q(trace(ok + "," + box("all_reduce", 0, 2, "1", "1", R"("bucket":1,"bucket":2)")))
                                 << "traceEvents[1].args.bucket: appears twice";
    QTest::newRow("metadata ranks") << q(trace("", R"("ranks":2,"ranks":64)")) << "metadata.ranks: appears twice";
    QTest::newRow("metadata bucket index")
        << q(trace("", R"("buckets":[{"index":0,"bytes":8},{"index":1,"index":9,"bytes":8}])"))
        << "metadata.buckets[1].index: appears twice";
    QTest::newRow("metadata config") << q(trace("", R"("config":{"ranks":2,"ranks":4})")) << "metadata.config.ranks: appears twice";
    QTest::newRow("top-level unit") << q(R"({"displayTimeUnit":"ns","traceEvents":[],"displayTimeUnit":"ms"})")
                                    << "displayTimeUnit: appears twice";
    QTest::newRow("ignored member") << q(R"({"traceEvents":[],"otherData":{"a":1,"b":{"c":[1,{"d":1,"d":2}]}}})")
                                    << "otherData.b.c[1].d: appears twice";
    QTest::newRow("ignored member key") << q(R"({"traceEvents":[],"otherData":1,"otherData":2})") << "otherData: appears twice";
    QTest::newRow("two traceEvents") << q(R"({"traceEvents":[],"traceEvents":[]})") << "traceEvents: appears twice";
  }

  // Profiles refused repeated keys; traces kept the first silently. One rule now, with the key's path.
  void repeatedKeysAreRefused() {
    QFETCH(QString, json);
    QFETCH(QString, needle);
    const QString e = traceError(json.toStdString());
    QVERIFY2(e.contains(needle), qPrintable(e));
    QVERIFY2(e.contains("limits.trace.json"), qPrintable(e));
  }

  // The same key in different objects is no repeat.
  void sameKeyInSiblingsReads() {
    const RunTrace t = readChromeTrace(
        R"({"traceEvents":[{"ph":"X","cat":"forward","pid":0,"tid":1,"ts":1,"dur":1,"args":{"step":0}}],"otherData":{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}})",
        "ok.trace.json");
    QCOMPARE(t.events[0].size(), size_t{1});
  }

  // Alloc values are any int64 in a file: the ledger's sums clamp instead of overflowing (UBSan).
  void memorySumsDoNotOverflow() {
    const std::string max = std::to_string(kInt64Max);
    const RunTrace t = readChromeTrace(
        trace(instant("alloc", 0, "\"category\":\"param\",\"bytes\":1,\"value\":" + max) + "," +
              instant("alloc", 0, "\"category\":\"grad\",\"bytes\":1,\"value\":" + max, 2) + "," +
              instant("alloc", 0, "\"category\":\"activation\",\"bytes\":1,\"value\":" + max, 3)),
        "memory.trace.json");
    Models m(t);
    QCOMPARE(m.memory.samples(0).size(), size_t{3});
    QCOMPARE(m.memory.samples(0).back().modelState(), kInt64Max);
    QCOMPARE(m.memory.samples(0).back().total(), kInt64Max);
    QVERIFY(m.memory.peakTotal(0) != nullptr);
  }

  // A viewport zoomed far out (plot coordinates past int64) lays out without overflow.
  void viewportBeyondInt64() {
    Models m(readChromeTrace(trace(box("forward", 0, 1, "1", "2") + "," + box("forward", 0, 1, "10", "2")), "zoom.trace.json"));
    m.timeline.layout(-1e300, 1e300, 1000, 0, 0);
    QCOMPARE(m.timeline.items().size(), size_t{1});
    QCOMPARE(m.timeline.items().front().folded, 2);
    m.timeline.layout(1e19, 2e19, 1000, 0, 0);
    QVERIFY(m.timeline.items().empty());
  }

  // Events appended live (not through the reader) with ids at their type's edge.
  void liveEventsAtTheEdges() {
    EventStore store;
    RunTrace meta;
    meta.strategy = "ddp";
    meta.ranks = 2;
    meta.buckets = {{std::numeric_limits<int>::max(), 8, {}}, {5, 8, {}}};  // a bad index is ignored, not a size
    store.reset(meta);
    Event e;
    e.kind = EventKind::BucketReady;
    e.lane = Lane::Host;
    e.step = std::numeric_limits<int32_t>::max();
    e.bucket = std::numeric_limits<int16_t>::max();
    e.rank = 1;
    store.appendEvents(1, std::span<const Event>(&e, 1));
    store.appendEvents(EventStore::kMaxRanks, std::span<const Event>(&e, 1));  // beyond int16 ranks: dropped
    QCOMPARE(store.rankCount(), 2);
    BucketActivity a;
    a.sync(store);
    QCOMPARE(a.bucketCount(), 2);
    QCOMPARE(a.bucketId(0), 5);
    QCOMPARE(a.bucketId(1), 32767);
    QCOMPARE(a.stepId(0), std::numeric_limits<int32_t>::max());
    QVERIFY(a.slot(0, 1, 1).ready());
    QCOMPARE(a.neverReady(0).front().ranks, std::vector<int>{0});
  }

  // bf16_tflops 1e-300 exited 0 with MFU 1.24e+299 (an out-of-range llround): refused, field named.
  void implausibleProfileFigures_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<QString>("link");
    QTest::addColumn<QString>("needle");
    const QString link = R"({"bandwidth_gb_per_s": 25, "latency_us": 8})";
    QTest::newRow("tflops 1e-300") << R"("bf16_tflops": 1e-300, "compute_efficiency": 0.5)" << link
                                   << "device.bf16_tflops must be at least 0.0001 (TFLOPS, dense BF16 peak; up to 100000), got 1e-300";
    QTest::newRow("efficiency 5e-324") << R"("bf16_tflops": 100, "compute_efficiency": 5e-324)" << link
                                       << "device.compute_efficiency must be at least 0.01";
    QTest::newRow("bandwidth 1e-300") << R"("bf16_tflops": 100, "compute_efficiency": 0.5)"
                                      << R"({"bandwidth_gb_per_s": 1e-300, "latency_us": 8})"
                                      << "inter_node.bandwidth_gb_per_s must be at least 0.0001";
  }

  void implausibleProfileFigures() {
    QFETCH(QString, device);
    QFETCH(QString, link);
    QFETCH(QString, needle);
    const std::string doc = R"({"name": "tiny", "description": "", "device": {)" + device.toStdString() +
                            R"(, "mem_bandwidth_gb_per_s": 2000, "mem_capacity_gb": 40},
      "intra_node": {"bandwidth_gb_per_s": 300, "latency_us": 2}, "inter_node": )" +
                            link.toStdString() + R"(, "gpus_per_node": 8, "sources": ["a test"]})";
    try {
      (void)parseProfile(doc, "tiny.json");
      QFAIL("an implausible profile was accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(QString(e.what()).contains(needle), e.what());
      QVERIFY2(QString(e.what()).contains("profile tiny.json"), e.what());
    }
  }

  // The cost model never rounds a time it cannot hold, whatever profile it is given.
  void costModelGuardsItsRounding() {
    HardwareProfile p = loadProfile("h100-sxm");
    const CostModel cost(p);
    QVERIFY(cost.computeNs(1e12, 1e6) > 0);
    QVERIFY_THROWS_EXCEPTION(RunError, cost.computeNs(1e300, 0));
    QVERIFY_THROWS_EXCEPTION(RunError, cost.memoryNs(1e300));
    QVERIFY_THROWS_EXCEPTION(RunError, cost.collectiveNs(EventKind::AllReduce, 1e300, {0, 1}));
    try {
      (void)cost.computeNs(1e300, 0);
    } catch (const RunError& e) {
      QVERIFY2(QString(e.what()).contains("profile 'h100-sxm'"), e.what());
    }
    p.device.bf16_flops = 0;
    QVERIFY_THROWS_EXCEPTION(ConfigError, CostModel{p});
    p = loadProfile("h100-sxm");
    p.inter_node.bandwidth = std::numeric_limits<double>::infinity();
    QVERIFY_THROWS_EXCEPTION(ConfigError, CostModel{p});
  }
};

QTEST_GUILESS_MAIN(TestTraceLimits)
#include "test_trace_limits.moc"
