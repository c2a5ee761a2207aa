// --launch env: the rank, world size and local rank each launcher sets are
// read from its own variables; partial, contradictory or non-numeric ones
// are refused with one message naming the variable.
#include <QtTest>

#include <map>
#include <string>

#include "common/errors.h"
#include "launch/launcher_env.h"

using namespace shardscope;

namespace {

EnvLookup envOf(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

QString refusal(std::map<std::string, std::string> vars, std::optional<int> ranks = std::nullopt) {
  try {
    detectLauncherEnv(envOf(std::move(vars)), ranks);
  } catch (const ConfigError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestLauncherEnv : public QObject {
  Q_OBJECT

 private slots:
  void eachLauncherIsRead() {
    const LauncherEnv t = detectLauncherEnv(
        envOf({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"},
               {"TORCHELASTIC_RUN_ID", "abc"}}),
        std::nullopt);
    QCOMPARE(t.launcher, std::string("torchrun"));
    QCOMPARE(t.rank, 5);
    QCOMPARE(t.world, 8);
    QCOMPARE(t.local_rank, 1);
    QCOMPARE(t.local_world, 4);
    QCOMPARE(t.job_id, std::string("abc"));
    const LauncherEnv m = detectLauncherEnv(
        envOf({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
               {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}),
        std::nullopt);
    QCOMPARE(m.launcher, std::string("Open MPI"));
    QCOMPARE(m.rank, 2);
    const LauncherEnv s = detectLauncherEnv(
        envOf({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "3"},
               {"SLURM_NTASKS_PER_NODE", "4(x4)"}, {"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "0"}}),
        std::nullopt);
    QCOMPARE(s.launcher, std::string("Slurm"));
    QCOMPARE(s.world, 16);
    QCOMPARE(s.local_rank, 3);
    QCOMPARE(s.local_world, 0);  // a per-node list, not one count
    QCOMPARE(s.job_id, std::string("77.0"));
    QCOMPARE(detectLauncherEnv(envOf({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}), std::nullopt).launcher,
             std::string("PMI"));
    const LauncherEnv x = detectLauncherEnv(envOf({{"PMIX_RANK", "1"}}), 4);
    QCOMPARE(x.launcher, std::string("PMIx"));
    QCOMPARE(x.world, 4);
  }

  // mpirun inside an sbatch script: the allocation's SLURM_* variables
  // describe another world and are left alone.
  void theInnermostLauncherWins() {
    const LauncherEnv e = detectLauncherEnv(
        envOf({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"SLURM_PROCID", "0"},
               {"SLURM_NTASKS", "2"}}),
        std::nullopt);
    QCOMPARE(e.launcher, std::string("Open MPI"));
    QCOMPARE(e.rank, 3);
  }

  void badEnvironmentsAreRefused_data() {
    QTest::addColumn<QStringList>("vars");
    QTest::addColumn<int>("ranks");  // 0: --ranks not given
    QTest::addColumn<QString>("message");
    QTest::newRow("none") << QStringList{} << 0 << "no launcher's variables are set";
    QTest::newRow("rank without size") << QStringList{"RANK=1"} << 0 << "RANK is set but WORLD_SIZE is not";
    QTest::newRow("size without rank") << QStringList{"OMPI_COMM_WORLD_SIZE=4"} << 0
                                       << "OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not";
    QTest::newRow("not a number") << QStringList{"RANK=one", "WORLD_SIZE=4"} << 0
                                  << "RANK='one' is not a whole number";
    QTest::newRow("rank past the world") << QStringList{"SLURM_PROCID=4", "SLURM_NTASKS=4"} << 0
                                         << "SLURM_PROCID=4 must be below the world size 4";
    QTest::newRow("--ranks disagrees") << QStringList{"RANK=0", "WORLD_SIZE=4"} << 8
                                       << "--ranks 8 contradicts WORLD_SIZE=4";
    QTest::newRow("local rank alone") << QStringList{"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0"} << 0
                                      << "LOCAL_RANK is set but LOCAL_WORLD_SIZE is not";
    QTest::newRow("local rank past its node")
        << QStringList{"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=2"} << 0
        << "local rank 3 of 2 per node does not fit";
    QTest::newRow("two launchers disagree")
        << QStringList{"RANK=1", "WORLD_SIZE=4", "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=4"} << 0
        << "torchrun and Open MPI contradict each other for a world of 4";
    QTest::newRow("PMIx without a size") << QStringList{"PMIX_RANK=0"} << 0 << "give --ranks";
  }

  void badEnvironmentsAreRefused() {
    QFETCH(QStringList, vars);
    QFETCH(int, ranks);
    QFETCH(QString, message);
    std::map<std::string, std::string> env;
    for (const QString& v : vars) env[v.section('=', 0, 0).toStdString()] = v.section('=', 1).toStdString();
    const QString error = refusal(env, ranks > 0 ? std::optional<int>(ranks) : std::nullopt);
    QVERIFY2(error.contains(message), qPrintable(error));
  }

  // Rank 0 writes and serves; the others leave that to it.
  void placement() {
    RunConfig c;
    c.trace_path = "t.json";
    c.serve = "0";
    LauncherEnv e;
    e.rank = 2;
    e.world = 4;
    e.job_id = "77.0";
    placeLauncherRank(c, e, false);
    QCOMPARE(c.ranks, 4);
    QCOMPARE(c.nnodes, 4);
    QCOMPARE(c.node_rank, 2);
    QCOMPARE(c.procsPerNode(), 1);
    QCOMPARE(c.rdzv_id, std::string("job-77.0"));
    QVERIFY(c.trace_path.empty() && c.serve.empty());
  }
};

QTEST_GUILESS_MAIN(TestLauncherEnv)
#include "test_launcher_env.moc"
