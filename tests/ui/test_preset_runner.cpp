// The preset runner without a window (a QCoreApplication: no widgets): it runs
// a preset's runs in order through the engine bridge, names each while it
// goes, and ends the preset as it intends, including one that expects its
// run to stop (a hang) and one whose run stops when it should not.
#include <QtTest>

#include <QSignalSpy>

#include "engine_bridge.h"
#include "inspect/event_store.h"
#include "preset.h"
#include "preset_runner.h"

using namespace shardscope;

namespace {

// The window's part: tell the runner when each run ends.
void driveFromBridge(EngineBridge& bridge, PresetRunner& runner) {
  QObject::connect(&bridge, &EngineBridge::runFinished, &runner, [&bridge, &runner](bool ok, const QString& message) {
    runner.runEnded(ok, !ok && bridge.lastError().isEmpty(), message);
  });
}

}  // namespace

class TestPresetRunner : public QObject {
  Q_OBJECT

 private slots:
  void runsEveryRunInOrder() {
    EventStore store;
    EngineBridge bridge(&store);
    PresetRunner runner(&bridge);
    driveFromBridge(bridge, runner);
    const Preset preset = findPreset(QStringLiteral("fsdp-prefetch-on-off"));
    QStringList labels, runOf, sources;
    connect(&bridge, &EngineBridge::runStarted, this, [&] {
      labels << runner.label();
      runOf << runner.runOfText();
      sources << runner.sourceText();
    });
    QSignalSpy views(&runner, &PresetRunner::viewWanted);
    QSignalSpy finished(&runner, &PresetRunner::finished);
    QString error;
    QVERIFY2(runner.start(preset, &error), qPrintable(error));
    QVERIFY(runner.running());
    QCOMPARE(runner.preset()->name, preset.name);
    QVERIFY(!runner.start(preset, &error));  // one preset at a time
    QVERIFY2(error.contains(QStringLiteral("a run is in progress")), qPrintable(error));
    QVERIFY(finished.wait(120000));
    QCOMPARE(labels, (QStringList{preset.runs[0].label, preset.runs[1].label}));
    QCOMPARE(runOf, (QStringList{QStringLiteral("run 1 of 2"), QStringLiteral("run 2 of 2")}));
    QCOMPARE(sources.last(), QStringLiteral("preset %1, run 2/2: %2").arg(preset.name, preset.runs[1].label));
    QCOMPARE(finished.at(0).at(0).toBool(), true);
    QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("preset %1: 2 runs finished").arg(preset.name));
    // Its view at the start and again at the end.
    QCOMPARE(views.count(), 2);
    QCOMPARE(views.at(1).at(0).toString(), preset.view);
    QVERIFY(!runner.running());
    QVERIFY(runner.sourceText().isEmpty());
  }

  void aHangPresetExpectsItsRunToStop() {
    EventStore store;
    EngineBridge bridge(&store);
    PresetRunner runner(&bridge);
    driveFromBridge(bridge, runner);
    Preset preset = findPreset(QStringLiteral("rank-dependent-hang"));
    preset.runs.front().config.timeout_ms = 1500;
    QSignalSpy finished(&runner, &PresetRunner::finished);
    QString error;
    QVERIFY2(runner.start(preset, &error), qPrintable(error));
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));
    QVERIFY(finished.at(0).at(1).toString().startsWith(
        QStringLiteral("preset rank-dependent-hang: the run stopped, as the preset expects: ")));

    // The same preset without the branch finishes: not what it intends.
    preset.runs.front().config = findPreset(QStringLiteral("ddp-basics")).runs.front().config;
    QVERIFY2(runner.start(preset, &error), qPrintable(error));
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.at(1).at(0).toBool(), false);
    QCOMPARE(finished.at(1).at(1).toString(),
             QStringLiteral("preset rank-dependent-hang expected its run to stop, but it finished"));
  }

  void aSingleRunIsNoPreset() {
    EventStore store;
    EngineBridge bridge(&store);
    PresetRunner runner(&bridge);
    driveFromBridge(bridge, runner);
    QSignalSpy finished(&runner, &PresetRunner::finished);
    QSignalSpy ended(&bridge, &EngineBridge::runFinished);
    const RunConfig config = findPreset(QStringLiteral("ddp-basics")).runs.front().config;
    QString error;
    QVERIFY2(runner.startOne(config, configLabel(config), &error), qPrintable(error));
    QVERIFY(!runner.running());
    QCOMPARE(runner.label(), configLabel(config));
    QVERIFY(runner.runOfText().isEmpty());
    QVERIFY(ended.wait(120000));
    QCOMPARE(finished.count(), 0);
  }
};

QTEST_GUILESS_MAIN(TestPresetRunner)
#include "test_preset_runner.moc"
