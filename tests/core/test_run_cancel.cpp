// Stopping a run: cancel() returns every rank, stream and collective to rest
// within a second (a GUI's Stop button), and a communicator blocked waiting
// for a peer that never comes is woken by abort() long before its timeout.
#include <QtTest>

#include <chrono>
#include <thread>

#include "comm/communicator.h"
#include "common/errors.h"
#include "engine/run.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

class TestRunCancel : public QObject {
  Q_OBJECT

 private slots:
  void cancelMidRun_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("ddp") << "ddp";
    QTest::newRow("zero2") << "zero2";
    QTest::newRow("zero3") << "zero3";
  }

  void cancelMidRun() {
    QFETCH(QString, strategy);
    RunConfig c;
    c.strategy = *parseStrategy(strategy.toStdString());
    c.ranks = 4;
    c.model.layers = 4;
    c.model.hidden = 128;
    c.batch = 16;
    c.steps = 100000;  // would run for hours
    Run run(c);
    run.start();
    while (run.stepsDone() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto t0 = Clock::now();
    run.cancel();
    QVERIFY_THROWS_EXCEPTION(RunAborted, run.wait());
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    qInfo("%s: stopped %.3f s after cancel", qPrintable(strategy), seconds);
    QVERIFY2(seconds < 2.0, qPrintable(QString("took %1 s").arg(seconds)));
    QVERIFY(run.finished());
    // What was recorded stays readable after the stop.
    QVERIFY(!run.trace().events[0].empty());
  }

  void abortWakesABlockedCollective() {
    auto group = createGlooGroup(2, "abort-test", 30000);
    float value = 1.0f;
    std::exception_ptr error;
    const auto t0 = Clock::now();
    std::thread rank0([&] {
      try {
        group[0]->allReduce(&value, 1, DType::F32);  // rank 1 never joins
      } catch (...) {
        error = std::current_exception();
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    group[0]->abort();
    rank0.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    QVERIFY(error);
    QVERIFY2(seconds < 2.0, qPrintable(QString("took %1 s").arg(seconds)));
    // A later collective fails at once instead of hanging.
    QVERIFY_THROWS_EXCEPTION(std::exception, group[0]->allReduce(&value, 1, DType::F32));
  }
};

QTEST_APPLESS_MAIN(TestRunCancel)
#include "test_run_cancel.moc"
