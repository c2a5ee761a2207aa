// `shardscope-cli analyze --diff CONTROL TEST [--diff-csv FILE] [--json FILE]`
// as a user runs it: the table on stdout, {"trace_diff": ...} in --json, every
// row in --diff-csv, and one clear error (exit 2) for each bad use: a missing
// side, an unreadable or broken trace (naming CONTROL or TEST), a flag that
// does not apply. The numbers themselves are worked by hand in
// tests/core/test_kineto_trace_diff.cpp; here: one regression and one removal.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include "../core/kineto_trace_writer.h"
#include "cli/analyze_command.h"

using namespace shardscope;

namespace {

constexpr int64_t kUs = KinetoTraceWriter::kUs;

// One rank, `steps` steps of 100 µs, each: aten::mm > launch -> gemm (gemm_us); with extra: aten::dropout -> drop_k (6).
std::string writeSide(const QTemporaryDir& dir, const std::string& name, int steps, int64_t gemm_us, bool extra) {
  KinetoTraceWriter w(0, 1);
  int64_t c = 0;
  for (int s = 0; s < steps; ++s) {
    const int64_t t = s * 100 * kUs;
    w.step(s + 1, t, 100 * kUs);
    w.op("aten::mm", t + 10 * kUs, 20 * kUs);
    w.launch("cudaLaunchKernel", t + 12 * kUs, 2 * kUs, ++c);
    w.kernel("gemm", t + 20 * kUs, gemm_us * kUs, c);
    if (extra) {
      w.op("aten::dropout", t + 50 * kUs, 10 * kUs);
      w.launch("cudaLaunchKernel", t + 51 * kUs, 1 * kUs, ++c);
      w.kernel("drop_k", t + 60 * kUs, 6 * kUs, c);
    }
  }
  return w.write(dir, name);
}

int analyze(const std::vector<std::string>& args, std::string& out, std::string& err) {
  std::ostringstream o, e;
  const int rc = commandAnalyze(args, o, e);
  out = o.str();
  err = e.str();
  return rc;
}

std::string readAll(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

class TestAnalyzeDiffCli : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;
  std::string m_control, m_test;

 private slots:
  void initTestCase() {
    // CONTROL: 5 steps, gemm 30 and drop_k 6 a step; TEST: 3 steps, gemm 45, no dropout.
    m_control = writeSide(m_dir, "control.json", 5, 30, true);
    m_test = writeSide(m_dir, "test.json", 3, 45, false);
  }

  void tableJsonAndCsv() {
    const std::string json = m_dir.filePath("diff.json").toStdString();
    const std::string csv = m_dir.filePath("diff.csv").toStdString();
    std::string out, err;
    QCOMPARE(analyze({"--diff", m_control, m_test, "--json", json, "--diff-csv", csv}, out, err), 0);
    QVERIFY2(err.empty(), err.c_str());
    QVERIFY2(out.find("trace diff, per profiled step of one rank") != std::string::npos, out.c_str());
    QVERIFY(out.find("1 rank, 5 rank-steps") != std::string::npos);
    QVERIFY(out.find("1 rank, 3 rank-steps") != std::string::npos);
    QVERIFY(out.find("figures written to " + json) != std::string::npos);
    QVERIFY(out.find("diff rows written to " + csv) != std::string::npos);
    const QJsonObject root = QJsonDocument::fromJson(QByteArray::fromStdString(readAll(json))).object();
    QCOMPARE(root.keys(), QStringList({"trace_diff"}));
    const QJsonObject d = root["trace_diff"].toObject();
    QCOMPARE(d["control"].toObject()["inputs"].toArray(), QJsonArray({QString::fromStdString(m_control)}));
    QCOMPARE(d["test"].toObject()["rank_steps"].toInt(), 3);
    // gemm: 30 -> 45 a step (+15, +50 %) on top; drop_k: 6 -> 0 (control only) last.
    const QJsonArray kernels = d["kernels"].toArray();
    QCOMPARE(kernels.size(), 2);
    QCOMPARE(kernels[0].toObject()["name"].toString(), QString("gemm"));
    QCOMPARE(kernels[0].toObject()["control_count"].toInt(), 5);
    QCOMPARE(kernels[0].toObject()["test_count"].toInt(), 3);
    QCOMPARE(kernels[0].toObject()["control_us_per_step"].toDouble(), 30.0);
    QCOMPARE(kernels[0].toObject()["test_us_per_step"].toDouble(), 45.0);
    QCOMPARE(kernels[0].toObject()["delta_us_per_step"].toDouble(), 15.0);
    QCOMPARE(kernels[0].toObject()["delta_pct"].toDouble(), 50.0);
    QCOMPARE(kernels[1].toObject()["name"].toString(), QString("drop_k"));
    QCOMPARE(kernels[1].toObject()["in"].toString(), QString("control"));
    QCOMPARE(kernels[1].toObject()["delta_us_per_step"].toDouble(), -6.0);
    const std::string rows = readAll(csv);
    QVERIFY2(rows.find("\nkernel,gemm,both,5,3,150.000,135.000,1.000,1.000,0.000,30.000,45.000,15.000,50.00\n") !=
                 std::string::npos,
             rows.c_str());
    QVERIFY(rows.find("\nop,aten::dropout,control,5,0,50.000,0.000,1.000,0.000,-1.000,10.000,0.000,-10.000,-100.00\n") !=
            std::string::npos);
  }

  void analyzeJsonHasTheNewKeys() {
    const std::string json = m_dir.filePath("plain.json").toStdString();
    std::string out, err;
    QCOMPARE(analyze({m_control, "--json", json}, out, err), 0);
    const QJsonObject root = QJsonDocument::fromJson(QByteArray::fromStdString(readAll(json))).object();
    QCOMPARE(root["step_times"].toObject()["steps"].toArray().size(), 5);
    QVERIFY(root.contains("annotation_breakdown"));
    QVERIFY(!root.contains("trace_diff"));
    QVERIFY(out.find("step times (every ProfilerStep#N span, the last one included") != std::string::npos);
  }

  void badUsesAreOneClearError_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("error");
    const QString c = QString::fromStdString(m_control), t = QString::fromStdString(m_test);
    const QString missing = m_dir.filePath("nowhere.json");
    const QString broken = m_dir.filePath("broken.json");
    std::ofstream(broken.toStdString()) << "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\"";
    QTest::newRow("no sides") << QStringList{"--diff"}
                              << "error: --diff needs CONTROL and TEST, each a trace file or a folder of per-rank traces\n";
    QTest::newRow("one side") << QStringList{"--diff", c}
                              << "error: --diff needs CONTROL and TEST, each a trace file or a folder of per-rank traces, "
                                 "got only CONTROL '" + c + "'\n";
    QTest::newRow("a flag for TEST") << QStringList{"--diff", c, "--json", "x.json"}
                                     << "error: --diff needs CONTROL and TEST, each a trace file or a folder of per-rank "
                                        "traces, got only CONTROL '" + c + "'\n";
    QTest::newRow("csv without diff") << QStringList{c, "--diff-csv", "x.csv"}
                                      << "error: --diff-csv needs --diff CONTROL TEST\n";
    QTest::newRow("csv without file") << QStringList{"--diff", c, t, "--diff-csv"}
                                      << "error: --diff-csv needs a FILE to write\n";
    QTest::newRow("a third trace") << QStringList{"--diff", c, t, c}
                                   << "error: --diff compares CONTROL with TEST and takes no other trace (got '" + c +
                                          "'); analyze it on its own without --diff\n";
    QTest::newRow("whole trace") << QStringList{"--diff", c, t, "--whole-trace"}
                                 << "error: --whole-trace does not apply to --diff (the diff reads every step at exact "
                                    "timestamps; use --diff-csv FILE for its rows)\n";
    QTest::newRow("collectives csv") << QStringList{"--diff", c, t, "--collectives-csv", "x.csv"}
                                     << "error: --collectives-csv does not apply to --diff (the diff reads every step at "
                                        "exact timestamps; use --diff-csv FILE for its rows)\n";
    QTest::newRow("rank-of neither side") << QStringList{"--diff", c, t, "--rank-of", "other.json=1"}
                                          << "error: --rank-of other.json=1: that file is in neither CONTROL (" + c +
                                                 ") nor TEST (" + t + ")\n";
    QTest::newRow("missing control") << QStringList{"--diff", missing, t}
                                     << "error: --diff CONTROL: PyTorch trace " + missing + ": cannot open: no such file\n";
    QTest::newRow("broken test") << QStringList{"--diff", c, broken} << "error: --diff TEST: " + broken;
  }

  void badUsesAreOneClearError() {
    QFETCH(QStringList, args);
    QFETCH(QString, error);
    std::vector<std::string> a;
    for (const QString& s : args) a.push_back(s.toStdString());
    std::string out, err;
    QCOMPARE(analyze(a, out, err), 2);
    // Whole lines where the error is fixed; the reader's own words follow the side's name otherwise.
    if (error.endsWith('\n')) QCOMPARE(QString::fromStdString(err), error);
    else QVERIFY2(QString::fromStdString(err).startsWith(error), err.c_str());
    QCOMPARE(std::count(err.begin(), err.end(), '\n'), 1);
    QVERIFY(out.empty());
  }

  void helpSaysThePerStepRule() {
    std::string out, err;
    QCOMPARE(analyze({"--help"}, out, err), 0);
    QVERIFY(out.find("--diff CONTROL TEST") != std::string::npos);
    QVERIFY(out.find("per profiled step of one rank") != std::string::npos);
    QVERIFY(out.find("a 5-step trace compares fairly with a") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestAnalyzeDiffCli)
#include "test_analyze_diff_cli.moc"
