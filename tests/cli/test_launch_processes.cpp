// --launch processes: one worker process per rank, as torchrun starts them,
// Gloo between processes through a rendezvous store, every rank's events
// streamed to the launcher. Each strategy gives the same results as the same
// run in threads (on the modeled clock: the same trace bytes, and summaries
// equal up to the wall time); a worker killed mid-run ends the run with one
// message naming its rank and signal, and a valid trace of what it sent;
// SIGINT reaches every worker once and keeps what ran; bad launch flags are
// refused before anything starts. The collector hears only the run's own
// workers: a client that read the collector's address and the run id off a
// worker's command line, without the run's keys, cannot fail the run or
// write into its summary.
#include <QtTest>

#include <csignal>
#include <memory>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>
#include <zmq.hpp>

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>

#include "cli_process.h"
#include "launch/run_keys.h"
#include "launch/wire_format.h"
#include "loopback_port.h"

using shardscope::readRunKeysFile;
using shardscope::RunKeys;
using shardscope::WireKind;

namespace {

const QStringList kSmall = {"--layers", "2", "--hidden", "32", "--batch", "8", "--steps", "2", "--clock", "modeled"};


}  // namespace

class TestLaunchProcesses : public QObject {
  Q_OBJECT

 private slots:
  void everyStrategyMatchesThreads_data() {
    QTest::addColumn<QStringList>("flags");
    QTest::newRow("ddp") << QStringList{"--strategy", "ddp"};
    QTest::newRow("zero1") << QStringList{"--strategy", "zero1"};
    QTest::newRow("zero2") << QStringList{"--strategy", "zero2"};
    QTest::newRow("zero3") << QStringList{"--strategy", "zero3"};
    QTest::newRow("hsdp 2x2") << QStringList{"--strategy", "hsdp", "--shard-group", "2"};
    QTest::newRow("zero3 x tp 2") << QStringList{"--strategy", "zero3", "--tp", "2"};
    QTest::newRow("gpt zero1 x tp 2, sequence parallel")
        << QStringList{"--model", "gpt", "--heads", "2", "--seq", "16", "--strategy", "zero1", "--tp", "2", "--sp", "on"};
    QTest::newRow("gpt zero2, full checkpointing")
        << QStringList{"--model", "gpt", "--heads", "2", "--seq", "16", "--strategy", "zero2",
                       "--activation-checkpointing", "full"};
    // Pipelines: activations and gradients cross processes as Gloo pairs.
    QTest::newRow("1f1b 2 stages x zero1") << QStringList{"--strategy", "zero1", "--pp", "2", "--microbatches", "4"};
    QTest::newRow("interleaved 2 stages x tp 2, zero3")
        << QStringList{"--model", "gpt", "--heads", "2", "--seq", "16", "--layers", "4", "--strategy", "zero3",
                       "--tp", "2", "--pp", "2", "--microbatches", "4", "--pp-schedule", "interleaved"};
  }

  void everyStrategyMatchesThreads() {
    QFETCH(QStringList, flags);
    QTemporaryDir dir;
    QMap<QString, QString> trace, summary;
    for (const QString launch : {"threads", "processes"}) {
      trace[launch] = dir.filePath(launch + ".trace.json");
      summary[launch] = dir.filePath(launch + ".summary.json");
      QStringList args = QStringList{"run", "--ranks", "4", "--launch", launch} + kSmall + flags;
      args << "--trace" << trace[launch] << "--summary" << summary[launch];
      const CliResult r = runCli(args);
      QVERIFY2(r.exit_code == 0, qPrintable(launch + ": " + r.err));
    }
    const QByteArray threads = readFileBytes(trace["threads"]), processes = readFileBytes(trace["processes"]);
    QVERIFY(threads.size() > 1000);
    QVERIFY2(threads == processes, "the modeled trace of a processes run differs from the threads run's");
    const QJsonObject a = summaryWithoutWallTime(summary["threads"]);
    const QJsonObject b = summaryWithoutWallTime(summary["processes"]);
    QVERIFY(a.contains("per_rank"));
    QCOMPARE(b, a);
  }

  // The measured clock: losses, final weights, ledgers and traffic are the
  // same numbers (times are this machine's, so they differ).
  void measuredRunMatchesThreads() {
    QTemporaryDir dir;
    QMap<QString, QJsonObject> s;
    for (const QString launch : {"threads", "processes"}) {
      const QString path = dir.filePath(launch + ".json");
      const CliResult r = runCli({"run", "--strategy", "zero2", "--ranks", "4", "--layers", "2", "--hidden", "32",
                                  "--batch", "8", "--steps", "3", "--launch", launch, "--summary", path});
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      s[launch] = QJsonDocument::fromJson(readFileBytes(path)).object();
    }
    for (const char* key : {"bucket_fire_order", "buckets", "padding_bytes"})
      QCOMPARE(s["processes"].value(key), s["threads"].value(key));
    const QJsonArray la = s["threads"].value("steps").toArray(), lb = s["processes"].value("steps").toArray();
    QCOMPARE(lb.size(), 3);
    for (int i = 0; i < 3; ++i) QCOMPARE(lb[i].toObject().value("loss"), la[i].toObject().value("loss"));
    const QJsonArray ra = s["threads"].value("per_rank").toArray(), rb = s["processes"].value("per_rank").toArray();
    QCOMPARE(rb.size(), 4);
    for (int r = 0; r < 4; ++r)
      for (const char* key : {"peak_bytes", "model_state_peak_bytes", "total_peak_bytes", "comm_bytes"})
        QCOMPARE(rb[r].toObject().value(key), ra[r].toObject().value(key));
  }

  void aKilledWorkerEndsTheRunWithItsRankAndSignal() {
    QTemporaryDir dir;
    const QString trace = dir.filePath("t.json");
    QProcess p;
    QByteArray err;
    const QRegularExpressionMatch m = startAndWaitFor(
        p,
        {"--log-level", "debug", "run", "--strategy", "zero3", "--ranks", "4", "--layers", "2", "--hidden", "32",
         "--batch", "8", "--steps", "100000", "--launch", "processes", "--trace", trace},
        QRegularExpression("rank 1: worker pid (\\d+)(?:.|\\n)*step 2 done"), err, QProcess::StandardError);
    QVERIFY2(m.hasMatch(), err.constData());
    const pid_t worker = static_cast<pid_t>(m.captured(1).toLongLong());
    QVERIFY(worker > 0);
    QElapsedTimer timer;
    timer.start();
    QCOMPARE(::kill(worker, SIGKILL), 0);
    QVERIFY2(p.waitForFinished(60000), "the run did not end after a worker was killed");
    err += p.readAllStandardError();
    QCOMPARE(p.exitCode(), 3);
    const QString text = QString::fromUtf8(err);
    QVERIFY2(text.contains(QStringLiteral("error: run stopped: rank 1 (worker pid %1) was killed by signal 9 (SIGKILL)")
                               .arg(worker)),
             qPrintable(text.right(2000)));
    // Every event received stays, and rank 1's end is an error event.
    const QJsonObject t = QJsonDocument::fromJson(readFileBytes(trace)).object();
    const QJsonArray events = t.value("traceEvents").toArray();
    QVERIFY(events.size() > 100);
    bool error_on_rank1 = false;
    for (const QJsonValue& e : events) {
      const QJsonObject o = e.toObject();
      if (o.value("name").toString() == "error" && o.value("pid").toInt(-1) == 1) error_on_rank1 = true;
    }
    QVERIFY2(error_on_rank1, "no error event for the killed rank");
  }

  // A worker killed while the ranks still rendezvous: the others wait in the
  // store for it; the run used to end only after the collective timeout, a
  // SIGTERM grace and a wait for late messages (8 s). A death is known at
  // once: the run ends within 2 s, naming it.
  void aWorkerKilledDuringSetupEndsTheRunWithinTwoSeconds() {
    QProcess p;
    QByteArray err;
    const QRegularExpressionMatch m = startAndWaitFor(
        p,
        {"--log-level", "debug", "run", "--strategy", "zero3", "--ranks", "4", "--layers", "2", "--hidden", "32",
         "--batch", "8", "--steps", "100000", "--launch", "processes"},
        QRegularExpression("rank 3: worker pid (\\d+)"), err, QProcess::StandardError);
    QVERIFY2(m.hasMatch(), err.constData());
    const pid_t worker = static_cast<pid_t>(m.captured(1).toLongLong());
    QElapsedTimer timer;
    timer.start();
    QCOMPARE(::kill(worker, SIGKILL), 0);
    QVERIFY2(p.waitForFinished(30000), "the run did not end after a worker was killed");
    const qint64 ms = timer.elapsed();
    err += p.readAllStandardError();
    qInfo() << "ended" << ms << "ms after the kill";
    QCOMPARE(p.exitCode(), 3);
    QVERIFY2(QString::fromUtf8(err).contains(
                 QStringLiteral("error: run stopped: rank 3 (worker pid %1) was killed by signal 9 (SIGKILL)").arg(worker)),
             err.right(2000).constData());
    QVERIFY2(ms < 2000, qPrintable(QString::number(ms)));
  }

  // A launcher killed with SIGKILL cannot remove its rendezvous directory;
  // the next processes run removes it (its launcher's pid is gone), and
  // leaves a live run's alone.
  void aKilledLaunchersRendezvousDirIsRemovedByTheNextRun() {
    QProcess p;
    QByteArray err;
    const QRegularExpressionMatch m = startAndWaitFor(
        p,
        {"--log-level", "info", "run", "--strategy", "ddp", "--ranks", "2", "--layers", "2", "--hidden", "32",
         "--batch", "4", "--steps", "100000", "--launch", "processes"},
        QRegularExpression("rendezvous file://(/tmp/shardscope-rdzv-[A-Za-z0-9]+)"), err, QProcess::StandardError);
    QVERIFY2(m.hasMatch(), err.constData());
    const QString stale = m.captured(1);
    p.kill();  // SIGKILL: no cleanup
    QVERIFY(p.waitForFinished(10000));
    QVERIFY2(QFileInfo(stale).isDir(), qPrintable(stale));
    QTemporaryDir live_dir("/tmp/shardscope-rdzv-liveXXXXXX");  // a live launcher's (this test's pid)
    {
      QFile owner(live_dir.filePath(".shardscope-launcher-pid"));
      QVERIFY(owner.open(QIODevice::WriteOnly));
      owner.write(QByteArray::number(static_cast<qint64>(::getpid())) + "\n");
    }
    const CliResult next = runCli({"run", "--strategy", "ddp", "--ranks", "2", "--layers", "2", "--hidden", "32",
                                   "--batch", "4", "--steps", "1", "--launch", "processes"},
                                  60000);
    QVERIFY2(next.exit_code == 0, qPrintable(next.err));
    QVERIFY2(!QFileInfo::exists(stale), qPrintable(stale + " is still there"));
    QVERIFY(QFileInfo(live_dir.path()).isDir());
  }

  void sigintStopsEveryWorkerAndKeepsWhatRan() {
    QTemporaryDir dir;
    const QString summary = dir.filePath("s.json");
    QProcess p;
    QByteArray err;
    const QRegularExpressionMatch m = startAndWaitFor(
        p,
        {"--log-level", "debug", "run", "--strategy", "ddp", "--ranks", "3", "--layers", "2", "--hidden", "32",
         "--batch", "6", "--steps", "100000", "--launch", "processes", "--summary", summary},
        QRegularExpression("step 3 done"), err, QProcess::StandardError);
    QVERIFY2(m.hasMatch(), err.constData());
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(60000));
    err += p.readAllStandardError();
    QCOMPARE(p.exitCode(), 130);
    QVERIFY2(QString::fromUtf8(err).contains("interrupted by SIGINT"), err.right(2000).constData());
    const QJsonObject s = QJsonDocument::fromJson(readFileBytes(summary)).object();
    QVERIFY(s.value("interrupted").toObject().value("steps_done").toInt() >= 3);
    QCOMPARE(s.value("per_rank").toArray().size(), 3);
  }

  void badLaunchFlagsAreRefused_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::newRow("unknown") << QStringList{"--launch", "fork"} << "--launch must be threads, processes or env";
    QTest::newRow("env without a store") << QStringList{"--launch", "env"}
                                         << "--launch env needs --rdzv, a store every rank reaches";
    QTest::newRow("env placed by hand") << QStringList{"--launch", "env", "--rdzv", "file:///tmp", "--nnodes", "2"}
                                        << "--nnodes, --node-rank and --nproc-per-node do not apply to --launch env";
    QTest::newRow("meta") << QStringList{"--launch", "processes", "--backend", "meta"}
                          << "--launch applies to --backend cpu (Gloo between processes) or cuda";
    QTest::newRow("cuda-emulated") << QStringList{"--launch", "processes", "--backend", "cuda-emulated"}
                                   << "--launch processes does not apply to --backend cuda-emulated: it emulates "
                                      "all its ranks on GPU 0 inside one process";
    QTest::newRow("break on nothing known") << QStringList{"--launch", "processes", "--break-on", "lunch"}
                                            << "--break-on must be";
  }

  void badLaunchFlagsAreRefused() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    const CliResult r = runCli(QStringList{"run"} + args);
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
  }

  // --launch env under Debian's Open MPI: four processes mpirun started give
  // the trace and summary of the same run in threads.
  void mpirunRanksMatchThreads() {
    const QString mpirun = QStandardPaths::findExecutable("mpirun");
    if (mpirun.isEmpty()) QSKIP("mpirun is not installed (Debian package openmpi-bin)");
    QTemporaryDir dir;
    const QStringList run = QStringList{"run", "--strategy", "zero3"} + kSmall;
    const CliResult threads = runCli(run + QStringList{"--ranks", "4", "--trace", dir.filePath("threads.json"),
                                                       "--summary", dir.filePath("threads.summary.json")});
    QVERIFY2(threads.exit_code == 0, qPrintable(threads.err));
    const CliResult env = runProcess(
        mpirun,
        QStringList{"-np", "4", "--oversubscribe", "--allow-run-as-root", SHARDSCOPE_CLI_PATH} + run +
            QStringList{"--launch", "env", "--rdzv", "file://" + dir.filePath("store"), "--trace",
                        dir.filePath("env.json"), "--summary", dir.filePath("env.summary.json")},
        QProcessEnvironment::systemEnvironment());
    QVERIFY2(env.exit_code == 0, qPrintable(env.out + env.err));
    QVERIFY2(env.out.contains("rank 0 of 4, started by Open MPI (OMPI_COMM_WORLD_RANK=0"), qPrintable(env.out));
    QVERIFY2(env.out.contains("rank 3 finished; rank 0 writes the trace and summary"), qPrintable(env.out));
    QVERIFY(readFileBytes(dir.filePath("threads.json")).size() > 1000);
    QVERIFY2(readFileBytes(dir.filePath("env.json")) == readFileBytes(dir.filePath("threads.json")),
             "the modeled trace of the mpirun job differs from the threads run's");
    QCOMPARE(summaryWithoutWallTime(dir.filePath("env.summary.json")),
             summaryWithoutWallTime(dir.filePath("threads.summary.json")));
  }

  // The environments srun and torchrun give four processes, set by hand (a
  // pipeline too: its stages are processes the cluster launcher started).
  void srunAndTorchrunEnvironmentsMatchThreads_data() {
    QTest::addColumn<QString>("rank_var");
    QTest::addColumn<QString>("size_var");
    QTest::addColumn<QString>("local_var");
    QTest::addColumn<QString>("launcher");
    QTest::addColumn<QStringList>("flags");
    QTest::newRow("srun") << "SLURM_PROCID" << "SLURM_NTASKS" << "SLURM_LOCALID" << "Slurm"
                          << QStringList{"--strategy", "zero2"};
    QTest::newRow("torchrun") << "RANK" << "WORLD_SIZE" << "LOCAL_RANK" << "torchrun"
                              << QStringList{"--strategy", "zero2"};
    QTest::newRow("torchrun, 2 pipeline stages x fsdp")
        << "RANK" << "WORLD_SIZE" << "LOCAL_RANK" << "torchrun"
        << QStringList{"--strategy", "fsdp", "--pp", "2", "--microbatches", "2", "--pp-schedule", "gpipe"};
  }

  void srunAndTorchrunEnvironmentsMatchThreads() {
    QFETCH(QString, rank_var);
    QFETCH(QString, size_var);
    QFETCH(QString, local_var);
    QFETCH(QString, launcher);
    QFETCH(QStringList, flags);
    QTemporaryDir dir;
    const QStringList run = QStringList{"run"} + kSmall + flags;
    const CliResult threads = runCli(run + QStringList{"--ranks", "4", "--summary", dir.filePath("threads.json")});
    QVERIFY2(threads.exit_code == 0, qPrintable(threads.err));
    std::vector<std::unique_ptr<QProcess>> ranks;
    for (int r = 0; r < 4; ++r) {
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                            "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "PMI_RANK", "PMI_SIZE", "PMIX_RANK"})
        env.remove(v);
      env.insert(rank_var, QString::number(r));
      env.insert(size_var, "4");
      env.insert(local_var, QString::number(r));
      if (launcher == "torchrun") env.insert("LOCAL_WORLD_SIZE", "4");
      ranks.push_back(std::make_unique<QProcess>());
      ranks.back()->setProcessEnvironment(env);
      QStringList args = run + QStringList{"--launch", "env", "--rdzv", "file://" + dir.filePath("store")};
      if (r == 0) args << "--summary" << dir.filePath("env.json");
      ranks.back()->start(SHARDSCOPE_CLI_PATH, args);
    }
    for (int r = 0; r < 4; ++r) {
      QProcess& p = *ranks[static_cast<size_t>(r)];
      QVERIFY2(p.waitForFinished(60000), "a rank did not finish");
      const QString out = QString::fromUtf8(p.readAllStandardOutput());
      QVERIFY2(p.exitCode() == 0, qPrintable(out + p.readAllStandardError()));
      QVERIFY2(out.contains(QString("rank %1 of 4, started by %2 (").arg(r).arg(launcher)), qPrintable(out));
    }
    QCOMPARE(summaryWithoutWallTime(dir.filePath("env.json")), summaryWithoutWallTime(dir.filePath("threads.json")));
  }

  // A rank the cluster launcher never started (rank 3 of 4): after
  // --rdzv-timeout the others name the connection they waited for, and rank 0
  // names the rank that never arrived; every started rank fails, none hangs.
  void aRankThatNeverArrivesIsNamedAfterTheRendezvousTimeout() {
    QTemporaryDir dir;
    const QStringList run = QStringList{"run", "--strategy", "zero2", "--launch", "env", "--rdzv-timeout", "3",
                                        "--rdzv", "file://" + dir.filePath("store")} +
                            kSmall;
    std::vector<std::unique_ptr<QProcess>> ranks;
    for (int r = 0; r < 3; ++r) {
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                            "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "PMI_RANK", "PMI_SIZE", "PMIX_RANK"})
        env.remove(v);
      env.insert("OMPI_COMM_WORLD_RANK", QString::number(r));
      env.insert("OMPI_COMM_WORLD_SIZE", "4");
      ranks.push_back(std::make_unique<QProcess>());
      ranks.back()->setProcessEnvironment(env);
      ranks.back()->start(SHARDSCOPE_CLI_PATH, run);
    }
    for (int r = 0; r < 3; ++r) {
      QProcess& p = *ranks[static_cast<size_t>(r)];
      QVERIFY2(p.waitForFinished(60000), "a rank did not end after the rendezvous timeout");
      const QString err = QString::fromUtf8(p.readAllStandardError());
      QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() != 0, qPrintable(err));
      QVERIFY2(err.contains("world/3"), qPrintable(QString("rank %1: %2").arg(r).arg(err)));
      if (r == 0) QVERIFY2(err.contains("rank 3 (on another node) never arrived"), qPrintable(err));
    }
  }

  // Two "nodes" on one machine (two launchers, their ranks on two loopback addresses),
  // meeting through a redis-server of the test's own: node 0's trace is the
  // 8-rank threads run's, byte for byte (modeled clock), and node 1 says
  // where its ranks went.
  void twoNodesOverRedisMatchOneEightRankRun() {
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

    const QStringList run = QStringList{"run", "--strategy", "hsdp", "--shard-group", "4", "--ranks", "8"} +
                            QStringList{"--layers", "2", "--hidden", "32", "--batch", "8", "--steps", "2", "--clock",
                                        "modeled", "--profile", "a100-40gb-pcie"};
    const QString threads_trace = dir.filePath("threads.json"), nodes_trace = dir.filePath("nodes.json");
    const CliResult threads = runCli(run + QStringList{"--trace", threads_trace});
    QVERIFY2(threads.exit_code == 0, qPrintable(threads.err));

    const QString rdzv = QStringLiteral("redis://127.0.0.1:%1").arg(port);
    const QStringList multi = {"--launch", "processes", "--nnodes", "2", "--nproc-per-node", "4", "--rdzv", rdzv,
                               "--rdzv-id", "two-nodes-test"};
    QProcess node1;
    node1.start(SHARDSCOPE_CLI_PATH, run + multi + QStringList{"--node-rank", "1", "--node-addr", "127.0.0.2"});
    const CliResult node0 =
        runCli(run + multi + QStringList{"--node-rank", "0", "--node-addr", "127.0.0.1", "--trace", nodes_trace});
    QVERIFY2(node1.waitForFinished(60000), "node 1 did not finish");
    const QString node1_out = QString::fromUtf8(node1.readAllStandardOutput());
    const QString node1_err = QString::fromUtf8(node1.readAllStandardError());
    QVERIFY2(node0.exit_code == 0, qPrintable(node0.err));
    QVERIFY2(node1.exitCode() == 0, qPrintable(node1_err));
    QVERIFY2(node1_out.contains("node 1 of 2: ranks 4..7, streaming to node 0 at tcp://127.0.0.1:"),
             qPrintable(node1_out));
    QVERIFY2(node1_out.contains("ranks 4..7 finished; node 0 writes the trace and summary"), qPrintable(node1_out));
    const QByteArray a = readFileBytes(threads_trace), b = readFileBytes(nodes_trace);
    QVERIFY(a.size() > 1000);
    // The profile puts 4 GPUs in a node, so the replica groups' all-reduces
    // are priced on its inter-node link in both runs.
    QVERIFY2(a == b, "node 0's trace differs from the 8-rank threads run's");

    // The measured clock: node 1's ranks are timed from node 0's origin as
    // estimated at rendezvous, and the trace says how well.
    const QString measured_trace = dir.filePath("measured.json");
    QStringList measured = run;
    measured.replace(measured.indexOf("modeled"), "measured");
    measured.remove(measured.indexOf("--profile"), 2);
    const QStringList again = {"--launch", "processes", "--nnodes", "2", "--nproc-per-node", "4", "--rdzv", rdzv,
                               "--rdzv-id", "two-nodes-measured"};
    QProcess measured_node1;
    measured_node1.start(SHARDSCOPE_CLI_PATH, measured + again + QStringList{"--node-rank", "1", "--node-addr", "127.0.0.2"});
    const CliResult measured_node0 = runCli(measured + again + QStringList{"--node-rank", "0", "--trace", measured_trace});
    QVERIFY(measured_node1.waitForFinished(60000));
    QVERIFY2(measured_node0.exit_code == 0, qPrintable(measured_node0.err));
    const QJsonObject t = QJsonDocument::fromJson(readFileBytes(measured_trace)).object();
    const QJsonArray clocks = t.value("metadata").toObject().value("node_clocks").toArray();
    QCOMPARE(clocks.size(), 1);
    const QJsonObject clock = clocks[0].toObject();
    QCOMPARE(clock.value("node").toInt(), 1);
    QCOMPARE(clock.value("first_rank").toInt(), 4);
    QCOMPARE(clock.value("ranks").toInt(), 4);
    const double uncertainty_ms = clock.value("uncertainty_ns").toDouble() / 1e6;
    QVERIFY2(uncertainty_ms > 0 && uncertainty_ms < 20, qPrintable(QString::number(uncertainty_ms)));
    // The last step ends together on both nodes (its collectives join them):
    // on one machine the estimate is near exact, so a skewed origin would show.
    QMap<int, double> last_end;  // rank -> ts of its last step_end
    for (const QJsonValue& v : t.value("traceEvents").toArray()) {
      const QJsonObject e = v.toObject();
      if (e.value("name").toString() == "step_end") last_end[e.value("pid").toInt()] = e.value("ts").toDouble();
    }
    QCOMPARE(last_end.size(), 8);
    const double skew_ms = std::abs(last_end[4] - last_end[0]) / 1e3;
    QVERIFY2(skew_ms < 200, qPrintable(QString("rank 4 ends %1 ms from rank 0").arg(skew_ms)));
  }

  // What another local account sees in `ps` (a worker's argv: the collector's
  // address and the run id) lets it push nothing: with no CURVE key, and with
  // a key of its own (even knowing the collector's public key), its "Failed"
  // is never read; the run's own key (the test stands in for a worker) is
  // heard, so the refusals are the keys' doing. Run as the same user, the
  // test checks the authentication; run as root, it also pushes as nobody.
  void aClientWithoutTheRunsKeysCannotFailTheRun() {
    QTemporaryDir dir;
    const QString summary = dir.filePath("s.json");
    QProcess p;
    QByteArray err;
    const QRegularExpressionMatch m = startAndWaitFor(
        p,
        {"--log-level", "debug", "run", "--strategy", "ddp", "--ranks", "2", "--layers", "2", "--hidden", "32",
         "--batch", "4", "--steps", "100000", "--launch", "processes", "--summary", summary},
        QRegularExpression("collector at (tcp://[0-9.]+:[0-9]+), rendezvous file://(\\S+)(?:.|\\n)*"
                           "rank 1: worker pid (\\d+)(?:.|\\n)*step 2 done"),
        err, QProcess::StandardError);
    QVERIFY2(m.hasMatch(), err.right(3000).constData());
    const std::string collector = m.captured(1).toStdString();
    const QString run_dir = m.captured(2);
    const QByteArray cmdline = readFileBytes("/proc/" + m.captured(3) + "/cmdline");
    const QList<QByteArray> argv = cmdline.split('\0');
    const qsizetype at = argv.indexOf("--run-id");
    QVERIFY2(at >= 0 && at + 1 < argv.size(), cmdline.constData());
    const uint64_t run_id = argv[at + 1].toULongLong(nullptr, 16);
    // The keys are in the run's 0700 directory, in a 0600 file, and in no argv or environment.
    const RunKeys keys = readRunKeysFile((run_dir + "/run-keys").toStdString());
    const QByteArray environ_bytes = readFileBytes("/proc/" + m.captured(3) + "/environ");
    for (const std::string& k : {keys.server_public, keys.client_public, keys.client_secret}) {
      QVERIFY(!cmdline.contains(QByteArray::fromStdString(k)));
      QVERIFY(!environ_bytes.contains(QByteArray::fromStdString(k)));
    }
    QCOMPARE(QFileInfo(run_dir).permissions() & (QFile::ReadGroup | QFile::ReadOther | QFile::ExeOther), 0);

    zmq::context_t context;
    const auto push = [&](const RunKeys* as, const std::string& text) {
      zmq::socket_t s(context, zmq::socket_type::push);
      s.set(zmq::sockopt::linger, 1000);
      s.set(zmq::sockopt::sndtimeo, 1000);
      if (as) shardscope::secureAsRunClient(s, *as);
      s.connect(collector);
      const std::vector<uint8_t> header = shardscope::wireHeader(WireKind::Failed, 0, uint32_t(text.size()), run_id);
      (void)s.send(zmq::buffer(header), zmq::send_flags::sndmore);
      (void)s.send(zmq::buffer(text), zmq::send_flags::none);
    };
    push(nullptr, "ATTACKER plain");
    // Where the test runs as root, the same from another account (nobody):
    // it cannot read the keys (the run's directory is 0700), and its push is
    // not read either.
    if (::getuid() == 0) {
      const pid_t child = ::fork();
      QVERIFY(child >= 0);
      if (child == 0) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
        try {
          (void)readRunKeysFile((run_dir + "/run-keys").toStdString());
          ::_exit(11);  // another account read the keys
        } catch (const std::exception&) {
        }
        zmq::context_t other;
        zmq::socket_t s(other, zmq::socket_type::push);
        s.set(zmq::sockopt::linger, 1000);
        s.connect(collector);
        const std::string text = "ATTACKER nobody";
        (void)s.send(zmq::buffer(shardscope::wireHeader(WireKind::Failed, 0, uint32_t(text.size()), run_id)),
                     zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        (void)s.send(zmq::buffer(text), zmq::send_flags::dontwait);
        s.close();
        other.close();
        ::_exit(0);
      }
      int status = 0;
      QCOMPARE(::waitpid(child, &status, 0), child);
      QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, qPrintable(QString::number(status)));
    }
    RunKeys stranger = shardscope::makeRunKeys();
    stranger.server_public = keys.server_public;
    push(&stranger, "ATTACKER curve");
    QTest::qWait(1000);
    push(&keys, "INSIDER with the run's keys");
    QVERIFY2(p.waitForFinished(120000), "the run did not end on its own worker's failure");
    err += p.readAllStandardError();
    QCOMPARE(p.exitCode(), 3);
    QVERIFY2(err.contains("refused a connection") && err.contains(QByteArray::fromStdString(stranger.client_public)),
             err.right(3000).constData());
    QVERIFY2(!err.contains("ATTACKER"), err.right(3000).constData());
    const QByteArray summary_bytes = readFileBytes(summary);
    QVERIFY2(!summary_bytes.contains("ATTACKER"), summary_bytes.constData());
    const QJsonObject s = QJsonDocument::fromJson(summary_bytes).object();
    QVERIFY2(s.value("interrupted").toObject().value("error").toString().contains("INSIDER"), summary_bytes.constData());
    QVERIFY2(!QFileInfo::exists(run_dir), qPrintable(run_dir + " is still there"));
  }

  void aWorkerIsNotStartedByHand() {
    const CliResult r = runCli({"worker", "--rank", "0"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("worker"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestLaunchProcesses)
#include "test_launch_processes.moc"
