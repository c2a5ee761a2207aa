// A run and the machine's limits: a thread the system refuses (a thread or
// address-space limit) stops the run with one message wherever it happens,
// never std::terminate; a run's memory is known before anything is allocated,
// matches what a real run's ledger measures (under --tp too: a rank holds
// its slice), and a run bigger than the machine is refused with what drives
// it; a cancelled run still reports the steps that ran.
#include <QtTest>

#include <chrono>
#include <thread>

#include "analysis/formulas.h"
#include "analysis/run_memory.h"
#include "common/errors.h"
#include "common/thread_start.h"
#include "engine/run.h"
#include "sanitizer_build.h"

using namespace shardscope;

namespace {

constexpr int64_t kGiB = int64_t(1) << 30;

RunConfig small(Strategy strategy) {
  RunConfig c;
  c.strategy = strategy;
  c.ranks = 2;
  c.model.layers = 2;
  c.model.hidden = 32;
  c.batch = 4;
  c.steps = 2;
  return c;
}

MachineMemory machineWith(int64_t available) {
  MachineMemory m;
  m.available_bytes = available;
  return m;
}

QString refusal(const RunConfig& c, const MachineMemory& m) {
  try {
    checkRunFitsMachine(c, m, "--force tries anyway");
  } catch (const ConfigError& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

}  // namespace

class TestRunResources : public QObject {
  Q_OBJECT

 private slots:
  void cleanup() { failThreadStartsAfter(-1); }

  // Every thread a run starts (its launcher, Gloo's rendezvous, each rank, each
  // stream, the teardown) is refused in turn: the run ends with one message.
  void aRefusedThreadStopsTheRunWithOneMessage_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("ddp") << "ddp";
    QTest::newRow("zero3") << "zero3";
  }

  void aRefusedThreadStopsTheRunWithOneMessage() {
    QFETCH(QString, strategy);
    const RunConfig c = small(*parseStrategy(strategy.toStdString()));
    int refused = 0;
    // Past the run's last thread start every run finishes: three in a row end the walk.
    for (int after = 0, finished_in_a_row = 0; after < 40 && finished_in_a_row < 3; ++after) {
      failThreadStartsAfter(after);
      QString message;
      bool finished = false;
      try {
        Run run(c);
        run.execute();
        finished = true;
      } catch (const RunError& e) {
        message = QString::fromUtf8(e.what());
      } catch (const ResourceError& e) {  // the launcher itself
        message = QString::fromUtf8(e.what());
      }
      failThreadStartsAfter(-1);
      if (finished) {  // past the run's last thread start (teardown falls back in place)
        ++finished_in_a_row;
        continue;
      }
      finished_in_a_row = 0;
      ++refused;
      QVERIFY2(message.contains(QStringLiteral("cannot start a thread for")), qPrintable(message));
      QVERIFY2(message.contains(QStringLiteral("ulimit")), qPrintable(message));
      QVERIFY2(!message.contains(QLatin1Char('\n')), qPrintable(message));
    }
    QVERIFY2(refused >= 6, qPrintable(QString("only %1 thread starts were refused").arg(refused)));
  }

  void theEstimateMatchesTheMeasuredLedger_data() {
    QTest::addColumn<QStringList>("args");
    const QStringList mlp = {"--ranks", "2", "--layers", "2", "--hidden", "256", "--batch", "8", "--steps", "1"};
    for (const char* s : {"ddp", "zero1", "zero2", "zero3"})
      QTest::newRow(s) << (QStringList{"--strategy", s} + mlp);
    QTest::newRow("zero3 4 ranks units of 2") << QStringList{"--strategy", "zero3", "--ranks", "4", "--layers", "4",
                                                             "--hidden", "128", "--batch", "8", "--steps", "1",
                                                             "--unit-blocks", "2"};
    QTest::newRow("hsdp") << QStringList{"--strategy", "hsdp", "--ranks", "4", "--shard-group", "2", "--layers", "2",
                                         "--hidden", "128", "--batch", "8", "--steps", "1"};
    const QStringList gpt = {"--model", "gpt", "--ranks", "2", "--layers", "2", "--hidden", "128", "--heads", "4",
                             "--seq", "64", "--vocab", "1024", "--batch", "4", "--steps", "1"};
    QTest::newRow("gpt ddp") << (QStringList{"--strategy", "ddp"} + gpt);
    QTest::newRow("gpt zero3") << (QStringList{"--strategy", "zero3"} + gpt);
    const QStringList gpt4 = {"--model", "gpt", "--ranks", "4", "--layers", "2", "--hidden", "128", "--heads", "4",
                              "--seq", "64", "--vocab", "1024", "--batch", "4", "--steps", "1"};
    QTest::newRow("gpt ddp tp 4") << (QStringList{"--strategy", "ddp", "--tp", "4"} + gpt4);
    QTest::newRow("gpt zero3 tp 2") << (QStringList{"--strategy", "zero3", "--tp", "2"} + gpt4);
  }

  void theEstimateMatchesTheMeasuredLedger() {
#ifdef SHARDSCOPE_UNDER_SANITIZER
    QSKIP("an estimate against the ledger: the runs' code is the strategies tests', which run under the sanitizer");
#endif
    QFETCH(QStringList, args);
    std::vector<std::string> argv;
    for (const QString& a : args) argv.push_back(a.toStdString());
    const RunConfig c = parseRunArgs(argv);
    const RunMemoryEstimate e = estimateRunMemory(c);
    Run run(c);
    const RunResult r = run.execute();
    for (const RankResult& rank : r.ranks) {
      const double ratio = double(e.perRank()) / double(rank.ledger.total_peak);
      qInfo("rank %d: estimated %lld, measured %lld bytes (%.2fx)", rank.rank, static_cast<long long>(e.perRank()),
            static_cast<long long>(rank.ledger.total_peak), ratio);
      // Close to what the ledger measures, and rather above it than below.
      QVERIFY2(ratio >= 0.9 && ratio <= 1.6, qPrintable(QString::number(ratio)));
    }
    QCOMPARE(e.run_bytes, 4 * r.params);  // the result's fp32 weights
  }

  void aRunBiggerThanTheMachineIsRefusedFast_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QStringList>("named");
    QTest::newRow("mlp model state") << QStringList{"--hidden", "8192", "--layers", "2", "--ranks", "2", "--strategy",
                                                    "zero1", "--batch", "2"}
                                     << QStringList{"--hidden 8192", "--layers 2", "--strategy zero1", "--ranks 2"};
    QTest::newRow("gpt activations") << QStringList{"--model", "gpt", "--seq", "4096", "--vocab", "1048576"}
                                     << QStringList{"--seq 4096", "--vocab 1048576", "--batch 32"};
  }

  void aRunBiggerThanTheMachineIsRefusedFast() {
    QFETCH(QStringList, args);
    QFETCH(QStringList, named);
    std::vector<std::string> argv;
    for (const QString& a : args) argv.push_back(a.toStdString());
    const RunConfig c = parseRunArgs(argv);
    const auto t0 = std::chrono::steady_clock::now();
    const QString message = refusal(c, machineWith(16 * kGiB));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QVERIFY2(seconds < 1.0, qPrintable(QString::number(seconds)));
    QVERIFY2(message.startsWith(QStringLiteral("this run needs about ")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral(" per rank, ")) && message.contains(QStringLiteral(" in all; the machine has 16 GiB")),
             qPrintable(message));
    for (const QString& flag : named) QVERIFY2(message.contains(flag), qPrintable(flag + " in: " + message));
    QVERIFY2(message.contains(QStringLiteral("--force tries anyway")), qPrintable(message));
    QVERIFY(!message.contains(QLatin1Char('\n')));
    // The estimate says how much: tens of GiB per rank, not a guess of zero.
    QVERIFY(estimateRunMemory(c).perRank() > 8 * kGiB);
  }

  // Under --tp T each rank holds a 1/T slice of the model's parameters,
  // gradients and optimizer state: the check counts the slice (the capacity
  // page's bytes for sliceParams), not T copies of the whole model.
  void tensorParallelRanksHoldTheirSlice() {
    const auto gpt = [](const char* layers) {
      return parseRunArgs({"--model", "gpt", "--tp", "4", "--ranks", "4", "--strategy", "ddp", "--layers", layers,
                           "--hidden", "1792", "--heads", "16", "--seq", "64", "--vocab", "1024", "--batch", "4"});
    };
    const MachineMemory machine = machineWith(16 * kGiB);
    // 8 layers, 312 M parameters: each rank holds a quarter of them, 16 bytes each.
    const RunConfig fits = gpt("8");
    const RunMemoryEstimate e = estimateRunMemory(fits);
    QVERIFY(e.model_bytes_per_rank >= expectedModelStateBytesRoundedUp(fits, sliceParams(fits)));
    QVERIFY(sliceParams(fits) < modelParams(fits) / 3);
    // Refused before: the whole model's state on each of the 4 ranks is more than the machine.
    QVERIFY(4 * expectedModelStateBytesRoundedUp(fits, modelParams(fits)) > machine.available_bytes);
    qInfo("8 layers: %lld bytes in all; the whole model's state on each rank alone: %lld",
          static_cast<long long>(e.total(fits.ranks)),
          static_cast<long long>(4 * expectedModelStateBytesRoundedUp(fits, modelParams(fits))));
    QVERIFY2(e.total(fits.ranks) < machine.available_bytes, qPrintable(QString::number(e.total(fits.ranks))));
    const QString accepted = refusal(fits, machine);
    QVERIFY2(accepted.isEmpty(), qPrintable(accepted));
    // 32 layers, 1.24 B parameters: a quarter of them each still does not fit, and --tp is named.
    const RunConfig too_big = gpt("32");
    const QString message = refusal(too_big, machine);
    qInfo("32 layers: %s", qPrintable(message));
    QVERIFY2(message.startsWith(QStringLiteral("this run needs about ")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("with --ranks 4 and --tp 4")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("--layers 32")), qPrintable(message));
    QVERIFY(4 * expectedModelStateBytesRoundedUp(too_big, sliceParams(too_big)) > machine.available_bytes);
  }

  void whatFitsIsNotRefused() {
    QVERIFY(refusal(RunConfig{}, machineWith(2 * kGiB)).isEmpty());
    RunConfig meta;  // the meta backend books bytes it never allocates
    meta.backend = Backend::Meta;
    meta.clock = ClockKind::Modeled;
    meta.model = ModelShape{};
    meta.model.hidden = 8192;
    QVERIFY(refusal(meta, machineWith(kGiB)).isEmpty());
    QCOMPARE(estimateRunMemory(meta).perRank(), int64_t{0});
  }

  // ulimit -v: what the threads reserve counts too, and the limit is named.
  void theAddressSpaceLimitIsNamed() {
    MachineMemory m = machineWith(64 * kGiB);
    m.address_limit_bytes = 2 * kGiB;
    m.address_used_bytes = kGiB;
    RunConfig c = small(Strategy::Ddp);
    c.ranks = 64;
    c.batch = 64;
    const QString message = refusal(c, m);
    QVERIFY2(message.contains(QStringLiteral("(ulimit -v)")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("threads for --ranks 64")), qPrintable(message));
    m.address_limit_bytes = -1;
    QVERIFY(refusal(c, m).isEmpty());
  }

  // After a stop, what the completed steps measured is still there.
  void aCancelledRunReportsWhatRan() {
    RunConfig c = small(Strategy::Zero2);
    c.steps = 100000;
    Run run(c);
    run.start();
    while (run.stepsDone() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    run.cancel();
    QVERIFY_THROWS_EXCEPTION(RunAborted, run.wait());
    const RunResult r = run.resultSoFar();
    QVERIFY(r.losses.size() >= 2);
    QCOMPARE(static_cast<int>(r.losses.size()), run.stepsDone());
    QCOMPARE(r.ranks.size(), size_t{2});
    for (int i = 0; i < 2; ++i) {
      QCOMPARE(r.ranks[i].rank, i);
      QVERIFY(r.ranks[i].ledger.model_state_peak > 0);
    }
    QVERIFY(!r.last_step.empty());
    for (const StepMetrics& m : r.last_step) QCOMPARE(m.step, static_cast<int>(r.losses.size()) - 1);
  }
};

QTEST_APPLESS_MAIN(TestRunResources)
#include "test_run_resources.moc"
