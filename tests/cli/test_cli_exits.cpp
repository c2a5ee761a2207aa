// How shardscope-cli ends, as a script sees it: every exit code it documents
// (0 done, 2 bad input or a refused run, 3 the run stopped, 4 an output could
// not be written, 130/143/129 a signal stopped the run) in the case that
// produces it. Flags that mean nothing for the chosen model, empty output
// names and unwritable outputs are refused before the run; a run bigger than
// the machine (or than ulimit -v) is refused in a second with what drives it;
// SIGINT, SIGTERM and SIGHUP stop a run and keep what it measured.
#include <QtTest>

#include <csignal>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include "cli_process.h"

namespace {

// A run far longer than any test: only something that stops it ends it.
const QStringList kEndless = {"run", "--ranks", "2", "--layers", "1", "--hidden", "16", "--batch", "4",
                              "--steps", "100000"};
const QStringList kTiny = {"run", "--ranks", "2", "--layers", "1", "--hidden", "16", "--batch", "4", "--steps", "2"};

QJsonObject readObject(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

// The CLI under sh -c, so a limit (ulimit) or an ignored signal applies to it alone.
CliResult runCliUnderShell(const QString& prefix, const QStringList& args, int timeout_ms = 120000) {
  QString line = prefix + QStringLiteral("; exec '") + QStringLiteral(SHARDSCOPE_CLI_PATH) + QLatin1Char('\'');
  for (const QString& a : args) line += QStringLiteral(" '") + a + QLatin1Char('\'');
  QProcess p;
  p.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), line});
  CliResult r;
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

void expectOneLine(const CliResult& r, int code, const QString& text) {
  QVERIFY2(r.exit_code == code, qPrintable(QString("exit %1, expected %2: %3").arg(r.exit_code).arg(code).arg(r.err)));
  QVERIFY2(r.err.contains(text), qPrintable(r.err));
  QCOMPARE(r.err.trimmed().count(QLatin1Char('\n')), 0);
}

// Starts an endless run with its per-step log on stderr and returns once it
// has finished `steps` steps.
bool startAndWaitForSteps(QProcess& p, const QStringList& extra, int steps) {
  p.start(QStringLiteral(SHARDSCOPE_CLI_PATH), kEndless + extra + QStringList{"--log-level", "debug"});
  if (!p.waitForStarted(30000)) return false;
  const QByteArray wanted = QByteArray("step ") + QByteArray::number(steps) + " done";
  QByteArray err;
  QElapsedTimer timer;
  timer.start();
  while (!err.contains(wanted)) {
    if (timer.elapsed() > 60000 || p.state() != QProcess::Running) return false;
    p.waitForReadyRead(100);
    err += p.readAllStandardError();
    p.readAllStandardOutput();
  }
  return true;
}

}  // namespace

class TestCliExits : public QObject {
  Q_OBJECT

 private slots:
  void helpListsTheExitCodes() {
    for (const QStringList& args : {QStringList{"--help"}, QStringList{"run", "--help"}}) {
      const CliResult r = runCli(args);
      QCOMPARE(r.exit_code, 0);
      for (const char* line : {"exit codes:", "  0 ", "  2 ", "  3 ", "  4 ", "130, 143, 129"})
        QVERIFY2(r.out.contains(QLatin1String(line)), qPrintable(line + QStringLiteral(" in: ") + r.out));
    }
    QVERIFY(runCli({"run", "--help"}).out.contains(QStringLiteral("--force")));
  }

  void flagsThatDoNotApplyAreNamed() {
    expectOneLine(runCli({"run", "--heads", "0", "--seq", "0", "--vocab", "1"}), 2,
                  QStringLiteral("--heads, --seq and --vocab apply to --model gpt only, not mlp"));
    expectOneLine(runCli({"run", "--vocab", "512"}), 2, QStringLiteral("--vocab applies to --model gpt only, not mlp"));
    expectOneLine(runCli({"run", "--backend", "meta", "--model", "llama2-7b", "--layers", "3"}), 2,
                  QStringLiteral("--layers does not apply to --model llama2-7b"));
    expectOneLine(runCli({"run", "--trace", ""}), 2, QStringLiteral("--trace needs a file name, got ''"));
    expectOneLine(runCli({"run", "--summary", ""}), 2, QStringLiteral("--summary needs a file name, got ''"));
  }

  // The range the message states is the range accepted, for every backend,
  // and the CPU message's hint about meta says meta's real limit.
  void theRanksMessageMatchesWhatIsAccepted() {
    struct Case {
      QStringList backend;
      int hi;
    };
    for (const Case& c : {Case{{}, 64}, Case{{"--backend", "meta"}, 16384}}) {
      const QString hi = QString::number(c.hi), over = QString::number(c.hi + 1);
      const CliResult refused = runCli(QStringList{"run", "--ranks", over} + c.backend);
      expectOneLine(refused, 2, QStringLiteral("--ranks must be in 1..%1, got %2").arg(hi, over));
    }
    QVERIFY(runCli({"run", "--help"}).out.contains(QStringLiteral("meta 1..16384")));
    const CliResult cpu = runCli({"run", "--ranks", "65"});
    QVERIFY2(cpu.err.contains(QStringLiteral("--backend meta simulates up to 16384")), qPrintable(cpu.err));
    // 1024 meta ranks are accepted (and run: symmetric ranks are simulated once).
    const CliResult meta = runCli({"run", "--backend", "meta", "--ranks", "1024", "--batch", "1024", "--steps", "1",
                                   "--layers", "1", "--hidden", "16"});
    QVERIFY2(meta.exit_code == 0, qPrintable(meta.err));
  }

  void aRunTooBigForTheMachineIsRefusedInASecond_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QStringList>("named");
    QTest::newRow("mlp") << QStringList{"--hidden", "8192", "--layers", "2", "--ranks", "2", "--strategy", "zero1"}
                         << QStringList{"--hidden 8192", "--layers 2", "--strategy zero1"};
    QTest::newRow("gpt") << QStringList{"--model", "gpt", "--seq", "4096", "--vocab", "1048576"}
                         << QStringList{"--seq 4096", "--vocab 1048576"};
  }

  void aRunTooBigForTheMachineIsRefusedInASecond() {
    QFETCH(QStringList, args);
    QFETCH(QStringList, named);
    QElapsedTimer timer;
    timer.start();
    const CliResult r = runCli(QStringList{"run", "--batch", "32", "--steps", "100000"} + args);
    qInfo("refused in %lld ms", static_cast<long long>(timer.elapsed()));
    expectOneLine(r, 2, QStringLiteral("this run needs about "));
    QVERIFY2(r.err.contains(QStringLiteral(" per rank, ")) && r.err.contains(QStringLiteral(" in all; the machine has ")),
             qPrintable(r.err));
    for (const QString& flag : named) QVERIFY2(r.err.contains(flag), qPrintable(flag + " in: " + r.err));
    QVERIFY2(r.err.contains(QStringLiteral("--force")), qPrintable(r.err));
    QVERIFY(timer.elapsed() < 20000);  // the process starts in about a second; the check itself takes none
  }

  // ulimit -v: the run is refused up front with the limit named, and with
  // --force the first allocation past it ends the run with one message
  // (exit 3), not std::bad_alloc's abort.
  void underUlimitV() {
    const QStringList big = {"--hidden", "4096", "--layers", "8", "--ranks", "2", "--batch", "2", "--steps", "1"};
    const CliResult refused = runCliUnderShell(QStringLiteral("ulimit -v 4000000"), QStringList{"run"} + big);
    expectOneLine(refused, 2, QStringLiteral("(ulimit -v)"));
    QVERIFY2(refused.err.startsWith(QStringLiteral("error: this run needs about ")), qPrintable(refused.err));
    const CliResult forced =
        runCliUnderShell(QStringLiteral("ulimit -v 4000000"), QStringList{"run", "--force"} + big);
    expectOneLine(forced, 3, QStringLiteral("out of memory (std::bad_alloc)"));
  }

  void unwritableOutputsAreFoundBeforeTheRun() {
    QTemporaryDir dir;
    const QString missing = dir.filePath("no/such/dir/t.json");
    QElapsedTimer timer;
    timer.start();
    // Endless runs: only a check before the run can end these.
    expectOneLine(runCli(kEndless + QStringList{"--trace", "/dev/full"}), 2,
                  QStringLiteral("--trace /dev/full: cannot be written: No space left on device"));
    expectOneLine(runCli(kEndless + QStringList{"--summary", missing}), 2, QStringLiteral("does not exist"));
    expectOneLine(runCli(kEndless + QStringList{"--trace", dir.path()}), 2, QStringLiteral("is a directory"));
    QVERIFY(timer.elapsed() < 60000);
    QVERIFY(!QFile::exists(missing));
    // The check creates nothing: a file that did not exist still does not.
    const QString fresh = dir.filePath("fresh.json");
    expectOneLine(runCli(kEndless + QStringList{"--trace", fresh, "--summary", "/dev/full"}), 2,
                  QStringLiteral("--summary /dev/full"));
    QVERIFY(!QFile::exists(fresh));
  }

  // A write that fails at the end (here: a file-size limit, which the check
  // before the run cannot see) does not stop the other outputs; exit 4.
  void aFailedWriteStillWritesTheRestThenExits4() {
    QTemporaryDir dir;
    const QString trace = dir.filePath("t.json"), summary = dir.filePath("s.json");
    const CliResult r = runCliUnderShell(QStringLiteral("trap '' XFSZ; ulimit -f 64"),
                                         kTiny + QStringList{"--trace", trace, "--summary", summary});
    QVERIFY2(r.exit_code == 4, qPrintable(QString("exit %1: %2").arg(r.exit_code).arg(r.err)));
    QVERIFY2(r.err.contains(QStringLiteral("error: --trace ") + trace), qPrintable(r.err));
    const QJsonObject s = readObject(summary);
    QCOMPARE(s.value("strategy").toString(), QStringLiteral("ddp"));
    QCOMPARE(s.value("steps").toArray().size(), 2);
    QVERIFY(!s.contains("interrupted"));
    QVERIFY(r.out.contains(QStringLiteral("summary written to")));
  }

  void aSignalStopsTheRunAndKeepsWhatRan_data() {
    QTest::addColumn<int>("signal");
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("code");
    QTest::newRow("SIGINT") << SIGINT << "SIGINT" << 130;
    QTest::newRow("SIGTERM") << SIGTERM << "SIGTERM" << 143;
    QTest::newRow("SIGHUP") << SIGHUP << "SIGHUP" << 129;
  }

  void aSignalStopsTheRunAndKeepsWhatRan() {
    QFETCH(int, signal);
    QFETCH(QString, name);
    QFETCH(int, code);
    QTemporaryDir dir;
    const QString trace = dir.filePath("t.json"), summary = dir.filePath("s.json");
    QProcess p;
    QVERIFY(startAndWaitForSteps(p, {"--trace", trace, "--summary", summary}, 3));
    ::kill(static_cast<pid_t>(p.processId()), signal);
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), code);
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains(QStringLiteral("interrupted by ") + name + QStringLiteral(" during step ")), qPrintable(err));
    QVERIFY2(out.contains(QStringLiteral("trace written to")) && out.contains(QStringLiteral("summary written to")),
             qPrintable(out));
    QVERIFY(out.contains(QStringLiteral("loss per step")));
    const QJsonObject s = readObject(summary);
    const QJsonObject stop = s.value("interrupted").toObject();
    QCOMPARE(stop.value("by").toString(), name);
    const int done = stop.value("steps_done").toInt(-1);
    QVERIFY2(done >= 3, qPrintable(QString::number(done)));
    QCOMPARE(stop.value("at_step").toInt(-1), done);
    QCOMPARE(stop.value("steps_asked").toInt(), 100000);
    QCOMPARE(s.value("steps").toArray().size(), done);
    for (const char* key : {"strategy", "ranks", "params", "config", "per_rank", "buckets", "bucket_fire_order"})
      QVERIFY2(s.contains(QLatin1String(key)), key);
    QCOMPARE(s.value("per_rank").toArray().size(), 2);
    const QJsonObject t = readObject(trace);
    QVERIFY(t.value("traceEvents").toArray().size() > 100);
    QCOMPARE(t.value("metadata").toObject().value("interrupted").toObject().value("by").toString(), name);
  }

  // One stop delivered twice (`timeout` signals the child, then its group; a
  // launcher forwards the terminal's Ctrl-C) is one request: the run still
  // writes its trace and summary and exits with the signal's status. (Before:
  // the second, within ~50 ms, exited at once with nothing written.)
  void aStopDeliveredTwiceIsOneStop_data() {
    QTest::addColumn<int>("signal");
    QTest::addColumn<int>("gap_ms");
    QTest::newRow("SIGTERM, 1 ms") << SIGTERM << 1;
    QTest::newRow("SIGTERM, 10 ms") << SIGTERM << 10;
    QTest::newRow("SIGINT, 10 ms") << SIGINT << 10;
    QTest::newRow("SIGHUP, 30 ms") << SIGHUP << 30;
  }

  void aStopDeliveredTwiceIsOneStop() {
    QFETCH(int, signal);
    QFETCH(int, gap_ms);
    QTemporaryDir dir;
    const QString trace = dir.filePath("t.json"), summary = dir.filePath("s.json");
    QProcess p;
    QVERIFY(startAndWaitForSteps(p, {"--trace", trace, "--summary", summary}, 20));
    const pid_t pid = static_cast<pid_t>(p.processId());
    ::kill(pid, signal);
    ::usleep(static_cast<useconds_t>(gap_ms) * 1000);
    ::kill(pid, signal);
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitCode() == 128 + signal, qPrintable(QString("exit %1: %2").arg(p.exitCode()).arg(err.right(2000))));
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(out.contains(QStringLiteral("trace written to")) && out.contains(QStringLiteral("summary written to")),
             qPrintable(out.right(2000)));
    QVERIFY(readObject(summary).value("interrupted").toObject().value("steps_done").toInt() >= 20);
    QVERIFY(readObject(trace).value("traceEvents").toArray().size() > 100);
  }

  // A deliberate second Ctrl-C, more than a second after the first, exits at
  // once while the outputs are still being written: here the trace goes to a
  // FIFO whose reader never reads (its pipe holds one page), as a slow write would.
  void aSecondSigintAfterASecondExitsAtOnce() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath("trace.fifo");
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    const int reader = ::open(fifo.toLocal8Bit().constData(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    QVERIFY(reader >= 0);
    ::fcntl(reader, F_SETPIPE_SZ, 4096);
    QProcess p;
    QVERIFY(startAndWaitForSteps(p, {"--trace", fifo}, 3));
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QByteArray err;
    QElapsedTimer timer;
    timer.start();
    while (!err.contains("interrupted by SIGINT") && timer.elapsed() < 30000) {
      p.waitForReadyRead(100);
      err += p.readAllStandardError();
    }
    QVERIFY2(err.contains("interrupted by SIGINT"), err.constData());
    QVERIFY(!p.waitForFinished(1500));  // stuck writing into the full pipe; past the repeat window
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(5000));
    ::close(reader);
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 130);
  }

  // A FIFO that nobody reads is refused before the run, at once, naming the
  // path (before: the run ran, then opening the FIFO hung forever and the
  // first SIGTERM was swallowed).
  void aFifoWithoutAReaderIsRefusedAtOnce() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath("trace.fifo");
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    for (const char* flag : {"--trace", "--summary"}) {
      QElapsedTimer timer;
      timer.start();
      const CliResult r = runCli(kTiny + QStringList{flag, fifo}, 20000);
      expectOneLine(r, 2, QString(flag) + " " + fifo + ": is a FIFO that no process has open for reading");
      QVERIFY2(timer.elapsed() < 10000, qPrintable(QString::number(timer.elapsed())));
    }
  }

  // With its reader there, a FIFO gets the whole trace (kept open from the
  // check before the run, so the reader does not see an early end).
  void aFifoWithAReaderGetsTheTrace() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath("trace.fifo");
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    const int reader = ::open(fifo.toLocal8Bit().constData(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    QVERIFY(reader >= 0);
    QProcess p;
    p.start(QStringLiteral(SHARDSCOPE_CLI_PATH), kTiny + QStringList{"--trace", fifo});
    QByteArray got;
    QElapsedTimer timer;
    timer.start();
    bool opened = false;  // the writer has opened it: a read of 0 bytes is now its end
    for (;;) {
      char buf[65536];
      const ssize_t n = ::read(reader, buf, sizeof buf);
      if (n > 0) {
        got.append(buf, static_cast<int>(n));
        opened = true;
        continue;
      }
      if (n == 0 && (opened || p.state() == QProcess::NotRunning)) break;
      if (timer.elapsed() > 60000) break;
      p.waitForFinished(20);
    }
    ::close(reader);
    if (p.state() != QProcess::NotRunning) QVERIFY(p.waitForFinished(30000));  // else it finished in the loop
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const QJsonObject t = QJsonDocument::fromJson(got).object();
    QVERIFY2(t.value("traceEvents").toArray().size() > 10, got.left(200).constData());
  }
};

QTEST_GUILESS_MAIN(TestCliExits)
#include "test_cli_exits.moc"
