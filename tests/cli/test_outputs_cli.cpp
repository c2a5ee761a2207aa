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

  // Two outputs naming one file are refused before the run, naming both flags
  // (before: --trace x.json --summary x.json exited 0 with the trace replaced).
  // One file: the same path, through "..", a symlink or a hard link; a file
  // that is the flight-recorder folder, holds it, or is one of its dumps.
  void twoOutputsNamingOneFileAreRefused_data() {
    QTest::addColumn<QStringList>("flags");  // "@" stands for the temporary folder
    QTest::addColumn<QString>("says");
    const QString one = QStringLiteral(" name one file (");
    QTest::newRow("trace = summary") << QStringList{"--trace", "@/x.json", "--summary", "@/x.json"}
                                     << "--trace @/x.json and --summary @/x.json" + one;
    QTest::newRow("through ..") << QStringList{"--trace", "@/x.json", "--summary", "@/sub/../x.json"}
                                << "--trace @/x.json and --summary @/sub/../x.json" + one;
    QTest::newRow("symlink") << QStringList{"--summary", "@/link.json", "--trace", "@/x.json"}
                             << "--trace @/x.json and --summary @/link.json" + one;
    QTest::newRow("hard link") << QStringList{"--trace", "@/hard.json", "--summary", "@/x.json"}
                               << "--trace @/hard.json and --summary @/x.json" + one;
    QTest::newRow("log file") << QStringList{"--log-file", "@/x.json", "--summary", "@/x.json"}
                              << "--summary @/x.json and --log-file @/x.json" + one;
    QTest::newRow("trace = folder") << QStringList{"--trace", "@/fr", "--flight-recorder", "@/fr"}
                                    << "--trace @/fr and --flight-recorder @/fr" + one;
    QTest::newRow("summary is a dump") << QStringList{"--summary", "@/fr/nccl_trace_rank_0", "--flight-recorder", "@/fr"}
                                       << QStringLiteral("is where --flight-recorder writes its files");
    QTest::newRow("folder in trace") << QStringList{"--trace", "@/t", "--flight-recorder", "@/t/fr"}
                                     << QStringLiteral("the folder @/t/fr would be made inside the file @/t");
  }

  void twoOutputsNamingOneFileAreRefused() {
    QFETCH(QStringList, flags);
    QFETCH(QString, says);
    QTemporaryDir dir;
    QVERIFY(QDir().mkpath(dir.filePath("sub")));
    const QString x = dir.filePath("x.json");
    {
      QFile f(x);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("keep");
    }
    QVERIFY(QFile::link(x, dir.filePath("link.json")));
    QCOMPARE(::link(x.toLocal8Bit().constData(), dir.filePath("hard.json").toLocal8Bit().constData()), 0);
    QStringList args = {"run", "--ranks", "2", "--layers", "1", "--hidden", "16", "--batch", "4", "--steps", "2"};
    for (const QString& f : flags) args << QString(f).replace("@", dir.path());
    if (args.contains("--log-file")) {  // a global flag: before the command
      const qsizetype at = args.indexOf("--log-file");
      const QString value = args.at(at + 1);
      args.remove(at, 2);
      args = QStringList{"--log-file", value} + args;
    }
    const CliResult r = runCli(args, 60000);
    QVERIFY2(r.exit_code == 2, qPrintable(QString("exit %1: %2").arg(r.exit_code).arg(r.err)));
    QVERIFY2(r.err.contains(QString(says).replace("@", dir.path())), qPrintable(r.err));
    QVERIFY2(r.err.contains("give"), qPrintable(r.err));
    QCOMPARE(r.err.trimmed().count(QLatin1Char('\n')), 0);
    QVERIFY(!r.out.contains("written to"));
    if (!args.contains("--log-file")) QCOMPARE(readFileBytes(x), QByteArray("keep"));
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
