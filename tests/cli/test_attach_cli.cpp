// `run --serve` and `attach` as a user runs them: an attached recording's
// trace is the served run's byte for byte (threads and processes), its
// summary the same up to the wall time; `keys` makes one identity (0600) and
// authorizes keys; on a secured address an inspector without --server-key is
// told what to pass, one whose key is not authorized is refused (and the
// run's log says who), and once authorized it records; Ctrl-C on attach
// detaches and keeps what came, the served run going on.
#include <QtTest>

#include <csignal>
#include <memory>
#include <vector>

#include <unistd.h>

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include "cli_process.h"

namespace {

const QStringList kSmall = {"--layers", "2", "--hidden", "32", "--batch", "8", "--clock", "modeled"};

// Starts the CLI and waits (bounded) until its stdout matches.
QRegularExpressionMatch startAndWaitForOut(QProcess& p, const QStringList& args, const QRegularExpression& pattern,
                                           QByteArray& out) {
  return startAndWaitFor(p, args, pattern, out, QProcess::StandardOutput);
}

const QRegularExpression kServing(R"(serving the run at tcp://([0-9.]+:[0-9]+))");

QProcessEnvironment withConfigDir(const QString& dir) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("SHARDSCOPE_CONFIG_DIR", dir);
  return env;
}

}  // namespace

class TestAttachCli : public QObject {
  Q_OBJECT

 private slots:
  void attachedRecordingIsTheServedRun_data() {
    QTest::addColumn<QStringList>("flags");
    QTest::newRow("threads zero3") << QStringList{"--strategy", "zero3", "--ranks", "4", "--steps", "3"};
    QTest::newRow("processes zero2") << QStringList{"--strategy", "zero2", "--ranks", "4", "--steps", "3", "--launch",
                                                    "processes"};
  }

  void attachedRecordingIsTheServedRun() {
    QFETCH(QStringList, flags);
    QTemporaryDir dir;
    const QString served_trace = dir.filePath("served.json"), served_summary = dir.filePath("served.summary.json");
    const QString trace = dir.filePath("attached.json"), summary = dir.filePath("attached.summary.json");
    QProcess served;
    QByteArray out;
    const QRegularExpressionMatch m =
        startAndWaitForOut(served, QStringList{"run", "--serve", "127.0.0.1:0", "--serve-wait", "60", "--trace",
                                               served_trace, "--summary", served_summary} + kSmall + flags,
                           kServing, out);
    QVERIFY2(m.hasMatch(), out.constData());
    const CliResult attached = runCli({"attach", m.captured(1), "--trace", trace, "--summary", summary});
    QVERIFY2(attached.exit_code == 0, qPrintable(attached.err));
    QVERIFY(attached.out.contains("attached to tcp://" + m.captured(1)));
    QVERIFY(served.waitForFinished(60000));
    QCOMPARE(served.exitCode(), 0);
    const QByteArray a = readFileBytes(served_trace), b = readFileBytes(trace);
    QVERIFY(!a.isEmpty());
    QVERIFY2(a == b, "the attached recording's trace differs from the served run's");
    QCOMPARE(summaryWithoutWallTime(summary), summaryWithoutWallTime(served_summary));
  }

  // Inspectors catching up when the server dies (SIGKILL), some of them sent
  // SIGTERM just after: every one ends within seconds, none aborts (a
  // multipart message cut off by the death tripped libzmq's receive-side
  // assertion), none blocks in a send to the gone server (its detach used
  // to), and each writes the trace of what came. Repeated: where the
  // death lands in each one's catch-up varies.
  void inspectorsEndWhenTheServerDiesMidCatchUp() {
    constexpr int kRounds = 3, kInspectors = 8;
    for (int round = 0; round < kRounds; ++round) {
      QTemporaryDir dir;
      QProcess served;
      QByteArray out;
      const QRegularExpressionMatch m = startAndWaitForOut(
          served, QStringList{"run", "--serve", "127.0.0.1:0", "--strategy", "zero3", "--ranks", "4", "--steps",
                              "100000"} + kSmall,
          kServing, out);
      QVERIFY2(m.hasMatch(), out.constData());
      QTest::qWait(1500);  // a history to catch up on
      std::vector<std::unique_ptr<QProcess>> inspectors;
      for (int i = 0; i < kInspectors; ++i) {
        inspectors.push_back(std::make_unique<QProcess>());
        inspectors.back()->start(SHARDSCOPE_CLI_PATH,
                                 {"attach", m.captured(1), "--trace", dir.filePath(QString("t%1.json").arg(i))});
      }
      for (auto& p : inspectors) {
        QByteArray seen;
        QElapsedTimer t;
        t.start();
        while (!seen.contains("attached to") && t.elapsed() < 30000 && p->state() != QProcess::NotRunning) {
          p->waitForReadyRead(50);
          seen += p->readAllStandardOutput();
        }
        QVERIFY2(seen.contains("attached to"), seen.constData());
      }
      // The SIGTERMs land as the inspectors meet the death: some before they notice it.
      served.kill();
      QVERIFY(served.waitForFinished(10000));
      for (int i = 1; i < kInspectors; i += 2)
        if (const qint64 pid = inspectors[static_cast<size_t>(i)]->processId(); pid > 0)  // 0: ended (kill(0) is the group)
          ::kill(static_cast<pid_t>(pid), SIGTERM);
      QElapsedTimer t;
      t.start();
      for (int i = 0; i < kInspectors; ++i) {
        QProcess& p = *inspectors[static_cast<size_t>(i)];
        const bool ended = p.waitForFinished(std::max<qint64>(1, 15000 - t.elapsed()));
        if (!ended) {
          p.kill();
          p.waitForFinished();
        }
        const QByteArray err = p.readAllStandardError();
        const QString who = QStringLiteral("round %1 inspector %2: ").arg(round).arg(i);
        QVERIFY2(ended, qPrintable(who + "still running 15 s after the server died: " + err.right(1000)));
        // A SIGTERM that lands after the trace is written, as the process
        // exits, ends it as the signal does (Qt reads the signal as the exit code).
        const bool terminated = i % 2 == 1;
        if (p.exitStatus() == QProcess::CrashExit)
          QVERIFY2(terminated && p.exitCode() == SIGTERM,
                   qPrintable(who + "crashed (signal " + QString::number(p.exitCode()) + "): " + err.right(1000)));
        else
          QVERIFY2(p.exitCode() == 3 || (terminated && p.exitCode() == 128 + SIGTERM), qPrintable(who + err.right(1000)));
        const QJsonObject trace =
            QJsonDocument::fromJson(readFileBytes(dir.filePath(QString("t%1.json").arg(i)))).object();
        QVERIFY2(trace.value("traceEvents").toArray().size() > 0, qPrintable(who + "no trace: " + err.right(1000)));
      }
      qInfo() << "round" << round << ": every inspector ended within" << t.elapsed() << "ms";
    }
  }

  void keysAreMadeOnceAndPrivate() {
    QTemporaryDir home;
    const QProcessEnvironment env = withConfigDir(home.path());
    const CliResult first = runCli({"keys"}, env);
    QCOMPARE(first.exit_code, 0);
    const QString key = first.out.trimmed();
    QCOMPARE(key.size(), 40);
    QVERIFY(first.err.contains("made a new CURVE identity"));
    QFileInfo identity(home.filePath("curve/identity"));
    QVERIFY(identity.exists());
    QCOMPARE(identity.permissions() & (QFile::ReadGroup | QFile::ReadOther | QFile::WriteGroup | QFile::WriteOther),
             QFileDevice::Permissions());
    const CliResult again = runCli({"keys"}, env);
    QCOMPARE(again.out.trimmed(), key);
    QVERIFY(!again.err.contains("made a new"));
    const CliResult bad = runCli({"keys", "--authorize", "not-a-key"}, env);
    QCOMPARE(bad.exit_code, 2);
    QVERIFY2(bad.err.contains("keys --authorize: KEY must be a public key (40 Z85 characters"), qPrintable(bad.err));
    QCOMPARE(runCli({"keys", "--authorize", key, "laptop"}, env).exit_code, 0);
    QVERIFY(runCli({"keys", "--authorize", key}, env).out.startsWith("already authorized"));
    QCOMPARE(runCli({"keys", "--list"}, env).out, key + " laptop\n");
  }

  void securedServeRefusesThenAccepts() {
    QTemporaryDir server_home, client_home, dir;
    const QProcessEnvironment server_env = withConfigDir(server_home.path());
    const QProcessEnvironment client_env = withConfigDir(client_home.path());
    QProcess served;
    served.setProcessEnvironment(server_env);
    QByteArray out;
    // Held until the first inspector gets in, then long enough (measured CPU
    // steps, about 20 s) to detach from it; stopped with SIGINT at the end.
    const QRegularExpressionMatch m = startAndWaitForOut(
        served, {"run", "--serve", "127.0.0.2:0", "--serve-wait", "120", "--steps", "1000", "--layers", "4", "--hidden",
                 "256", "--batch", "32"},
        kServing, out);
    QVERIFY2(m.hasMatch(), out.constData());
    const QString address = m.captured(1);
    QVERIFY(address.startsWith("127.0.0.2:"));
    QVERIFY(out.contains("with CURVE keys (yours and 0 inspector keys authorized"));
    QVERIFY(out.contains("only your own identity is authorized"));
    const QString server_key = QRegularExpression("--server-key '([^']+)'").match(QString::fromUtf8(out)).captured(1);
    QCOMPARE(server_key.size(), 40);

    const CliResult no_key = runCli({"attach", address, "--trace", dir.filePath("x.json")}, client_env);
    QCOMPARE(no_key.exit_code, 2);
    QVERIFY2(no_key.err.contains("attaching to 127.0.0.2 needs --server-key KEY"), qPrintable(no_key.err));

    const CliResult refused = runCli({"attach", address, "--server-key", server_key}, client_env);
    QCOMPARE(refused.exit_code, 3);
    QVERIFY2(refused.err.contains("refused this inspector"), qPrintable(refused.err));
    const QString client_key = runCli({"keys"}, client_env).out.trimmed();
    QVERIFY(refused.err.contains("shardscope-cli keys --authorize '" + client_key + "'"));

    // Authorized while the run goes on: the next attach records it; Ctrl-C detaches.
    QCOMPARE(runCli({"keys", "--authorize", client_key, "laptop"}, server_env).exit_code, 0);
    QProcess attach;
    attach.setProcessEnvironment(client_env);
    QByteArray attach_out;
    const QString trace = dir.filePath("detached.json");
    QVERIFY(startAndWaitForOut(attach, {"attach", address, "--server-key", server_key, "--trace", trace},
                               QRegularExpression("attached to"), attach_out).hasMatch());
    QTest::qWait(1500);
    ::kill(static_cast<pid_t>(attach.processId()), SIGINT);
    QVERIFY(attach.waitForFinished(30000));
    QCOMPARE(attach.exitCode(), 128 + SIGINT);
    QVERIFY2(attach.readAllStandardError().contains("the served run goes on"), "detach message");
    const QJsonObject recorded = QJsonDocument::fromJson(readFileBytes(trace)).object();
    QVERIFY(!recorded.value("traceEvents").toArray().isEmpty());

    QCOMPARE(served.state(), QProcess::Running);  // detaching left it going
    ::kill(static_cast<pid_t>(served.processId()), SIGINT);
    QVERIFY(served.waitForFinished(30000));
    const QByteArray log = served.readAllStandardError();
    QVERIFY2(log.contains("serve: refused an inspector at 127.0.0.1: its key " + client_key.toUtf8()), log.constData());
  }

  // 127.0.0.1 is served with CURVE too: the serving user attaches with no
  // key given; another account (another HOME, so another identity) is refused,
  // with and without the server's key, until it is authorized.
  void loopbackRefusesAnotherAccount() {
    QTemporaryDir dir, owner_home, other_home;
    const QProcessEnvironment owner = withConfigDir(owner_home.path()), other = withConfigDir(other_home.path());
    QProcess served;
    served.setProcessEnvironment(owner);
    QByteArray out;
    const QRegularExpressionMatch m = startAndWaitForOut(
        served, QStringList{"run", "--serve", "127.0.0.1:0", "--serve-wait", "60", "--strategy", "zero3", "--ranks",
                            "2", "--steps", "3"} + kSmall,
        kServing, out);
    QVERIFY2(m.hasMatch(), out.constData());
    QVERIFY2(out.contains("with CURVE keys"), out.constData());
    const QString server_key = QRegularExpression("--server-key '([^']+)'").match(QString::fromUtf8(out)).captured(1);
    QCOMPARE(server_key.size(), 40);
    const CliResult guessed = runCli({"attach", m.captured(1), "--timeout", "3"}, other);
    QCOMPARE(guessed.exit_code, 3);
    QVERIFY2(guessed.err.contains("not served under your identity") || guessed.err.contains("no run answered"),
             qPrintable(guessed.err));
    const CliResult refused = runCli({"attach", m.captured(1), "--server-key", server_key, "--timeout", "3"}, other);
    QCOMPARE(refused.exit_code, 3);
    QVERIFY2(refused.err.contains("refused this inspector"), qPrintable(refused.err));
    const QString trace = dir.filePath("owner.json");
    const CliResult mine = runCli({"attach", m.captured(1), "--trace", trace}, owner);
    QVERIFY2(mine.exit_code == 0, qPrintable(mine.err));
    QVERIFY(served.waitForFinished(60000));
    QCOMPARE(served.exitCode(), 0);
    QVERIFY(!QJsonDocument::fromJson(readFileBytes(trace)).object().value("traceEvents").toArray().isEmpty());
  }

  void badServeAndAttachFlags() {
    const CliResult wait_alone = runCli(QStringList{"run", "--serve-wait", "5"} + kSmall);
    QCOMPARE(wait_alone.exit_code, 2);
    QVERIFY2(wait_alone.err.contains("--serve-wait needs --serve ADDR"), qPrintable(wait_alone.err));
    const CliResult bad_serve = runCli(QStringList{"run", "--serve", "host:"} + kSmall);
    QCOMPARE(bad_serve.exit_code, 2);
    QVERIFY2(bad_serve.err.contains("--serve must be PORT, HOST:PORT or tcp://HOST:PORT"), qPrintable(bad_serve.err));
    const CliResult other_node = runCli(QStringList{"run", "--serve", "0", "--launch", "processes", "--nnodes", "2",
                                                    "--node-rank", "1", "--ranks", "4", "--rdzv", "file:///tmp/x"} + kSmall);
    QCOMPARE(other_node.exit_code, 2);
    QVERIFY2(other_node.err.contains("--serve belongs on node 0"), qPrintable(other_node.err));
    const CliResult nothing = runCli({"attach", "127.0.0.1:1", "--timeout", "0.3"});
    QCOMPARE(nothing.exit_code, 3);
    QVERIFY2(nothing.err.contains("no run answered at tcp://127.0.0.1:1"), qPrintable(nothing.err));
    QCOMPARE(runCli({"attach"}).exit_code, 2);
    QCOMPARE(runCli({"attach", "1", "--bogus"}).exit_code, 2);
    QVERIFY(runCli({"attach", "--help"}).out.contains("usage: shardscope-cli attach ADDR"));
  }
};

QTEST_GUILESS_MAIN(TestAttachCli)
#include "test_attach_cli.moc"
