// Failures and stops of runs whose ranks a cluster launcher started
// (--launch env), and of a stopped worker under --launch processes. A cluster
// launcher ends the whole job at the first rank that exits with an error
// (mpirun: SIGTERM, then SIGKILL), so: a rank whose worker died
// leaves only after rank 0 wrote the trace, the summary marked failed (naming
// that rank) and the flight-recorder dumps; under mpirun those exist after a
// worker is killed and after Ctrl-C; the job's files in a --rdzv file://
// directory are gone at its end, clean or failed, and nothing else there is
// touched. A worker stopped with SIGSTOP (--launch processes, and another
// rank's under --launch env) is named as the rank that stopped responding,
// not the timeouts and connection errors its peers then see.
#include <QtTest>

#include <csignal>
#include <memory>
#include <vector>

#include <unistd.h>

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>

#include "cli_process.h"

namespace {

// A run long enough to be stopped mid-way (it never ends on its own).
const QStringList kLongRun = {"--strategy", "zero2", "--layers", "2", "--hidden", "32", "--batch", "8", "--steps",
                              "100000", "--clock", "modeled"};

QProcessEnvironment rankEnvironment(int rank, int world) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                        "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                        "PMIX_NAMESPACE", "SLURM_PROCID", "SLURM_NTASKS", "PMI_RANK", "PMI_SIZE", "PMIX_RANK"})
    env.remove(v);
  env.insert("OMPI_COMM_WORLD_RANK", QString::number(rank));
  env.insert("OMPI_COMM_WORLD_SIZE", QString::number(world));
  return env;
}

// mpirun's arguments for four ranks of the long run under --launch env on a
// file:// store, `outputs` last.
QStringList mpirunLongRun(const QString& store, const QStringList& outputs) {
  return QStringList{"-np", "4", "--oversubscribe", "--allow-run-as-root", SHARDSCOPE_CLI_PATH, "--log-level", "debug",
                     "run", "--launch", "env", "--rdzv", "file://" + store} +
         kLongRun + outputs;
}

// Kills a process still running when the test leaves (a failed check included).
struct KillOnExit {
  QProcess& p;
  ~KillOnExit() {
    if (p.state() != QProcess::NotRunning) {
      p.kill();
      p.waitForFinished(5000);
    }
  }
};

// What is in a directory (names), hidden files included.
QStringList entries(const QString& dir) {
  return QDir(dir).entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot);
}

// Waits (bounded) until `pattern` matches what `p` printed on stderr so far.
QRegularExpressionMatch waitForStderr(QProcess& p, QByteArray& seen, const QRegularExpression& pattern,
                                      int timeout_ms = 60000) {
  QElapsedTimer timer;
  timer.start();
  while (timer.elapsed() < timeout_ms) {
    const QRegularExpressionMatch m = pattern.match(QString::fromUtf8(seen));
    if (m.hasMatch()) return m;
    if (p.state() == QProcess::NotRunning) break;
    p.waitForReadyRead(100);
    seen += p.readAllStandardError();
  }
  return pattern.match(QString::fromUtf8(seen));
}

// Rank 0's outputs of a run that failed on `rank`: a summary marked failed
// whose error names it, a trace that parses with events, and a dump per rank.
void checkFailedOutputs(const QString& dir, const QString& names) {
  const QByteArray summary_bytes = readFileBytes(dir + "/s.json");
  QVERIFY2(!summary_bytes.isEmpty(), "rank 0 wrote no summary");
  const QJsonObject s = QJsonDocument::fromJson(summary_bytes).object();
  QVERIFY2(s.value("failed").toBool(), summary_bytes.left(400).constData());
  const QString error = s.value("interrupted").toObject().value("error").toString();
  QVERIFY2(error.contains(names), qPrintable(error));
  QVERIFY(s.value("interrupted").toObject().value("steps_done").toInt() >= 2);
  const QJsonObject t = QJsonDocument::fromJson(readFileBytes(dir + "/t.json")).object();
  QVERIFY2(t.value("traceEvents").toArray().size() > 100, "rank 0 wrote no trace, or one that does not parse");
  QCOMPARE(QDir(dir + "/fr").entryList(QDir::Files).size(), 4);
}

}  // namespace

class TestLaunchEnvFailures : public QObject {
  Q_OBJECT

 private slots:
  // Four ranks as mpirun starts them (the variables set by hand); rank 2's
  // worker is killed mid-run. Rank 2's process (the one the cluster launcher
  // watches) leaves only after rank 0 wrote its outputs, and says so; rank
  // 0's error and summary name rank 2; the store's directory keeps only
  // what was there before.
  void aFailedRankLeavesOnlyAfterRankZeroWrote() {
    QTemporaryDir dir;
    const QString store = dir.filePath("store");
    QVERIFY(QDir().mkpath(store));
    QFile keep(store + "/not-the-jobs.txt");
    QVERIFY(keep.open(QIODevice::WriteOnly));
    keep.write("a file of someone else's\n");
    keep.close();
    std::vector<std::unique_ptr<QProcess>> ranks;
    for (int r = 0; r < 4; ++r) {
      ranks.push_back(std::make_unique<QProcess>());
      ranks.back()->setProcessEnvironment(rankEnvironment(r, 4));
      QStringList args = QStringList{"--log-level", "debug", "run", "--launch", "env", "--rdzv", "file://" + store,
                                     "--rdzv-id", "failed-job"} +
                         kLongRun;
      if (r == 0)
        args << "--trace" << dir.filePath("t.json") << "--summary" << dir.filePath("s.json") << "--flight-recorder"
             << dir.filePath("fr");
      ranks.back()->start(SHARDSCOPE_CLI_PATH, args);
    }
    struct KillAll {
      std::vector<std::unique_ptr<QProcess>>& ranks;
      ~KillAll() {
        for (auto& p : ranks)
          if (p->state() != QProcess::NotRunning) {
            p->kill();
            p->waitForFinished(5000);
          }
      }
    } kill_all{ranks};
    QByteArray err0, err2;
    // Rank 0's step 3 done: every rank finished step 2 (step 3's collectives needed them all).
    QVERIFY2(waitForStderr(*ranks[0], err0, QRegularExpression("step 3 done")).hasMatch(), err0.right(3000).constData());
    const QRegularExpressionMatch m = waitForStderr(*ranks[2], err2, QRegularExpression("rank 2: worker pid (\\d+)"));
    QVERIFY2(m.hasMatch(), err2.right(3000).constData());
    const pid_t worker = static_cast<pid_t>(m.captured(1).toLongLong());
    QVERIFY(worker > 0);
    QCOMPARE(::kill(worker, SIGKILL), 0);
    QVERIFY2(ranks[2]->waitForFinished(60000), "rank 2 did not end after its worker was killed");
    // Rank 2 is the first to exit with an error: what mpirun would end the job on.
    QVERIFY2(QFileInfo::exists(dir.filePath("s.json")), "rank 2 left before rank 0 wrote its summary");
    err2 += ranks[2]->readAllStandardError();
    QCOMPARE(ranks[2]->exitCode(), 3);
    QVERIFY2(err2.contains("rank 0 wrote the run's outputs; the run's error: rank 2 (worker pid"),
             err2.right(3000).constData());
    for (auto& rank : ranks)
      QVERIFY2(rank->state() == QProcess::NotRunning || rank->waitForFinished(60000), "a rank did not end");
    err0 += ranks[0]->readAllStandardError();
    QCOMPARE(ranks[0]->exitCode(), 3);
    QVERIFY2(QString::fromUtf8(err0).contains(
                 QStringLiteral("error: run stopped: rank 2 (worker pid %1 on node 2) was killed by signal 9 (SIGKILL)")
                     .arg(worker)),
             err0.right(3000).constData());
    checkFailedOutputs(dir.path(), "rank 2 (worker pid");
    QCOMPARE(entries(store), QStringList{"not-the-jobs.txt"});
  }

  // A clean run leaves nothing of its own in a --rdzv file:// directory (it
  // used to leave one file per key: 27 for four ranks), and nothing else there
  // is touched.
  void aCleanRunLeavesNoFilesInTheStore() {
    QTemporaryDir dir;
    const QString store = dir.filePath("store");
    QVERIFY(QDir().mkpath(store + "/another-jobs-dir"));
    std::vector<std::unique_ptr<QProcess>> ranks;
    for (int r = 0; r < 4; ++r) {
      ranks.push_back(std::make_unique<QProcess>());
      ranks.back()->setProcessEnvironment(rankEnvironment(r, 4));
      QStringList args = QStringList{"run", "--launch", "env", "--rdzv", "file://" + store, "--strategy", "zero3",
                                     "--layers", "2", "--hidden", "32", "--batch", "8", "--steps", "2"};
      if (r == 0) args << "--summary" << dir.filePath("s.json");
      ranks.back()->start(SHARDSCOPE_CLI_PATH, args);
    }
    for (auto& p : ranks) {
      QVERIFY2(p->waitForFinished(60000), "a rank did not finish");
      QVERIFY2(p->exitCode() == 0, p->readAllStandardError().constData());
    }
    QVERIFY(QFileInfo::exists(dir.filePath("s.json")));
    QCOMPARE(entries(store), QStringList{"another-jobs-dir"});
  }

  // Under Open MPI's mpirun, which ends every rank (SIGTERM, then SIGKILL a
  // second later) as soon as one exits with an error: rank 2's worker is
  // killed; rank 0's trace, failed summary naming rank 2 and dumps exist,
  // and the store is clean.
  void mpirunKeepsRankZerosOutputsWhenARankFails() {
    const QString mpirun = QStandardPaths::findExecutable("mpirun");
    if (mpirun.isEmpty()) QSKIP("mpirun is not installed (Debian package openmpi-bin)");
    QTemporaryDir dir;
    const QString store = dir.filePath("store");
    QProcess p;
    p.start(mpirun, mpirunLongRun(store, {"--trace", dir.filePath("t.json"), "--summary", dir.filePath("s.json"),
                                          "--flight-recorder", dir.filePath("fr")}));
    const KillOnExit kill_mpirun{p};
    p.setReadChannel(QProcess::StandardError);
    QByteArray err;
    const QRegularExpressionMatch m =
        // mpirun merges every rank's lines: some rank's "step 3 done" means every
        // rank finished step 2 (step 3's collectives needed them all), which the
        // summary's steps_done >= 2 then holds; "step 2 done" of the fastest did not.
        waitForStderr(p, err, QRegularExpression("rank 2: worker pid (\\d+)(?:.|\\n)*step 3 done"));
    QVERIFY2(m.hasMatch(), err.right(3000).constData());
    const pid_t worker = static_cast<pid_t>(m.captured(1).toLongLong());
    QCOMPARE(::kill(worker, SIGKILL), 0);
    QVERIFY2(p.waitForFinished(90000), "mpirun did not end after a worker was killed");
    err += p.readAllStandardError();
    QVERIFY(p.exitCode() != 0);
    checkFailedOutputs(dir.path(), QStringLiteral("rank 2 (worker pid %1 on node 2)").arg(worker));
    QVERIFY2(entries(store).isEmpty(), qPrintable(entries(store).join(' ')));
  }

  // Ctrl-C on mpirun: every rank gets SIGTERM and, a quarter of a second
  // later, SIGKILL. Rank 0 (in a session of its own) still writes what ran.
  void mpirunCtrlCKeepsRankZerosOutputs() {
    const QString mpirun = QStandardPaths::findExecutable("mpirun");
    if (mpirun.isEmpty()) QSKIP("mpirun is not installed (Debian package openmpi-bin)");
    QTemporaryDir dir;
    const QString store = dir.filePath("store");
    QProcess p;
    p.start(mpirun, mpirunLongRun(store, {"--trace", dir.filePath("t.json"), "--summary", dir.filePath("s.json")}));
    const KillOnExit kill_mpirun{p};
    QByteArray err;
    QVERIFY2(waitForStderr(p, err, QRegularExpression("step 3 done")).hasMatch(), err.right(3000).constData());
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGINT), 0);
    QVERIFY2(p.waitForFinished(60000), "mpirun did not end on SIGINT");
    err += p.readAllStandardError();
    // Rank 0 runs in a session of its own, which mpirun's SIGKILL does not
    // reach: its outputs may land after mpirun has ended.
    QElapsedTimer timer;
    timer.start();
    while (!(QFileInfo::exists(dir.filePath("s.json")) && QFileInfo::exists(dir.filePath("t.json"))) &&
           timer.elapsed() < 60000)
      QTest::qWait(100);
    const QByteArray summary_bytes = readFileBytes(dir.filePath("s.json"));
    QVERIFY2(!summary_bytes.isEmpty(), err.right(3000).constData());
    const QJsonObject s = QJsonDocument::fromJson(summary_bytes).object();
    const QJsonObject interrupted = s.value("interrupted").toObject();
    QVERIFY2(interrupted.value("by").toString().startsWith("SIG"), summary_bytes.left(400).constData());
    QVERIFY(interrupted.value("steps_done").toInt() >= 3);
    QCOMPARE(s.value("per_rank").toArray().size(), 4);
    const QJsonObject t = QJsonDocument::fromJson(readFileBytes(dir.filePath("t.json"))).object();
    QVERIFY2(t.value("traceEvents").toArray().size() > 100, "rank 0 wrote no trace, or one that does not parse");
    QVERIFY2(entries(store).isEmpty(), qPrintable(entries(store).join(' ')));
  }

  // --launch env: rank 2's worker stopped with SIGSTOP. Rank 0 stops the run
  // through the store; rank 2's process finds its worker stopped and says so,
  // which is the run's error; the store is clean after.
  void aStoppedRankIsNamedUnderLaunchEnv() {
    QTemporaryDir dir;
    const QString store = dir.filePath("store");
    std::vector<std::unique_ptr<QProcess>> ranks;
    for (int r = 0; r < 4; ++r) {
      ranks.push_back(std::make_unique<QProcess>());
      ranks.back()->setProcessEnvironment(rankEnvironment(r, 4));
      QStringList args = QStringList{"--log-level", "debug", "run", "--launch", "env", "--rdzv", "file://" + store} +
                         kLongRun;
      if (r == 0) args << "--summary" << dir.filePath("s.json");
      ranks.back()->start(SHARDSCOPE_CLI_PATH, args);
    }
    pid_t worker = 0;
    struct KillAll {
      std::vector<std::unique_ptr<QProcess>>& ranks;
      const pid_t& worker;
      ~KillAll() {
        if (worker > 0) ::kill(worker, SIGKILL);
        for (auto& p : ranks)
          if (p->state() != QProcess::NotRunning) {
            p->kill();
            p->waitForFinished(5000);
          }
      }
    } kill_all{ranks, worker};
    QByteArray err0, err2;
    // Rank 0's step 3 done: every rank finished step 2 (step 3's collectives needed them all).
    QVERIFY2(waitForStderr(*ranks[0], err0, QRegularExpression("step 3 done")).hasMatch(), err0.right(3000).constData());
    const QRegularExpressionMatch m = waitForStderr(*ranks[2], err2, QRegularExpression("rank 2: worker pid (\\d+)"));
    QVERIFY2(m.hasMatch(), err2.right(3000).constData());
    worker = static_cast<pid_t>(m.captured(1).toLongLong());
    QCOMPARE(::kill(worker, SIGSTOP), 0);
    for (auto& rank : ranks)
      QVERIFY2(rank->state() == QProcess::NotRunning || rank->waitForFinished(90000), "a rank did not end");
    err0 += ranks[0]->readAllStandardError();
    QCOMPARE(ranks[0]->exitCode(), 3);
    const QString expected =
        QStringLiteral("rank 2 (worker pid %1 on node 2) stopped responding: its process is stopped").arg(worker);
    QVERIFY2(QString::fromUtf8(err0).contains("error: run stopped: " + expected), err0.right(3000).constData());
    const QJsonObject s = QJsonDocument::fromJson(readFileBytes(dir.filePath("s.json"))).object();
    QVERIFY2(s.value("interrupted").toObject().value("error").toString().startsWith(expected),
             readFileBytes(dir.filePath("s.json")).left(400).constData());
    QVERIFY2(entries(store).isEmpty(), qPrintable(entries(store).join(' ')));
  }

  // --launch processes: a worker stopped with SIGSTOP answers nothing; its
  // peers time out and close their connections, and rank 0's "connection
  // closed by peer" used to be the run's error. The stopped rank is named.
  void aStoppedWorkerIsNamedAsTheRankThatStoppedResponding() {
    QTemporaryDir dir;
    const QString summary = dir.filePath("s.json");
    QProcess p;
    QByteArray err;
    const QRegularExpressionMatch m = startAndWaitFor(
        p,
        QStringList{"--log-level", "debug", "run", "--ranks", "4", "--launch", "processes", "--timeout-ms", "1000",
                    "--summary", summary} +
            kLongRun,
        QRegularExpression("rank 2: worker pid (\\d+)(?:.|\\n)*step 2 done"), err, QProcess::StandardError);
    QVERIFY2(m.hasMatch(), err.right(3000).constData());
    const pid_t worker = static_cast<pid_t>(m.captured(1).toLongLong());
    QCOMPARE(::kill(worker, SIGSTOP), 0);
    const bool ended = p.waitForFinished(60000);
    if (!ended) {
      ::kill(worker, SIGKILL);
      p.kill();
      p.waitForFinished(5000);
    }
    QVERIFY2(ended, "the run did not end after a worker was stopped");
    err += p.readAllStandardError();
    QCOMPARE(p.exitCode(), 3);
    const QString expected =
        QStringLiteral("error: run stopped: rank 2 (worker pid %1) stopped responding during step ").arg(worker);
    QVERIFY2(QString::fromUtf8(err).contains(expected), err.right(3000).constData());
    QVERIFY2(err.contains("its process is stopped (SIGSTOP"), err.right(3000).constData());
    const QJsonObject s = QJsonDocument::fromJson(readFileBytes(summary)).object();
    QVERIFY2(s.value("interrupted").toObject().value("error").toString().startsWith(
                 QStringLiteral("rank 2 (worker pid %1) stopped responding").arg(worker)),
             readFileBytes(summary).left(400).constData());
  }
};

QTEST_GUILESS_MAIN(TestLaunchEnvFailures)
#include "test_launch_env_failures.moc"
