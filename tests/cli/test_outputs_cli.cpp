// Outputs that cannot be written fail the command, naming the file: a log
// file on /dev/full, analyze --json to /dev/full, and a run under ulimit -f
// (SIGXFSZ ignored: the write fails with EFBIG and is reported) which leaves
// no half trace under its name, no temporary file, and still writes the
// summary that fits. A run that fails writes the summary of what completed.
#include <QtTest>

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <csignal>

#include <unistd.h>

#include "cli_process.h"

namespace {
const QStringList kSmallRun = {"run", "--strategy", "zero3", "--ranks", "2", "--layers", "2", "--hidden", "32",
                               "--batch", "4", "--steps", "20", "--clock", "modeled"};
const QString kData = QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/");
}  // namespace

class TestOutputsCli : public QObject {
  Q_OBJECT

 private slots:
  void logFileOnAFullDeviceFails() {
    if (!QFile::exists("/dev/full")) QSKIP("no /dev/full");
    const CliResult r = runCli(QStringList{"--log-file", "/dev/full", "--log-level", "info"} + kSmallRun);
    QVERIFY2(r.exit_code != 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("--log-file") && r.err.contains("/dev/full") && r.err.contains("No space left on device"),
             qPrintable(r.err));
  }

  void analyzeJsonOnAFullDeviceFails() {
    if (!QFile::exists("/dev/full")) QSKIP("no /dev/full");
    const CliResult r = runCli({"analyze", kData + "two_ranks", "--json", "/dev/full"});
    QVERIFY2(r.exit_code != 0, qPrintable(r.out + r.err));
    QVERIFY2(!r.out.contains("figures written"), qPrintable(r.out));
    QVERIFY2(r.err.contains("--json") && r.err.contains("/dev/full"), qPrintable(r.err));
  }

  // ulimit -f 200 (200 KiB): the trace does not fit, the summary does.
  void fileSizeLimitIsAWriteError() {
    QTemporaryDir dir;
    const QString trace = dir.filePath("t.json"), summary = dir.filePath("s.json");
    QProcess p;
    p.start("/bin/bash", QStringList{"-c", "ulimit -f 200 && exec \"$0\" \"$@\"", SHARDSCOPE_CLI_PATH} + kSmallRun +
                             QStringList{"--trace", trace, "--summary", summary});
    QVERIFY(p.waitForFinished(120000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitStatus() == QProcess::NormalExit, qPrintable("killed by signal " + QString::number(p.exitCode())));
    QCOMPARE(p.exitCode(), 4);
    QVERIFY2(err.contains("error: --trace " + trace + ": cannot write: File too large"), qPrintable(err));
    QVERIFY2(!QFile::exists(trace), "half a trace under the final name");
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"s.json"});  // no temporary file left
    QVERIFY(QJsonDocument::fromJson(readFileBytes(summary)).object().contains("per_rank"));
  }

  // A run that stops on an error (a worker killed after a few steps) keeps
  // what completed: the summary of those steps, marked failed, with the error.
  void aFailedRunWritesTheSummaryOfWhatCompleted() {
    QTemporaryDir dir;
    const QString summary = dir.filePath("s.json");
    QProcess p;
    QByteArray err;
    const QRegularExpressionMatch m = startAndWaitFor(
        p,
        {"--log-level", "debug", "run", "--strategy", "zero2", "--ranks", "2", "--layers", "2", "--hidden", "32",
         "--batch", "4", "--steps", "100000", "--launch", "processes", "--summary", summary},
        QRegularExpression("rank 1: worker pid (\\d+)(?:.|\\n)*step 3 done"), err, QProcess::StandardError);
    QVERIFY2(m.hasMatch(), err.constData());
    QCOMPARE(::kill(static_cast<pid_t>(m.captured(1).toLongLong()), SIGKILL), 0);
    QVERIFY(p.waitForFinished(60000));
    err += p.readAllStandardError();
    QCOMPARE(p.exitCode(), 3);
    QVERIFY2(err.contains("completed steps written to " + summary.toUtf8()), err.right(2000).constData());
    const QJsonObject s = QJsonDocument::fromJson(readFileBytes(summary)).object();
    QVERIFY2(s.value("failed").toBool(), readFileBytes(summary).left(500).constData());
    const QJsonObject stop = s.value("interrupted").toObject();
    QCOMPARE(stop.value("by").toString(), QStringLiteral("error"));
    QVERIFY2(stop.value("error").toString().contains(QStringLiteral("rank 1 (worker pid %1) was killed by signal 9")
                                                         .arg(m.captured(1))),
             qPrintable(stop.value("error").toString()));
    QVERIFY(stop.value("steps_done").toInt() >= 3);
    QCOMPARE(s.value("steps").toArray().size(), stop.value("steps_done").toInt());
    QCOMPARE(s.value("per_rank").toArray().size(), 2);
  }
};

QTEST_GUILESS_MAIN(TestOutputsCli)
#include "test_outputs_cli.moc"
