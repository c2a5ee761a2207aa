// `run --flight-recorder DIR`: the rank-dependent-hang preset's run writes one
// PyTorch flight-recorder dump per rank and prints the diagnosis, which names
// the rank and collective of its own hang report; `analyze DIR` reads them
// back to the same sentence; ranks as processes write the same; a file in the
// folder's place is refused up front (exit 2, naming the flag).
#include <QDir>
#include <QElapsedTimer>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>

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

// "rank 1 never joined all_reduce #N of pg 0 (default_pg)" from the run's stderr, checked against its hang report.
QString checkHang(const CliResult& r) {
  const QRegularExpression stuck("ranks 0, 2 and 3 are stuck in (\\w+) .*?seq (\\d+)\\), waiting for rank 1\\.");
  const QRegularExpressionMatch m = stuck.match(r.err);
  if (!m.hasMatch()) return {};
  return QStringLiteral("rank 1 never joined %1 #%2 of pg 0 (default_pg)").arg(m.captured(1), m.captured(2));
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

  // A worker killed mid-run: every rank's dump is written (the killed one's from
  // the events that reached the collector), and a mismatch, when the others were
  // inside a collective, names the killed rank.
  void aKilledWorkersRunWritesEveryDump() {
    QTemporaryDir dir;
    const QString fr = dir.filePath("fr");
    QProcess p;
    p.start(SHARDSCOPE_CLI_PATH, {"--log-level", "debug", "run", "--strategy", "ddp", "--ranks", "4", "--layers", "2",
                                  "--hidden", "32", "--batch", "8", "--steps", "100000", "--launch", "processes",
                                  "--flight-recorder", fr});
    QVERIFY(p.waitForStarted());
    QByteArray err;
    const QRegularExpression ready("rank 1: worker pid (\\d+)(?:.|\\n)*step 2 done");
    QRegularExpressionMatch m;
    QElapsedTimer timer;
    timer.start();
    while (!(m = ready.match(QString::fromUtf8(err))).hasMatch() && timer.elapsed() < 120000 &&
           p.state() == QProcess::Running) {
      p.waitForReadyRead(500);
      err += p.readAllStandardError();
    }
    QVERIFY2(m.hasMatch(), err.right(2000).constData());
    QCOMPARE(::kill(static_cast<pid_t>(m.captured(1).toLongLong()), SIGKILL), 0);
    QVERIFY2(p.waitForFinished(60000), "the run did not end after a worker was killed");
    err += p.readAllStandardError();
    QCOMPARE(p.exitCode(), 3);
    const QString text = QString::fromUtf8(err);
    QVERIFY2(text.contains("flight-recorder dumps of 4 ranks written to " + fr), qPrintable(text.right(2000)));
    QCOMPARE(QDir(fr).entryList(QDir::Files).size(), 4);
    const CliResult a = runCli({"analyze", fr});
    QCOMPARE(a.exit_code, 0);
    if (a.out.contains("never joined")) QVERIFY2(a.out.contains("rank 1 never joined all_reduce #"), qPrintable(a.out));
    QVERIFY2(!a.out.contains(QRegularExpression("rank [023] never joined")), qPrintable(a.out));
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
