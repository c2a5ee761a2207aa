// The PyTorch profiler's memory timeline exports (tests/data/kineto/
// make_memory_timeline.py: one run written as export_memory_timeline_raw's
// events and as _coalesce_timeline's [times, sizes], gzipped by suffix as
// profile.export_memory_timeline does): both forms read to the same series,
// the peak and its categories worked by hand there; analyze reports them; a
// bad file is refused naming the field.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include "cli/postmortem_analyze.h"
#include "common/errors.h"
#include "input/input_detect.h"
#include "kineto/memory_timeline.h"

using namespace shardscope;
using namespace shardscope::kineto;

namespace {

const std::string kDir = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/memory_timeline/";
constexpr int64_t MiB = int64_t(1) << 20;

std::string refusal(const std::string& json) {
  try {
    parseMemoryTimeline(Json::parse(json), "t.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestMemoryTimeline : public QObject {
  Q_OBJECT

 private slots:
  void bothFormsGiveOneSeries_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<bool>("raw");
    QTest::addColumn<int>("points");
    QTest::newRow("raw.json.gz") << "run.raw.json.gz" << true << 5;   // -1 joins 1000 us
    QTest::newRow("json.gz") << "run.json.gz" << false << 6;         // 1000 us twice, as the profiler writes it
    QTest::newRow("json") << "run.json" << false << 6;
  }
  void bothFormsGiveOneSeries() {
    QFETCH(QString, file);
    QFETCH(bool, raw);
    QFETCH(int, points);
    const std::string path = kDir + file.toStdString();
    QCOMPARE(detectInput(path).kind, InputKind::MemoryTimeline);
    const MemoryTimeline t = readMemoryTimeline(path);
    QCOMPARE(t.raw, raw);
    QCOMPARE(int(t.times_ns.size()), points);
    QCOMPARE(t.times_ns.front(), int64_t(1000000));
    QCOMPARE(t.times_ns.back(), int64_t(5000000));
    const size_t p = t.peak();
    QCOMPARE(t.times_ns[p], int64_t(4000000));
    QCOMPARE(t.total(p), 17 * MiB);                  // 4 + 8 + 1 + 4
    QCOMPARE(t.bytes[p][0], 4 * MiB);                // Parameter
    QCOMPARE(t.bytes[p][1], 8 * MiB);                // Optimizer state
    QCOMPARE(t.bytes[p][2], 1 * MiB);                // Input
    QCOMPARE(t.bytes[p][4], int64_t(0));             // Activation, freed at 3000 us
    QCOMPARE(t.bytes[p][5], 4 * MiB);                // Gradient
    QCOMPARE(t.total(t.times_ns.size() - 1), 12 * MiB);
    const Json j = memoryTimelineJson(t, path);
    QCOMPARE(j["peak_bytes"].get<int64_t>(), 17 * MiB);
    QCOMPARE(j["peak_at_us"].get<double>(), 3000.0);
    QCOMPARE(j["categories"][4]["category"].get<std::string>(), std::string("Activation"));
    QCOMPARE(j["categories"][4]["peak_bytes"].get<int64_t>(), 2 * MiB);
  }

  void analyzeReportsIt() {
    QCOMPARE(detectInput(kDir + "run.json.gz").kind, InputKind::MemoryTimeline);
    QTemporaryDir dir;
    const std::string json = dir.filePath("out.json").toStdString();
    std::ostringstream out, err;
    QCOMPARE(analyzePostmortem({{kDir + "run.raw.json.gz", InputKind::MemoryTimeline}}, json, out, err), 0);
    QVERIFY2(out.str().find("peak 17.00 MiB at 3000 us") != std::string::npos, out.str().c_str());
    std::ifstream f(json);
    const Json report = Json::parse(f);
    QCOMPARE(report["memory_timeline"]["form"].get<std::string>(), std::string("raw"));
  }

  void kinetoTraceIsNotATimeline() {
    QCOMPARE(detectInput(std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/rank1_of_2.json").kind,
             InputKind::KinetoTrace);
    QCOMPARE(detectInput(kDir + "missing.json.gz").kind, InputKind::Unknown);
    // A Chrome trace in its array form ("[{" ...), gzipped: a trace, not a timeline.
    QCOMPARE(detectInput(std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/torch_ddp_gloo_rank1.json.gz").kind,
             InputKind::KinetoTrace);
  }

  void badFilesAreNamed_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("says");
    QTest::newRow("object") << R"({"times": []})" << "the document must be a list";
    QTest::newRow("lengths") << "[[1, 2], [[0,0,0,0,0,0,0,0,0]]]" << "times and sizes must be lists of one length";
    QTest::newRow("short row") << "[[1], [[0,0,0,0,0,0,0,0]]]" << "sizes[0] must be a list of 9 integers";
    QTest::newRow("text bytes") << R"([[1], [[0,"1",0,0,0,0,0,0,0]]])" << "sizes[0][1] must be an integer (bytes), found string";
    QTest::newRow("backwards") << "[[5, 1], [[0,0,0,0,0,0,0,0,0],[0,0,0,0,0,0,0,0,0]]]" << "times[1] must not go back in time";
    QTest::newRow("action") << "[[1, 7, 10, 0]]" << "[0][1] must be an action in 1..4";
    QTest::newRow("category") << "[[1, 2, 10, 8]]" << "[0][3] must be a category in 0..7";
    QTest::newRow("event shape") << "[[1, 2, 10]]" << "[0] must be a raw event";
    QTest::newRow("empty") << "[[], []]" << "has no points";
  }
  void badFilesAreNamed() {
    QFETCH(QString, json);
    QFETCH(QString, says);
    const std::string e = refusal(json.toStdString());
    QVERIFY2(e.find("memory timeline t.json: ") == 0, e.c_str());
    QVERIFY2(e.find(says.toStdString()) != std::string::npos, e.c_str());
  }
};

QTEST_GUILESS_MAIN(TestMemoryTimeline)
#include "test_memory_timeline.moc"
