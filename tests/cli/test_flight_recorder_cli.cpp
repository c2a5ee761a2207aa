// `run --flight-recorder DIR`: the rank-dependent-hang preset's run writes one
// PyTorch flight-recorder dump per rank and prints the diagnosis, which names
// the rank and collective of its own hang report; `analyze DIR` reads them
// back to the same sentence; ranks as processes write the same; a file in the
// folder's place is refused up front (exit 2, naming the flag).
#include <QDir>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.h"
#include "config/preset_file.h"

namespace {

QStringList hangArgs() {
  const shardscope::PresetFile preset = shardscope::readPresetFile(
      std::string(SHARDSCOPE_SOURCE_DIR) + "/resources/presets/rank-dependent-hang.json");
  QStringList args;
  for (const std::string& a : preset.runs.at(0).args) args << QString::fromStdString(a);
  if (args.isEmpty() || args.front() != "run") args.prepend("run");
  return args;
}

// "rank 1 never joined all_reduce #N of default_pg" from the run's stderr, checked against its hang report.
QString checkHang(const CliResult& r) {
  const QRegularExpression stuck("ranks 0, 2 and 3 are stuck in (\\w+) .*?seq (\\d+)\\), waiting for rank 1\\.");
  const QRegularExpressionMatch m = stuck.match(r.err);
  if (!m.hasMatch()) return {};
  return QStringLiteral("rank 1 never joined %1 #%2 of default_pg").arg(m.captured(1), m.captured(2));
}

}  // namespace

class TestFlightRecorderCli : public QObject {
  Q_OBJECT

 private slots:
  void hangPresetWritesDumps() {
    QTemporaryDir dir;
    const QString fr = dir.filePath("fr");
    const CliResult r = runCli(hangArgs() + QStringList{"--flight-recorder", fr});
    QCOMPARE(r.exit_code, 3);
    const QString expected = checkHang(r);
    QVERIFY2(!expected.isEmpty(), qPrintable(r.err));
    QVERIFY2(r.err.contains("flight-recorder dumps of 4 ranks written to " + fr), qPrintable(r.err));
    QVERIFY2(r.err.contains("flight recorder: " + expected), qPrintable(r.err));
    QCOMPARE(QDir(fr).entryList(QDir::Files), (QStringList{"nccl_trace_rank_0", "nccl_trace_rank_1", "nccl_trace_rank_2",
                                                           "nccl_trace_rank_3"}));
    const CliResult a = runCli({"analyze", fr});
    QCOMPARE(a.exit_code, 0);
    QVERIFY2(a.out.contains(expected + "; ranks 0, 2 and 3 are waiting in it"), qPrintable(a.out));
  }

  void ranksAsProcessesWriteTheSame() {
    QTemporaryDir dir;
    const QString fr = dir.filePath("fr");
    const CliResult r = runCli(hangArgs() + QStringList{"--launch", "processes", "--flight-recorder", fr});
    QCOMPARE(r.exit_code, 3);
    const QString expected = checkHang(r);
    QVERIFY2(!expected.isEmpty(), qPrintable(r.err));
    QVERIFY2(r.err.contains("flight recorder: " + expected), qPrintable(r.err));
    QCOMPARE(QDir(fr).entryList(QDir::Files).size(), 4);
  }

  void aFileInTheFoldersPlaceIsRefused() {
    QTemporaryDir dir;
    const QString file = dir.filePath("taken");
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    const CliResult r = runCli(hangArgs() + QStringList{"--flight-recorder", file});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("--flight-recorder " + file) && r.err.contains("a file is in its place"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestFlightRecorderCli)
#include "test_flight_recorder_cli.moc"
