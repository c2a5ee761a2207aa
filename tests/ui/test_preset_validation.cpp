// A preset is checked whole before its first run starts: a bad profile in its
// second run is found at once, named by its field path, and nothing runs —
// in the preset runner (the window's Run) and on the headless figure path
// (`shardscope --figure --preset FILE`, exit 2).
#include <QtTest>

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "engine_bridge.h"
#include "figure_job.h"
#include "inspect/event_store.h"
#include "preset.h"
#include "preset_runner.h"

using namespace shardscope;

namespace {

const QByteArray kBadSecondRun = R"({"title": "bad second run", "text": "the second run names a profile that is not there",
  "runs": [
    {"label": "fine", "config": {"strategy": "ddp", "ranks": 2, "layers": 2, "hidden": 32, "batch": 4, "steps": 50}},
    {"label": "bad", "config": {"strategy": "ddp", "ranks": 2, "layers": 2, "hidden": 32, "batch": 4, "profile": "no-such-profile"}}
  ]})";

}  // namespace

class TestPresetValidation : public QObject {
  Q_OBJECT

 private slots:
  void theRunnerChecksEveryRunBeforeTheFirst() {
    EventStore store;
    EngineBridge bridge(&store);
    PresetRunner runner(&bridge);
    QSignalSpy started(&bridge, &EngineBridge::runStarted);
    const Preset preset = parsePreset(kBadSecondRun, QStringLiteral("bad"));
    QString error;
    QVERIFY(!runner.start(preset, &error));
    QVERIFY2(error.startsWith(QStringLiteral("runs[1].config.profile: unknown profile 'no-such-profile'")),
             qPrintable(error));
    QVERIFY(!runner.running());
    QVERIFY(!bridge.isRunning());
    QCoreApplication::processEvents();
    QCOMPARE(started.count(), 0);
  }

  void theFigurePathRefusesItWithExit2() {
    QTemporaryDir dir;
    const QString path = dir.filePath("bad.json");
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(kBadSecondRun);
    file.close();
    FigureJob job;
    job.preset = path;
    job.view = QStringLiteral("timeline");
    job.out = dir.filePath("fig.png");
    QString message;
    QElapsedTimer timer;
    timer.start();
    QCOMPARE(runFigureJob(job, &message), 2);
    QVERIFY2(message.contains(QStringLiteral("runs[1].config.profile: unknown profile 'no-such-profile'")),
             qPrintable(message));
    QVERIFY(!QFile::exists(job.out));
    QVERIFY(timer.elapsed() < 20000);  // run 1 (50 steps) never ran
  }

  void aRepeatedKeyIsRefusedInTheGuiToo() {
    try {
      parsePreset(R"({"title": "a", "title": "b", "text": "t", "runs": [{"config": {}}]})", QStringLiteral("dup"));
      QFAIL("a repeated key was accepted");
    } catch (const PresetError& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("dup.json: field \"title\" appears twice")), e.what());
    }
  }
};

QTEST_MAIN(TestPresetValidation)
#include "test_preset_validation.moc"
