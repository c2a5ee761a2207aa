// Lockstep stepping with --launch processes, as a user runs it: --break-on
// stops every rank process at the same points as the threads run of the same
// config, and the run's trace and summary are the threads run's; an attached
// inspector pauses and steps a served processes run through the same stops
// (points, stop ids, ledgers) as a served threads run, and continue finishes
// it; Stop, or a worker killed, while the ranks are stopped ends the run with
// the usual message, no hang; a pipeline of processes stops at the slots of
// its schedule as its threads run does; two nodes (their ranks passing node 0's gate, found in the
// store) stop where one 8-rank threads run stops.
#include <QtTest>

#include <csignal>

#include <unistd.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>

#include "attach/attach_client.h"
#include "cli_process.h"
#include "loopback_port.h"

using namespace shardscope;

namespace {

const QStringList kRun = {"--strategy", "zero3", "--ranks", "4", "--layers", "2", "--hidden", "32",
                          "--batch", "8", "--clock", "modeled"};
const QRegularExpression kServing(R"(serving the run at tcp://([0-9.]+:[0-9]+))");

template <class F>
bool eventually(F f, int ms = 20000) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < ms) {
    if (f()) return true;
    QTest::qWait(2);
  }
  return false;
}

// The "break:" lines' points (the ledger after ';' is read while prefetches may still land).
QStringList breakPoints(const QString& out) {
  QStringList points;
  for (const QString& line : out.split('\n'))
    if (line.startsWith("break:")) points << line.section(';', 0, 0);
  return points;
}


AttachedRun attachTo(const QString& address) {
  AttachOptions o;
  o.address = parseServeAddress(address.toStdString(), "attach ADDR", false);
  o.name = "stepping test";
  return attachToRun(o);
}

struct Stepped {
  QStringList stops;         // "step+k kind block unit" relative to the first stop after NextStep
  QList<uint64_t> stop_ids;  // relative to it too
  std::vector<std::array<int64_t, kCategoryCount>> ledgers;  // at that stop, once settled
  QJsonObject summary;
  bool lockstep = true;
};

// A pipeline's stop: every stage's point (stages stop at schedule slots, not in lockstep).
QString pipelineStop(const std::vector<GatePoint>& points, int base_step) {
  QStringList ranks;
  for (const GatePoint& p : points)
    ranks << QStringLiteral("%1 mb %2 slot %3 step+%4")
                 .arg(QString::fromUtf8(eventKindName(p.kind).data(), qsizetype(eventKindName(p.kind).size())))
                 .arg(p.microbatch)
                 .arg(p.slot)
                 .arg(p.step - base_step);
  return ranks.join(" | ");
}

// Serves the run (threads or processes), attaches, pauses, steps through a
// fixed sequence from the next training step's first op, then continues.
// With `pipeline` args (--pp …) a stop records every stage's point.
Stepped stepServedRun(const QString& launch, const QString& dir, const QStringList& pipeline = {}) {
  Stepped s;
  const QString summary = dir + "/" + launch + ".summary.json";
  QProcess served;
  QByteArray out;
  const QRegularExpressionMatch m = startAndWaitFor(
      served, QStringList{"run", "--serve", "127.0.0.1:0", "--serve-wait", "60", "--steps", "6", "--launch", launch,
                          "--summary", summary} + kRun + pipeline,
      kServing, out, QProcess::StandardOutput);
  if (!m.hasMatch()) {
    qWarning("%s", out.constData());
    return s;
  }
  AttachedRun attached = attachTo(m.captured(1));
  StepControl& gate = attached.run->stepControl();
  gate.pause();
  attached.run->start();
  std::vector<GatePoint> points;
  uint64_t id = 0, first = 0, last = 0;
  const auto nextStop = [&] {
    const bool ok = eventually([&] { return gate.stopped(&points, &id) && id != last; });
    last = id;
    if (pipeline.isEmpty())
      for (const GatePoint& p : points) s.lockstep &= ok && p == points.front();
    return ok;
  };
  if (!nextStop()) return s;
  int base_step = -1;
  for (StepMode mode : {StepMode::NextStep, StepMode::NextOp, StepMode::NextOp, StepMode::NextUnit,
                        StepMode::NextPhase, StepMode::NextAction, StepMode::NextAction, StepMode::NextStep}) {
    gate.step(mode);
    if (!nextStop()) return s;
    if (base_step < 0) {
      base_step = points[0].step;
      first = id;
      QTest::qWait(500);  // the other streams' prefetches land; the ledgers follow
      for (int r = 0; r < 4; ++r) s.ledgers.push_back(attached.gate->ledgerAtStop(r).value_or(std::array<int64_t, kCategoryCount>{}));
    }
    const GatePoint& p = points[0];
    if (!pipeline.isEmpty())
      s.stops << pipelineStop(points, base_step);
    else
      s.stops << QStringLiteral("step+%1 %2 block %3 unit %4")
                   .arg(p.step - base_step)
                   .arg(QString::fromUtf8(eventKindName(p.kind).data(), qsizetype(eventKindName(p.kind).size())))
                   .arg(p.block)
                   .arg(p.unit);
    s.stop_ids << id - first;
  }
  gate.resume();
  try {
    attached.run->wait();
  } catch (const std::exception& e) {
    qWarning("attached run: %s", e.what());
  }
  if (!served.waitForFinished(60000) || served.exitCode() != 0) {
    qWarning("served %s run: exit %d: %s", qPrintable(launch), served.exitCode(), served.readAllStandardError().constData());
    return s;
  }
  s.summary = summaryWithoutWallTime(summary);
  return s;
}

}  // namespace

class TestProcessesStepping : public QObject {
  Q_OBJECT

 private slots:
  void breakpointsStopWhereThreadsStop() {
    QTemporaryDir dir;
    QMap<QString, CliResult> r;
    for (const QString launch : {"threads", "processes"}) {
      r[launch] = runCli(QStringList{"run", "--steps", "2", "--launch", launch, "--break-on", "forward", "--break-on",
                                     "reduce_scatter", "--trace", dir.filePath(launch + ".json"), "--summary",
                                     dir.filePath(launch + ".summary.json")} + kRun,
                         60000);
      QVERIFY2(r[launch].exit_code == 0, qPrintable(launch + ": " + r[launch].err));
    }
    const QStringList threads = breakPoints(r["threads"].out), processes = breakPoints(r["processes"].out);
    QVERIFY(threads.size() >= 8);
    QCOMPARE(processes, threads);
    QVERIFY2(!r["processes"].out.contains("NOT in lockstep"), qPrintable(r["processes"].out));
    // The ledger a stop shows comes from the rank processes (zero3 holds gathered parameters there).
    QVERIFY2(r["processes"].out.contains(QRegularExpression("gathered 0\\.0[1-9]")), qPrintable(r["processes"].out));
    const QByteArray a = readFileBytes(dir.filePath("threads.json")), b = readFileBytes(dir.filePath("processes.json"));
    QVERIFY(a.size() > 1000);
    QVERIFY2(a == b, "the stepped processes run's trace differs from the threads run's");
    QCOMPARE(summaryWithoutWallTime(dir.filePath("processes.summary.json")),
             summaryWithoutWallTime(dir.filePath("threads.summary.json")));
  }

  void inspectorStepsAProcessesRunAsAThreadsRun() {
    QTemporaryDir dir;
    const Stepped threads = stepServedRun("threads", dir.path());
    const Stepped processes = stepServedRun("processes", dir.path());
    QCOMPARE(threads.stops.size(), 8);
    QVERIFY(threads.lockstep);
    QVERIFY(processes.lockstep);
    qInfo() << processes.stops << processes.stop_ids << threads.stops;
    QCOMPARE(processes.stops, threads.stops);
    QCOMPARE(processes.stop_ids, threads.stop_ids);
    QCOMPARE(processes.stops.front(), QStringLiteral("step+0 forward block 0 unit 0"));
    QCOMPARE(processes.ledgers, threads.ledgers);
    QVERIFY(!threads.summary.isEmpty());
    QCOMPARE(processes.summary, threads.summary);
  }

  // A pipeline of rank processes stops at the schedule slots a threads run
  // stops at: each gate point carries its microbatch and slot over the wire.
  void inspectorStepsAProcessesPipelineAsAThreadsRun() {
    QTemporaryDir dir;
    const QStringList pipeline = {"--pp", "2", "--microbatches", "4", "--pp-schedule", "1f1b"};
    const Stepped threads = stepServedRun("threads", dir.path(), pipeline);
    const Stepped processes = stepServedRun("processes", dir.path(), pipeline);
    QCOMPARE(threads.stops.size(), 8);
    qInfo() << processes.stops;
    QCOMPARE(processes.stops, threads.stops);
    QCOMPARE(processes.stop_ids, threads.stop_ids);
    // The slots crossed the wire: the next step's first pass, stage 0 at slot 16
    // (1F1B, 2 stages, 4 microbatches: 16 slots a step), stage 1 at 17.
    QVERIFY2(processes.stops.front().startsWith("forward mb 0 slot 16 step+0 |"), qPrintable(processes.stops.front()));
    QVERIFY2(processes.stops.front().endsWith("| forward mb 0 slot 17 step+0"), qPrintable(processes.stops.front()));
    QCOMPARE(processes.ledgers, threads.ledgers);
    QVERIFY(!threads.summary.isEmpty());
    QCOMPARE(processes.summary, threads.summary);
  }

  void twoNodesStopWhereOneRunStops() {
    const QString redis = QStandardPaths::findExecutable("redis-server");
    if (redis.isEmpty()) QSKIP("redis-server is not installed (Debian package redis-server)");
    QTemporaryDir dir;
    const quint16 port = freePort();
    QVERIFY(port > 0);
    QProcess server;
    server.start(redis, {"--port", QString::number(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                         "--dir", dir.path()});
    QVERIFY(server.waitForStarted());
    struct Stop {
      QProcess& p;
      ~Stop() {
        p.terminate();
        if (!p.waitForFinished(5000)) p.kill();
      }
    } stop_server{server};
    bool up = false;
    for (int i = 0; i < 100 && !(up = accepts(port)); ++i) QTest::qWait(50);
    QVERIFY2(up, "redis-server did not start");
    const QStringList run = {"run", "--strategy", "hsdp", "--shard-group", "4", "--ranks", "8", "--layers", "2",
                             "--hidden", "32", "--batch", "8", "--steps", "1", "--clock", "modeled", "--break-on",
                             "backward"};
    const CliResult threads = runCli(run, 60000);
    QVERIFY2(threads.exit_code == 0, qPrintable(threads.err));
    const QStringList multi = {"--launch", "processes", "--nnodes", "2", "--nproc-per-node", "4", "--rdzv",
                               QStringLiteral("redis://127.0.0.1:%1").arg(port), "--rdzv-id", "two-nodes-stepping"};
    QProcess node1;
    node1.start(SHARDSCOPE_CLI_PATH, run + multi + QStringList{"--node-rank", "1", "--node-addr", "127.0.0.2"});
    const CliResult node0 = runCli(run + multi + QStringList{"--node-rank", "0"}, 60000);
    QVERIFY2(node1.waitForFinished(60000), "node 1 did not finish");
    QVERIFY2(node0.exit_code == 0, qPrintable(node0.err));
    QCOMPARE(node1.exitCode(), 0);
    const QStringList expected = breakPoints(threads.out);
    QVERIFY(expected.size() >= 4);
    QVERIFY(expected.front().contains("all 8 ranks at backward"));
    QCOMPARE(breakPoints(node0.out), expected);
  }

  void stopAtAStopEndsTheRun() {
    QProcess served;
    QByteArray out;
    const QRegularExpressionMatch m = startAndWaitFor(
        served, QStringList{"run", "--serve", "127.0.0.1:0", "--serve-wait", "60", "--steps", "1000", "--launch",
                            "processes"} + kRun,
        kServing, out, QProcess::StandardOutput);
    QVERIFY2(m.hasMatch(), out.constData());
    AttachedRun attached = attachTo(m.captured(1));
    attached.gate->pause();
    attached.run->start();
    QVERIFY(eventually([&] { return attached.gate->stopped(); }));
    QElapsedTimer t;
    t.start();
    attached.gate->stopRun();
    QVERIFY2(served.waitForFinished(30000), "the stopped run did not end on Stop");
    QCOMPARE(served.exitCode(), 3);
    const QByteArray err = served.readAllStandardError();
    QVERIFY2(err.contains("error: run stopped by inspector 'stepping test'"), err.constData());
    QVERIFY2(t.elapsed() < 15000, qPrintable(QString::number(t.elapsed())));
  }

  void aWorkerKilledAtAStopEndsTheRun() {
    QProcess served;
    QByteArray err;
    // Debug logs name the workers' pids; stdout says where it is served.
    served.setProcessChannelMode(QProcess::MergedChannels);
    const QRegularExpressionMatch m = startAndWaitFor(
        served, QStringList{"--log-level", "debug", "run", "--serve", "127.0.0.1:0", "--serve-wait", "60", "--steps",
                            "1000", "--launch", "processes"} + kRun,
        kServing, err, QProcess::StandardOutput);
    QVERIFY2(m.hasMatch(), err.constData());
    AttachedRun attached = attachTo(m.captured(1));
    attached.gate->pause();
    attached.run->start();
    QVERIFY(eventually([&] { return attached.gate->stopped(); }));
    err += served.readAll();
    const QRegularExpressionMatch pid = QRegularExpression("rank 2: worker pid (\\d+)").match(QString::fromUtf8(err));
    QVERIFY2(pid.hasMatch(), err.constData());
    const pid_t worker = static_cast<pid_t>(pid.captured(1).toLongLong());
    QElapsedTimer t;
    t.start();
    QCOMPARE(::kill(worker, SIGKILL), 0);
    QVERIFY2(served.waitForFinished(30000), "the stopped run did not end after a worker was killed");
    err += served.readAll();
    QCOMPARE(served.exitCode(), 3);
    QVERIFY2(QString::fromUtf8(err).contains(
                 QStringLiteral("error: run stopped: rank 2 (worker pid %1) was killed by signal 9 (SIGKILL)").arg(worker)),
             err.right(3000).constData());
    qInfo() << "ended" << t.elapsed() << "ms after the kill";
    QVERIFY2(t.elapsed() < 20000, qPrintable(QString::number(t.elapsed())));
    bool ended = false;
    try {
      attached.run->wait();
    } catch (const std::exception&) {
      ended = true;  // the served run's failure reaches the inspector
    }
    QVERIFY(ended);
  }

  // A worker stopped by SIGTERM or SIGINT (its own handler: it cancels its
  // rank, forwards what it has and exits 128 + signal) while the ranks pass
  // --break-on stops: the others used to wait for it at the next stop in the
  // gate relay forever (4 of 9 tries). Every try must end within seconds,
  // name the rank and the signal (not a collective hang), and leave the trace
  // of what ran. Repeated: where the signal lands (at a stop, between stops,
  // in a collective) varies from try to try.
  void aWorkerStoppedBySignalAtStopsEndsTheRun() {
    const int tries = 6;
    for (int i = 0; i < tries; ++i) {
      const int sig = i % 2 ? SIGINT : SIGTERM;
      const QString name = sig == SIGINT ? "SIGINT" : "SIGTERM";
      QTemporaryDir dir;
      const QString trace = dir.filePath("t.json");
      QProcess p;
      QByteArray seen;
      p.setProcessChannelMode(QProcess::MergedChannels);
      const QRegularExpressionMatch m = startAndWaitFor(
          p,
          {"--log-level", "debug", "run", "--launch", "processes", "--strategy", "zero3", "--ranks", "4", "--steps",
           "1000", "--layers", "4", "--hidden", "256", "--batch", "32", "--break-on", "forward", "--trace", trace},
          QRegularExpression(R"(rank 1: worker pid (\d+)(?:.|\n)*break: step 0)"), seen, QProcess::StandardOutput);
      QVERIFY2(m.hasMatch(), seen.right(3000).constData());
      const pid_t worker = static_cast<pid_t>(m.captured(1).toLongLong());
      QElapsedTimer t;
      t.start();
      QCOMPARE(::kill(worker, sig), 0);
      const bool ended = p.waitForFinished(20000);
      const qint64 ms = t.elapsed();
      if (!ended) {
        p.kill();
        p.waitForFinished();
      }
      seen += p.readAll();
      QVERIFY2(ended, qPrintable(QStringLiteral("try %1 (%2): the run hung after the worker exited: %3")
                                     .arg(i).arg(name, QString::fromUtf8(seen.right(2000)))));
      qInfo() << "try" << i << name << "ended" << ms << "ms after the signal";
      QCOMPARE(p.exitCode(), 3);
      // The run's one error line (the ranks' own debug lines may say what they met).
      const QRegularExpressionMatch error =
          QRegularExpression("^error: run stopped: .*$", QRegularExpression::MultilineOption).match(QString::fromUtf8(seen));
      QVERIFY2(error.hasMatch(), seen.right(2000).constData());
      QCOMPARE(error.captured(0),
               QStringLiteral("error: run stopped: rank 1 (worker pid %1) exited (%2) during step 0").arg(worker).arg(name));
      QVERIFY2(ms < 8000, qPrintable(QString::number(ms)));
      // The partial trace: what ran, and rank 1's end marked as an error.
      const QJsonObject o = QJsonDocument::fromJson(readFileBytes(trace)).object();
      const QJsonArray events = o.value("traceEvents").toArray();
      QVERIFY2(events.size() > 10, qPrintable(QStringLiteral("try %1: %2 events").arg(i).arg(events.size())));
      bool error_on_rank1 = false;
      for (const QJsonValue& e : events)
        error_on_rank1 |= e.toObject().value("name").toString() == "error" && e.toObject().value("pid").toInt(-1) == 1;
      QVERIFY2(error_on_rank1, "no error event for the stopped rank");
    }
  }
};

QTEST_GUILESS_MAIN(TestProcessesStepping)
#include "test_processes_stepping.moc"
