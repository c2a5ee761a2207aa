// 100 runs, each cancelled at a random moment (while the communicators
// connect, in setup, in forward, in a collective, between steps): every one
// stops, and nothing is left behind — no booked bytes in any rank's ledger,
// no thread, no socket or file descriptor. The asan preset runs this too, so
// LeakSanitizer checks every allocation a stopped run made.
#include <QtTest>

#include <dirent.h>

#include <chrono>
#include <random>
#include <thread>

#include "common/errors.h"
#include "common/thread_start.h"
#include "engine/run.h"
#include "sanitizer_build.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {

int openDescriptors() {
  int n = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++n;
    closedir(dir);
  }
  return n;
}

// Threads can take a moment to be reaped after join; wait for the count to settle.
int threadsSettledTo(int expected) {
  int now = processThreadCount();
  for (int i = 0; i < 200 && now > expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    now = processThreadCount();
  }
  return now;
}

// A hundred; under a sanitizer forty, the same mix of moments (every
// fourth during setup): a hundred take 22 s there.
#ifdef SHARDSCOPE_UNDER_SANITIZER
constexpr int kRuns = 40;
#else
constexpr int kRuns = 100;
#endif

}  // namespace

class TestCancelStorm : public QObject {
  Q_OBJECT

 private slots:
  void hundredCancelsLeaveNothingBehind() {
    const Strategy strategies[] = {Strategy::Ddp, Strategy::Zero2, Strategy::Zero3};
    const uint32_t seed = static_cast<uint32_t>(Clock::now().time_since_epoch().count());
    qInfo("seed %u", seed);
    std::mt19937 rng(seed);
    // A step of this model takes about a millisecond: a quarter of the
    // cancels land while the run connects and sets up, the rest at a random
    // moment within its first few steps.
    std::uniform_int_distribution<int> setup_delay_us(0, 30000), step_delay_us(0, 3000), steps_first(0, 3);
    // Warm up once so lazily created singletons (BLAS, loggers) are not counted as leaks.
    {
      RunConfig c;
      c.ranks = 2, c.model.layers = 2, c.model.hidden = 32, c.batch = 4, c.steps = 1;
      Run(c).execute();
    }
    const int threads_before = processThreadCount();
    const int fds_before = openDescriptors();
    int stopped_mid_run = 0;
    for (int i = 0; i < kRuns; ++i) {
      RunConfig c;
      c.strategy = strategies[i % 3];
      c.ranks = 2;
      c.model.layers = 2;
      c.model.hidden = 32;
      c.batch = 4;
      c.steps = 100000;
      Run run(c);
      run.start();
      if (i % 4 == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(setup_delay_us(rng)));
      } else {
        const int steps = steps_first(rng);
        while (run.stepsDone() < steps) std::this_thread::sleep_for(std::chrono::microseconds(50));
        std::this_thread::sleep_for(std::chrono::microseconds(step_delay_us(rng)));
      }
      if (run.stepsDone() > 0) ++stopped_mid_run;
      const auto t0 = Clock::now();
      run.cancel();
      QVERIFY_THROWS_EXCEPTION(RunAborted, run.wait());
      const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      QVERIFY2(seconds < 5.0, qPrintable(QString("run %1 took %2 s to stop").arg(i).arg(seconds)));
      QVERIFY(run.finished());
      for (int r = 0; r < c.ranks; ++r) {
        const LedgerSnapshot l = run.ledger(r);
        int64_t held = 0;
        for (int64_t bytes : l.current) held += bytes;
        QVERIFY2(held == 0, qPrintable(QString("run %1 (%2) rank %3 still books %4 bytes")
                                           .arg(i)
                                           .arg(QString::fromStdString(strategyName(c.strategy)))
                                           .arg(r)
                                           .arg(held)));
      }
    }
    qInfo("%d of %d runs were stopped after their first step", stopped_mid_run, kRuns);
    QVERIFY(stopped_mid_run >= kRuns / 4);
    const int threads_after = threadsSettledTo(threads_before);
    QVERIFY2(threads_after <= threads_before,
             qPrintable(QString("%1 threads before, %2 after").arg(threads_before).arg(threads_after)));
    const int fds_after = openDescriptors();
    QVERIFY2(fds_after <= fds_before, qPrintable(QString("%1 descriptors before, %2 after").arg(fds_before).arg(fds_after)));
  }
};

QTEST_APPLESS_MAIN(TestCancelStorm)
#include "test_cancel_storm.moc"
