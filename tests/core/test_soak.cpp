// A long run does not grow: 10,000 steps of a small model through the real
// step path (two CPU ranks, real Gloo collectives, streams, ledger, events),
// and the process's resident memory from step 1,000 to step 10,000 grows by
// less than 1% of what it was at step 1,000, apart from what a run keeps by
// design for every step (its events and losses, counted page by page and set
// aside). Label "soak" (ctest -LE soak leaves it out); skipped under
// sanitizers, whose shadow memory and quarantine are not the product's.
#include <QtTest>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/host_block_pool.h"
#include "engine/run.h"

#include "sanitizer_build.h"

using namespace shardscope;

namespace {

int64_t residentBytes() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

// What the run keeps per step on purpose, as resident bytes: its events (in
// the block pool's slabs, whose pages become resident as events are written;
// mincore counts them, huge pages whole) and one loss per rank and step
// (plus the count of ranks that reported it).
int64_t keptBytes(const Run& run) {
  return static_cast<int64_t>(HostBlockPool::instance().residentBytes()) +
         static_cast<int64_t>(run.stepsDone()) * (run.config().ranks * int64_t(sizeof(double)) + int64_t(sizeof(int)));
}

void waitForStep(const Run& run, int step) {
  while (run.stepsDone() < step && !run.finished()) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

}  // namespace

class TestSoak : public QObject {
  Q_OBJECT

 private slots:
  void tenThousandStepsDoNotGrow() {
#ifdef SHARDSCOPE_UNDER_SANITIZER
    QSKIP("resident memory under a sanitizer is its shadow and quarantine, not the product's");
#endif
    RunConfig c;
    c.strategy = Strategy::Ddp;
    c.ranks = 2;
    c.model.layers = 1;
    c.model.hidden = 8;
    c.batch = 2;
    c.steps = 10000;
    Run run(c);
    const auto t0 = std::chrono::steady_clock::now();
    run.start();
    waitForStep(run, 1000);
    const int64_t rss_1000 = residentBytes(), kept_1000 = keptBytes(run);
    const int at_1000 = run.stepsDone();

    waitForStep(run, c.steps - 5);  // still running: the result is not built yet
    const int64_t rss_end = residentBytes(), kept_end = keptBytes(run);
    const int at_end = run.stepsDone();
    const RunResult result = run.wait();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QCOMPARE(static_cast<int>(result.losses.size()), c.steps);
    // Growth of resident memory beyond what the steps keep on purpose, as a
    // share of the resident memory at step 1,000.
    const double growth = double((rss_end - kept_end) - (rss_1000 - kept_1000)) / double(rss_1000);
    qInfo("%.1f s; step %d: RSS %.2f MiB (kept %.2f MiB); step %d: RSS %.2f MiB (kept %.2f MiB); growth %.3f%%",
          seconds, at_1000, rss_1000 / 1048576.0, kept_1000 / 1048576.0, at_end, rss_end / 1048576.0,
          kept_end / 1048576.0, 100 * growth);
    QVERIFY2(growth < 0.01, qPrintable(QString("resident memory grew %1% from step 1000 to %2").arg(100 * growth).arg(at_end)));
  }
};

QTEST_APPLESS_MAIN(TestSoak)
#include "test_soak.moc"
