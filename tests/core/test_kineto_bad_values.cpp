// Bad values in an imported PyTorch profiler trace get one clear error naming
// the field and what is allowed, or a counted warning analyze reports — never
// a wrong figure: a [memory] Bytes of int64 max, a negative "dur", a
// ProfilerStep number beyond int64, a key given twice in one JSON object.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "kineto/kineto_json_reader.h"
#include "kineto/kineto_walk_tuning.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"

using namespace shardscope;
using namespace shardscope::kineto;

namespace {

// Loads one rank-0 trace written from `json`; the ConfigError's text, or "" when it loaded.
std::string loadError(const std::string& json, TraceSet* loaded = nullptr) {
  QTemporaryDir dir;
  const std::string path = dir.filePath("trace.json").toStdString();
  std::ofstream(path) << json;
  try {
    TraceSet set = loadTraceSet({path});
    if (loaded) *loaded = std::move(set);
    return "";
  } catch (const ConfigError& e) {
    return e.what();
  }
}

const char* const kHead = R"({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [)";

}  // namespace

class TestKinetoBadValues : public QObject {
  Q_OBJECT
 private slots:
  void memoryBytesBeyondTotalIsRefused() {
    // int64 max bytes allocated, 4096 allocated in all after it: the memory before the window
    // would be 4096 - 9223372036854775807 = -9.2e18 B.
    const std::string error = loadError(std::string(kHead) +
        R"({"ph": "i", "s": "t", "name": "[memory]", "pid": 0, "tid": 1, "ts": 5, )"
        R"("args": {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": 9223372036854775807, )"
        R"("Total Allocated": 4096, "Total Reserved": 8192}}]})");
    QVERIFY2(error.find("args \"Bytes\" of a memory event as bytes in [-1152921504606846976, 4096] (its \"Total "
                        "Allocated\"), not '9223372036854775807'") != std::string::npos,
             error.c_str());
    QVERIFY2(error.find("line 1") != std::string::npos, error.c_str());
    // A free of int64 min is refused too; a consistent sample loads.
    QVERIFY(!loadError(std::string(kHead) +
        R"({"ph": "i", "name": "[memory]", "pid": 0, "tid": 1, "ts": 5, "args": {"Bytes": -9223372036854775807, )"
        R"("Total Allocated": 0}}]})").empty());
    // An [OutOfMemory] event's Bytes is the request that failed: larger than what is allocated.
    QCOMPARE(loadError(std::string(kHead) +
        R"({"ph": "i", "name": "[OutOfMemory]", "pid": 0, "tid": 1, "ts": 5, "args": {"Bytes": 85899345920, )"
        R"("Total Allocated": 5000}}]})"), std::string());
    TraceSet set;
    QCOMPARE(loadError(std::string(kHead) +
        R"({"ph": "i", "name": "[memory]", "pid": 0, "tid": 1, "ts": 5, "args": {"Bytes": 512, )"
        R"("Total Allocated": 4096}}]})", &set), std::string());
    QCOMPARE(set.indexes[0].memory_baseline, int64_t(4096 - 512));
  }

  void negativeDurationIsCountedAndLeftOut() {
    // Two kernels on stream 7: 10 us, then one "ending" 5 us before it starts. Read as it
    // stands, the second made the idle time more than all of the kernel time (102.99 %).
    TraceSet set;
    QCOMPARE(loadError(std::string(kHead) +
        R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100, "dur": 10, )"
        R"("args": {"stream": 7, "correlation": 1}},)"
        R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 120, "dur": -5, )"
        R"("args": {"stream": 7, "correlation": 2}}]})", &set), std::string());
    QCOMPARE(set.ranks[0].negative_durations, uint64_t(1));
    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    const RankAnalysis& a = job.ranks[0];
    QCOMPARE(a.negative_durations, int64_t(1));
    QCOMPARE(a.hta.kernel_time_ns, int64_t(10000));
    QCOMPARE(a.hta.idle_pct, 0.0);
    std::ostringstream text, json;
    printAnalysisText(job, set, text);
    writeAnalysisJson(job, set, json);
    QVERIFY2(text.str().find("WARNING: 1 events with a negative \"dur\"") != std::string::npos, text.str().c_str());
    QVERIFY2(json.str().find("\"negative_durations\": 1") != std::string::npos, json.str().c_str());
  }

  void profilerStepBeyondInt64IsRefused() {
    // 10^20 was cut to 999999999999999999 (18 nines), a step that does not exist.
    const std::string error = loadError(std::string(kHead) +
        R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#100000000000000000000", "pid": 0, "tid": 1, )"
        R"("ts": 1, "dur": 10}]})");
    QVERIFY2(error.find("\"ProfilerStep#100000000000000000000\": a ProfilerStep number as an integer in [0, "
                        "9223372036854775807]") != std::string::npos,
             error.c_str());
    // int64 max itself is a step.
    TraceSet set;
    QCOMPARE(loadError(std::string(kHead) +
        R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#9223372036854775807", "pid": 0, "tid": 1, )"
        R"("ts": 1, "dur": 10}]})", &set), std::string());
    QCOMPARE(set.indexes[0].steps.size(), size_t(1));
    QCOMPARE(set.indexes[0].steps[0].number, INT64_MAX);
  }

  void duplicateKeysAreRefused_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("expected");
    const QString event = R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2%1}]})";
    QTest::newRow("dur twice") << QString(kHead) + event.arg(R"(, "dur": 200)")
                               << R"(each key once in an event, not "dur" again)";
    QTest::newRow("ts twice") << QString(kHead) + event.arg(R"(, "ts": 5)") << R"(each key once in an event, not "ts" again)";
    QTest::newRow("name twice") << QString(kHead) + event.arg(R"(, "name": "other")")
                                << R"(each key once in an event, not "name" again)";
    QTest::newRow("args key twice")
        << QString(kHead) + event.arg(R"(, "args": {"stream": 7, "Group size": 2, "stream": 8})")
        << R"(each key once in args, not "stream" again)";
    QTest::newRow("args twice") << QString(kHead) + event.arg(R"(, "args": {"stream": 7}, "args": {"stream": 8})")
                                << R"(each key once in an event, not "args" again)";
    QTest::newRow("rank twice") << R"({"distributedInfo": {"rank": 0, "rank": 1}, "traceEvents": []})"
                                << R"(each key once in distributedInfo, not "rank" again)";
    QTest::newRow("distributedInfo twice")
        << R"({"distributedInfo": {"rank": 0}, "traceEvents": [], "distributedInfo": {"rank": 1}})"
        << R"(each key once in the top-level object, not "distributedInfo" again)";
    QTest::newRow("traceEvents twice") << R"({"distributedInfo": {"rank": 0}, "traceEvents": [], "traceEvents": []})"
                                       << R"(each key once in the top-level object, not "traceEvents" again)";
  }
  void duplicateKeysAreRefused() {
    QFETCH(QString, json);
    QFETCH(QString, expected);
    const std::string error = loadError(json.toStdString());
    QVERIFY2(error.find(expected.toStdString()) != std::string::npos, error.c_str());
  }

  void duplicateKeyRefusedInWindowedWalk() {
    // The same refusal when the events are walked in windows (large files).
    std::string json = kHead;
    for (int i = 0; i < 200; ++i)
      json += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" + std::to_string(i * 10) +
              R"(, "dur": 2, "args": {"stream": 7}},)";
    json += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "ts": 2}]})";
    setKinetoChunkBytes(512);
    const std::string error = loadError(json);
    setKinetoChunkBytes(0);
    QVERIFY2(error.find(R"(each key once in an event, not "ts" again)") != std::string::npos, error.c_str());
  }
};

QTEST_APPLESS_MAIN(TestKinetoBadValues)
#include "test_kineto_bad_values.moc"
