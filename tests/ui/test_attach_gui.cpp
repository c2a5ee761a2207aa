// The window attached to a run served on another address (a second loopback
// address, so CURVE keys are in force): it shows the run live from its first
// step, its Pause / Step stop the served run's ranks in lockstep at the same
// point with the engine's ledger, and at the end the window holds the served
// run's trace; an unauthorized key is one clear message; Detach leaves the
// served run going; Stop stops it.
#include <QSignalSpy>
#include <QStatusBar>
#include <QtTest>

#include "attach/curve_keys.h"
#include "attach/run_server.h"
#include "engine_bridge.h"
#include "main_window.h"
#include "run_history_model.h"

using namespace shardscope;

namespace {

RunConfig servedConfig(int steps) {
  RunConfig c;
  c.strategy = Strategy::Zero3;
  c.ranks = 4;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.batch = 8;
  c.steps = steps;
  c.clock = ClockKind::Modeled;
  return c;
}

constexpr int kWaitMs = 60000;

// A served run on 127.0.0.2 (secured), keys under `home`; authorize: whether
// this user's own key (the window's) may attach.
struct ServedRun {
  Run run;
  std::unique_ptr<RunServer> server;
  ServedRun(const QTemporaryDir& home, int steps, bool authorize) : run(servedConfig(steps)) {
    const std::filesystem::path dir = home.path().toStdString();
    if (authorize) authorizeKey(dir, loadOrMakeIdentity(dir).public_key, "this window");
    ServeOptions options;
    options.address = parseServeAddress("127.0.0.2:0", "--serve", true);
    options.config_dir = dir;
    server = std::make_unique<RunServer>(run, options);
    run.gate().enable();
    server->start();
  }
  QString address() const { return QString::fromStdString(server->endpoint()).mid(6); }  // no tcp://
  QString key() const { return QString::fromStdString(server->publicKey()); }
  void end() {
    RunResult r = run.wait();
    server->finish(&r, "");
  }
};

}  // namespace

class TestAttachGui : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { qputenv("SHARDSCOPE_CONFIG_DIR", m_home.path().toUtf8()); }

  void attachedWindowShowsAndStepsTheServedRun() {
    ServedRun served(m_home, 2, true);
    served.run.gate().pause();  // stops before its first op
    served.run.start();
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    QSignalSpy stops(w.bridge(), &EngineBridge::gateStopped);
    QString error;
    QVERIFY2(w.attachToRun(served.address(), served.key(), &error), qPrintable(error));
    QVERIFY(w.bridge()->isAttached());
    QVERIFY(w.windowTitle().contains("attached to tcp://127.0.0.2:"));
    QVERIFY(stops.wait(kWaitMs));
    std::vector<GatePoint> here;
    uint64_t here_id = 0;
    QVERIFY(served.run.gate().stopped(&here, &here_id));
    QCOMPARE(w.bridge()->gateStop()->id, here_id);
    QCOMPARE(w.bridge()->gateStop()->points, here);
    QVERIFY(w.bridge()->gateStop()->lockstep);
    for (int r = 0; r < 4; ++r)  // the other streams may still finish a prefetch: the window follows them
      QVERIFY(QTest::qWaitFor([&] { return w.bridge()->ledgerNow(r).current == served.run.ledger(r).current; }, kWaitMs));
    // Step by op from the window: the served run moves one op, both see it.
    w.bridge()->step(StepMode::NextOp);
    QVERIFY(QTest::qWaitFor([&] { return w.bridge()->gateStop() && w.bridge()->gateStop()->id != here_id; }, kWaitMs));
    QVERIFY(served.run.gate().stopped(&here, &here_id));
    QCOMPARE(w.bridge()->gateStop()->id, here_id);
    QCOMPARE(w.bridge()->gateStop()->points, here);
    // Continue: the run ends there, the window shows all of it.
    QSignalSpy finished(&w, &MainWindow::runFinished);
    w.bridge()->resume();
    QVERIFY(QTest::qWaitFor([&] { return served.run.finished(); }, kWaitMs));
    served.end();
    QVERIFY(finished.count() > 0 || finished.wait(kWaitMs));
    QCOMPARE(finished.front().at(0).toBool(), true);
    const RunTrace trace = served.run.trace();
    size_t events = 0;
    for (const auto& rank : trace.events) events += rank.size();
    QCOMPARE(w.store().eventCount(), events);
    QCOMPARE(w.store().losses(), served.run.losses());
    QCOMPARE(w.history()->runCount(), 1);
  }

  void unauthorizedKeyIsOneClearMessage() {
    QTemporaryDir other_home;  // the server's keys: this window's key is not among them
    ServedRun served(other_home, 2, false);
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY(!w.attachToRun(served.address(), served.key(), &error));
    QVERIFY2(error.contains("refused this inspector"), qPrintable(error));
    QVERIFY(!w.bridge()->isRunning());
    QVERIFY(!w.attachToRun(served.address(), QString(), &error));
    QVERIFY2(error.contains("needs the serving machine's key"), qPrintable(error));
    QVERIFY(!w.attachToRun("127.0.0.1:0", QString(), &error));
    QVERIFY2(error.contains("attach address must be PORT, HOST:PORT"), qPrintable(error));
    served.run.start();
    served.end();
  }

  void detachLeavesTheServedRunGoingAndStopStopsIt() {
    ServedRun served(m_home, 100, true);
    served.run.gate().pause();
    served.run.start();
    MainWindow w;
    w.setPersistSettings(false);
    QSignalSpy stops(w.bridge(), &EngineBridge::gateStopped);
    QSignalSpy finished(&w, &MainWindow::runFinished);
    QString error;
    QVERIFY2(w.attachToRun(served.address(), served.key(), &error), qPrintable(error));
    QVERIFY(stops.wait(kWaitMs));
    w.bridge()->detach();
    QVERIFY(finished.wait(kWaitMs));
    QCOMPARE(finished.front().at(0).toBool(), false);
    QVERIFY2(finished.front().at(1).toString().contains("the run goes on there"),
             qPrintable(finished.front().at(1).toString()));
    QVERIFY(!served.run.finished());
    QVERIFY(served.run.gate().paused());  // still held where it was, for the next inspector
    // Attach again (from the start of the run), then Stop stops the run itself.
    QVERIFY2(w.attachToRun(served.address(), served.key(), &error), qPrintable(error));
    QVERIFY(QTest::qWaitFor([&] { return w.bridge()->gateStop().has_value(); }, kWaitMs));
    w.bridge()->cancel();
    QVERIFY(QTest::qWaitFor([&] { return served.run.finished(); }, kWaitMs));
    QVERIFY_THROWS_EXCEPTION(RunAborted, served.run.wait());
    RunResult so_far = served.run.resultSoFar();
    served.server->finish(&so_far, "");
    QVERIFY(finished.count() == 2 || finished.wait(kWaitMs));
    QVERIFY2(finished.back().at(1).toString().contains("stopped before its last step"),
             qPrintable(finished.back().at(1).toString()));
  }

 private:
  QTemporaryDir m_home;  // this user's keys (the window's identity)
};

QTEST_MAIN(TestAttachGui)
#include "test_attach_gui.moc"
