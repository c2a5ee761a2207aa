// shardscope-cli's log: --log-level and --log-file on every command, the log
// on stderr and in the file, stdout and traces untouched; the setup, the
// communicators and a collective hang are logged naming the ranks; a bad level
// is one line and exit code 2.
#include <QtTest>

#include "cli_process.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

namespace {

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// The first line of `text` holding every one of `parts`, or an empty string.
QString lineWith(const QString& text, const QStringList& parts) {
  for (const QString& line : text.split('\n')) {
    bool all = true;
    for (const QString& p : parts) all &= line.contains(p);
    if (all) return line;
  }
  return {};
}

const QStringList kSmallModel = {"--layers", "3", "--hidden", "64", "--batch", "8"};

}  // namespace

class TestCliLog : public QObject {
  Q_OBJECT

 private slots:
  void defaultLevelKeepsStderrQuiet() {
    const CliResult r = runCli(QStringList{"run", "--ranks", "2", "--steps", "1"} + kSmallModel);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    QVERIFY(r.out.contains("bytes/param"));
  }

  void debugLogsSetupAndCommunicators() {
    QTemporaryDir dir;
    const QString log = dir.filePath("run.log"), trace = dir.filePath("t.json");
    const CliResult r = runCli(QStringList{"run", "--log-level", "debug", "--strategy", "zero3", "--ranks", "2",
                                           "--steps", "2", "--log-file", log, "--trace", trace} + kSmallModel);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const QString text = readText(log);
    QVERIFY2(!lineWith(text, {"[engine]", "[info]", "run setup: strategy zero3, 2 ranks", "backend cpu", "clock measured"})
                  .isEmpty(),
             qPrintable(text));
    QVERIFY2(!lineWith(text, {"[comm]", "[debug]", "group 0 'world': 2 ranks (0, 1) over gloo"}).isEmpty(), qPrintable(text));
    QVERIFY2(!lineWith(text, {"[comm]", "gloo group 'world': 2 thread ranks through shared memory"}).isEmpty(), qPrintable(text));
    QVERIFY2(!lineWith(text, {"[rank 1]", "[debug]", "step 1 done"}).isEmpty(), qPrintable(text));
    QVERIFY2(!lineWith(text, {"[engine]", "run finished: 2 steps"}).isEmpty(), qPrintable(text));
    // The same log on stderr; stdout is the run's report only.
    QVERIFY(r.err.contains("run setup: strategy zero3"));
    QVERIFY(!r.out.contains("[engine]") && !r.out.contains("run setup"));
    QVERIFY(r.out.contains("bytes/param"));
    // Log flags are not run settings: the trace never records them.
    const QString trace_text = readText(trace);
    QVERIFY(trace_text.contains("traceEvents"));
    QVERIFY(!trace_text.contains("log-level") && !trace_text.contains("log_level") && !trace_text.contains("run.log"));
  }

  void hangIsLoggedNamingRanks() {
    QTemporaryDir dir;
    const QString log = dir.filePath("hang.log");
    const CliResult r = runCli(QStringList{"run", "--ranks", "2", "--steps", "2", "--timeout-ms", "800",
                                           "--inject-branch", "1:1", "--log-level", "debug", "--log-file", log} +
                                   kSmallModel,
                               60000);
    QCOMPARE(r.exit_code, 3);
    const QString text = readText(log);
    QVERIFY2(!lineWith(text, {"[comm]", "[error]", "collective hang in group world", "rank 0 is stuck in",
                              "waiting for rank 1"})
                  .isEmpty(),
             qPrintable(text));
    QVERIFY2(!lineWith(text, {"[rank 1]", "never became ready on rank 1"}).isEmpty(), qPrintable(text));
    QVERIFY2(!lineWith(text, {"[engine]", "[error]", "run stopped after"}).isEmpty(), qPrintable(text));
    QVERIFY2(r.err.contains("error: run stopped: "), qPrintable(r.err));
  }

  void otherCommandsTakeTheFlags() {
    const CliResult r = runCli({"--log-level", "info", "calc", "--model", "gpt2-124m", "--ranks", "8"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY(!r.out.isEmpty());
  }

  void badLogFlags_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("level") << QStringList{"run", "--log-level", "loud"}
                           << "--log-level must be one of trace, debug, info, warn, error, off, got 'loud'";
    QTest::newRow("level before command") << QStringList{"--log-level", "verbose", "calc"} << "--log-level must be one of";
    QTest::newRow("level missing") << QStringList{"run", "--log-level"} << "--log-level needs a value";
    QTest::newRow("file missing") << QStringList{"run", "--log-file"} << "--log-file needs a value";
    // A regular file as the directory: unwritable even for root.
    QTest::newRow("file unwritable") << QStringList{"run", "--log-file", QString(SHARDSCOPE_SOURCE_DIR "/README.md/run.log")}
                                     << "--log-file cannot write the log file";
  }

  void badLogFlags() {
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    const CliResult r = runCli(args, 20000);
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
    QCOMPARE(r.err.trimmed().count('\n'), 0);  // one line
  }
};

QTEST_GUILESS_MAIN(TestCliLog)
#include "test_cli_log.moc"
