// `shardscope-cli analyze --json` carries HTA's idle-time breakdown, queue
// length, kernel breakdown and launch statistics under their stable keys, with
// the numbers worked out by hand in tests/core/test_kineto_hta_analyses.cpp
// for tests/data/kineto/hta_analyses (written by hand: Debian's CPU-only torch
// records no cudaLaunchKernel); the text names each of them.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include "cli/analyze_command.h"

using namespace shardscope;

namespace {

const std::string kJob = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/hta_analyses";

}  // namespace

class TestAnalyzeHtaCli : public QObject {
  Q_OBJECT

  QJsonArray m_ranks;
  std::string m_text;

 private slots:
  void initTestCase() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("hta.json").toStdString();
    std::ostringstream out, err;
    QCOMPARE(commandAnalyze({kJob, "--json", path}, out, err), 0);
    QVERIFY2(err.str().empty(), err.str().c_str());
    m_text = out.str();
    std::ifstream f(path);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(text), &error);
    QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
    m_ranks = doc.object()["ranks"].toArray();
    QCOMPARE(m_ranks.size(), 2);
  }

  void textNamesTheFour() {
    for (const char* line : {"idle time by stream", "launch queue length by stream", "kernel breakdown",
                             "launch statistics", "unpaired: 1 GPU events without a correlation"})
      QVERIFY2(m_text.find(line) != std::string::npos, line);
  }

  void idleTimeBreakdown() {
    const QJsonObject idle = m_ranks[0].toObject()["idle_time_breakdown"].toObject();
    QCOMPARE(idle["consecutive_kernel_delay_us"].toDouble(), 30.0);
    const QJsonArray streams = idle["streams"].toArray();
    QCOMPARE(streams.size(), 3);
    const QJsonObject s7 = streams[0].toObject();
    QCOMPARE(s7["stream"].toInt(), 7);
    QCOMPARE(s7["host_wait_us"].toDouble(), 20.0);
    QCOMPARE(s7["kernel_wait_us"].toDouble(), 35.0);
    QCOMPARE(s7["other_us"].toDouble(), 40.0);
    QCOMPARE(s7["idle_us"].toDouble(), 95.0);
    QCOMPARE(s7["host_wait_ratio"].toDouble(), 0.2105);
    QCOMPARE(s7["kernel_wait_ratio"].toDouble(), 0.3684);
    QCOMPARE(s7["other_ratio"].toDouble(), 0.4211);
    QCOMPARE(s7["gaps_without_launch"].toInt(), 1);
    const QJsonObject s9 = streams[1].toObject();
    QCOMPARE(s9["stream"].toInt(), 9);
    QVERIFY(s9["host_wait_ratio"].isNull());  // no idle time: 0 / 0
    const QJsonObject s20 = streams[2].toObject();
    QCOMPARE(s20["host_wait_us"].toDouble(), 25.0);
    QCOMPARE(s20["host_wait_ratio"].toDouble(), 1.0);
  }

  void queueLength() {
    const QJsonObject q = m_ranks[0].toObject()["queue_length"].toObject();
    QCOMPARE(q["launches"].toInt(), 7);
    const QJsonArray streams = q["streams"].toArray();
    QCOMPARE(streams.size(), 2);
    const QJsonObject s7 = streams[0].toObject()["length"].toObject();
    QCOMPARE(streams[0].toObject()["stream"].toInt(), 7);
    QCOMPARE(s7["count"].toInt(), 10);
    QCOMPARE(s7["mean"].toDouble(), 0.9);
    QCOMPARE(s7["std"].toDouble(), 0.7379);
    QCOMPARE(s7["min"].toDouble(), 0.0);
    QCOMPARE(s7["p25"].toDouble(), 0.25);
    QCOMPARE(s7["p50"].toDouble(), 1.0);
    QCOMPARE(s7["p75"].toDouble(), 1.0);
    QCOMPARE(s7["max"].toDouble(), 2.0);
    const QJsonObject s20 = streams[1].toObject()["length"].toObject();
    QCOMPARE(s20["count"].toInt(), 4);
    QCOMPARE(s20["std"].toDouble(), 0.5774);
    QCOMPARE(s20["p50"].toDouble(), 0.5);
  }

  void kernelBreakdown() {
    const QJsonArray types = m_ranks[0].toObject()["kernel_breakdown"].toArray();
    QCOMPARE(types.size(), 3);
    const QJsonObject comp = types[0].toObject();
    QCOMPARE(comp["kernel_type"].toString(), QStringLiteral("COMPUTATION"));
    QCOMPARE(comp["grouped"].toBool(), false);
    const QJsonObject gemm = comp["rows"].toArray()[0].toObject();
    QCOMPARE(gemm["name"].toString(), QStringLiteral("gemm_a"));
    QCOMPARE(gemm["kernels"].toInt(), 3);
    QCOMPARE(gemm["sum_us"].toDouble(), 90.0);
    QCOMPARE(gemm["mean_us"].toDouble(), 30.0);
    QCOMPARE(gemm["max_us"].toDouble(), 50.0);
    QCOMPARE(gemm["min_us"].toDouble(), 10.0);
    QCOMPARE(gemm["std_us"].toDouble(), 20.0);
    QCOMPARE(types[1].toObject()["kernel_type"].toString(), QStringLiteral("COMMUNICATION"));
    QCOMPARE(types[1].toObject()["rows"].toArray()[0].toObject()["std_us"].toDouble(), 28.284);
    QCOMPARE(types[2].toObject()["kernel_type"].toString(), QStringLiteral("MEMORY"));
    // Rank 1: twelve names, grouped; "others" holds k10, k11, k12.
    const QJsonObject r1 = m_ranks[1].toObject()["kernel_breakdown"].toArray()[0].toObject();
    QCOMPARE(r1["grouped"].toBool(), true);
    const QJsonArray rows = r1["rows"].toArray();
    QCOMPARE(rows.size(), 10);
    const QJsonObject others = rows[9].toObject();
    QCOMPARE(others["name"].toString(), QStringLiteral("others"));
    QCOMPARE(others["names"].toInt(), 3);
    QCOMPARE(others["sum_us"].toDouble(), 20.0);
    QCOMPARE(others["mean_us"].toDouble(), 6.667);
    QCOMPARE(others["std_us"].toDouble(), 2.887);
  }

  void launchDelay() {
    const QJsonObject l = m_ranks[0].toObject()["launch_delay"].toObject();
    // Seven pairs: the two cudaLaunchKernelExC are among HTA's launch calls.
    QCOMPARE(l["pairs"].toInt(), 7);
    QCOMPARE(l["formula"].toString(), QStringLiteral("max(0, gpu ts - (cpu ts + cpu dur))"));
    QCOMPARE(l["definition"].toString(), QStringLiteral("HTA since January 2025"));
    const QJsonObject delay = l["launch_delay_us"].toObject();
    QCOMPARE(delay["count"].toInt(), 7);
    QCOMPARE(delay["mean"].toDouble(), 11.429);
    QCOMPARE(delay["std"].toDouble(), 13.138);
    QCOMPARE(delay["min"].toDouble(), 0.0);
    QCOMPARE(delay["p50"].toDouble(), 10.0);
    QCOMPARE(delay["max"].toDouble(), 40.0);
    QCOMPARE(l["cpu_duration_us"].toObject()["mean"].toDouble(), 17.571);
    QCOMPARE(l["gpu_duration_us"].toObject()["p75"].toDouble(), 55.0);
    QCOMPARE(l["start_delay_us"].toObject()["min"].toDouble(), -6.0);
    QCOMPARE(l["runtime_outliers"].toInt(), 1);
    QCOMPARE(l["launch_delay_outliers"].toInt(), 0);
    QCOMPARE(l["short_kernels"].toInt(), 1);
    const QJsonObject u = l["unpaired"].toObject();
    QCOMPARE(u["gpu_events"].toInt(), 9);
    QCOMPARE(u["gpu_events_without_correlation"].toInt(), 1);
    QCOMPARE(u["gpu_events_without_launch"].toInt(), 1);
    QCOMPARE(u["launches"].toInt(), 9);
    QCOMPARE(u["launches_without_correlation"].toInt(), 1);
    QCOMPARE(u["launches_without_gpu_event"].toInt(), 1);
  }
};

QTEST_GUILESS_MAIN(TestAnalyzeHtaCli)
#include "test_analyze_hta_cli.moc"
