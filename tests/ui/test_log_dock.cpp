// The Log dock shows what a rank thread logs: delivered on the GUI thread
// (never written from the rank thread), filtered by the level, coloured by
// level and capped at LogDock::kMaxLines with the newest line kept.
#include <QtTest>

#include <QSignalSpy>
#include <QTextBlock>
#include <atomic>
#include <thread>

#include "common/log.h"
#include "engine_bridge.h"
#include "experiment_panel.h"
#include "log_dock.h"
#include "main_window.h"

using namespace shardscope;

class TestLogDock : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { setLogSinks({}); }  // keep the test's stderr clean
  void init() { setLogLevel(spdlog::level::warn); }

  void receivesARankThreadsMessage() {
    LogDock dock;
    std::atomic<bool> gui_thread{true};
    std::thread rank([&] {
      gui_thread = QThread::currentThread() == qApp->thread();
      SPDLOG_LOGGER_WARN(&rankLogger(3), "bucket {} is late", 7);
      SPDLOG_LOGGER_DEBUG(&rankLogger(3), "below the level");
    });
    rank.join();
    QVERIFY(!gui_thread);
    QCOMPARE(dock.lines(), 0);  // queued to the GUI thread, not appended from the rank's
    QTRY_COMPARE(dock.lines(), 1);
    const QString text = dock.toPlainText();
    QVERIFY2(text.contains("[rank 3] warning: bucket 7 is late"), qPrintable(text));
    QVERIFY(!text.contains("below the level"));
    // Coloured by level: a warning is not in the text colour.
    const QTextBlock block = dock.document()->firstBlock();
    QVERIFY(block.begin() != block.end());
    QCOMPARE(block.begin().fragment().charFormat().foreground().color(), QColor("#E69F00"));
  }

  void showsTheLevelSet() {
    LogDock dock;
    setLogLevel(spdlog::level::debug);
    std::thread([] { SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Comm), "group 0 'world': 2 ranks"); }).join();
    QTRY_COMPARE(dock.lines(), 1);
    QVERIFY(dock.toPlainText().contains("[comm] debug: group 0 'world'"));
  }

  void keepsTheNewestLines() {
    LogDock dock;
    std::thread([] {
      for (int i = 0; i < LogDock::kMaxLines + 500; ++i) SPDLOG_LOGGER_ERROR(&logger(LogComponent::Engine), "line {}", i);
    }).join();
    const QString last = QStringLiteral("line %1").arg(LogDock::kMaxLines + 499);
    QTRY_VERIFY(dock.toPlainText().endsWith(last));
    QCOMPARE(dock.lines(), LogDock::kMaxLines);
    QVERIFY(!dock.toPlainText().contains(QStringLiteral("line 499\n")));
  }

  void theWindowsDockShowsARunsEngineLog() {
    // The window's own Log dock, fed by a real run's engine (its rank threads).
    setLogLevel(spdlog::level::info);
    MainWindow w;
    w.setPersistSettings(false);
    auto* dock = w.findChild<LogDock*>(QStringLiteral("logView"));
    QVERIFY(dock);
    RunConfig c = ExperimentPanel::defaultConfig();
    c.ranks = 2;
    c.steps = 2;
    w.experimentPanel()->setConfig(c);
    QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
    QString error;
    QVERIFY2(w.startRun(&error), qPrintable(error));
    QVERIFY(finished.wait(120000));
    QTRY_VERIFY2(dock->toPlainText().contains(QStringLiteral("[engine] info: run finished: 2 steps")),
                 qPrintable(dock->toPlainText()));
    QVERIFY(dock->toPlainText().contains(QStringLiteral("[engine] info: run setup: strategy ddp, 2 ranks")));
  }

  void aDeletedDockIsNotCalled() {
    auto* dock = new LogDock;
    SPDLOG_LOGGER_ERROR(&logger(LogComponent::Engine), "queued for a dock that goes");
    delete dock;  // its queued call is dropped and its sink removed
    std::thread([] { SPDLOG_LOGGER_ERROR(&logger(LogComponent::Engine), "after the dock"); }).join();
    QTest::qWait(50);
    LogDock fresh;
    QCOMPARE(fresh.lines(), 0);
  }
};

QTEST_MAIN(TestLogDock)
#include "test_log_dock.moc"
