// A worker's command line (launch/worker.h): the launcher's placement of each
// rank process on its node (torchrun's LOCAL_RANK / LOCAL_WORLD_SIZE) comes
// back as the worker's config, so a GPU rank process picks the GPU of its
// index on its node; placements that cannot be are refused.
#include <QtTest>

#include "common/errors.h"
#include "config/run_config.h"
#include "launch/worker.h"

using namespace shardscope;

namespace {

WorkerArgs placed(int rank, int local_rank, int local_size) {
  WorkerArgs w;
  w.rank = rank;
  w.collector = "tcp://127.0.0.1:4000";
  w.rdzv = "file:///tmp/rdzv-test";
  w.prefix = "job1";
  w.keys_file = "/tmp/rdzv-test/run-keys";
  w.local_rank = local_rank;
  w.local_size = local_size;
  return w;
}

// What the worker command parses: workerArgs without the command's name.
std::vector<std::string> commandLine(const WorkerArgs& w, const RunConfig& run) {
  std::vector<std::string> a = workerArgs(w, run);
  a.erase(a.begin());
  return a;
}

}  // namespace

class TestWorkerArgs : public QObject {
  Q_OBJECT

 private slots:
  void placementRoundTrips() {
    const RunConfig run = parseRunArgs({"--backend", "cuda", "--ranks", "4", "--strategy", "zero3"});
    RunConfig config;
    WorkerArgs back;
    try {
      back = parseWorkerArgs(commandLine(placed(3, 1, 2), run), &config);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QCOMPARE(back.rank, 3);
    QCOMPARE(back.local_rank, 1);
    QCOMPARE(back.local_size, 2);
    QCOMPARE(back.keys_file, std::string("/tmp/rdzv-test/run-keys"));  // the file's path, never the keys
    QCOMPARE(config.backend, Backend::Cuda);
    QCOMPARE(config.launch, Launch::Processes);
    QCOMPARE(config.nnodes, 2);
    QCOMPARE(config.node_rank, 1);
    QCOMPARE(config.procsPerNode(), 2);
    QCOMPARE(config.rdzv, std::string("file:///tmp/rdzv-test"));
    // The rank's GPU: its index on its node.
    QCOMPARE(back.rank - config.node_rank * config.procsPerNode(), 1);
    validate(config);
  }

  void oneNodeKeepsEveryRank() {
    const RunConfig run = parseRunArgs({"--ranks", "2"});
    RunConfig config;
    parseWorkerArgs(commandLine(placed(1, 1, 2), run), &config);
    QCOMPARE(config.nnodes, 1);
    QCOMPARE(config.node_rank, 0);
    QCOMPARE(config.launch, Launch::Processes);
  }

  void impossiblePlacementsAreRefused() {
    const RunConfig run = parseRunArgs({"--ranks", "4"});
    for (const WorkerArgs& w : {placed(1, 2, 2), placed(1, 0, 3), placed(0, 1, 2)}) {
      RunConfig config;
      try {
        parseWorkerArgs(commandLine(w, run), &config);
        QFAIL("accepted");
      } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("do not place rank"), e.what());
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestWorkerArgs)
#include "test_worker_args.moc"
