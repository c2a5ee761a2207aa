// Experiments on disk: File ▸ Save experiment writes a preset file that opens
// back into the same form (a custom config or a preset's runs), a bad file is
// refused with the field named, and opening a trace puts the run's own flags
// back in the form, so Run repeats exactly that experiment.
#include <QFile>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "experiment_panel.h"
#include "main_window.h"
#include "preset.h"

using namespace shardscope;

namespace {

RunConfig custom() {
  return parseRunArgs({"--strategy", "zero3", "--ranks", "2", "--layers", "3", "--hidden", "48", "--batch", "4",
                       "--steps", "1", "--lr", "0.00042", "--unit-blocks", "1", "--prefetch", "forward", "--clock",
                       "modeled", "--profile", "cluster-25gbe", "--timeout-ms", "20000"});
}

}  // namespace

class TestExperimentFiles : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_experiment_files"));
  }

  void customExperimentRoundTrips() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("mine.json"));
    MainWindow a;
    a.setPersistSettings(false);
    a.experimentPanel()->setConfig(custom());
    QString error;
    QVERIFY2(a.saveExperiment(path, &error), qPrintable(error));

    MainWindow b;
    b.setPersistSettings(false);
    QVERIFY2(b.openExperiment(path, &error), qPrintable(error));
    QCOMPARE(runArgs(b.experimentPanel()->config()), runArgs(a.experimentPanel()->config()));
  }

  void presetExperimentKeepsItsRuns() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("prefetch.json"));
    MainWindow w;
    w.setPersistSettings(false);
    QVERIFY(w.experimentPanel()->selectPreset(QStringLiteral("fsdp-prefetch-on-off")));
    QString error;
    QVERIFY2(w.saveExperiment(path, &error), qPrintable(error));
    const Preset saved = loadPresetFile(path);
    const Preset original = findPreset(QStringLiteral("fsdp-prefetch-on-off"));
    QCOMPARE(saved.title, original.title);
    QCOMPARE(saved.view, original.view);
    QCOMPARE(saved.runs.size(), original.runs.size());
    for (size_t i = 0; i < saved.runs.size(); ++i) {
      QCOMPARE(saved.runs[i].label, original.runs[i].label);
      QCOMPARE(runArgs(saved.runs[i].config), runArgs(original.runs[i].config));
    }
  }

  void badExperimentNamesTheField() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("bad.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"title": "t", "text": "x", "runs": [{"label": "a", "config": {"ranks": 3, "batch": 4}}]})");
    f.close();
    MainWindow w;
    w.setPersistSettings(false);
    const RunConfig before = w.experimentPanel()->config();
    QString error;
    QVERIFY(!w.openExperiment(path, &error));
    QVERIFY2(error.contains(QStringLiteral("bad.json")) && error.contains(QStringLiteral("--batch")), qPrintable(error));
    QCOMPARE(runArgs(w.experimentPanel()->config()), runArgs(before));  // nothing changed
  }

  void openedTraceRestoresItsExperiment() {
    QTemporaryDir dir;
    const QString trace = dir.filePath(QStringLiteral("run.json"));
    std::vector<std::string> ran;
    {
      MainWindow w;
      w.setPersistSettings(false);
      w.experimentPanel()->setConfig(custom());
      QSignalSpy finished(&w, &MainWindow::runFinished);
      QString error;
      QVERIFY2(w.startRun(&error), qPrintable(error));
      QVERIFY(finished.wait(120000));
      QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));
      QVERIFY2(w.exportTrace(trace, &error), qPrintable(error));
      ran = runArgs(w.experimentPanel()->config());
    }
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY2(w.openTrace(trace, &error), qPrintable(error));
    QCOMPARE(runArgs(w.experimentPanel()->config()), ran);
    QCOMPARE(w.experimentPanel()->config().profileName(), std::string("cluster-25gbe"));
  }
};

QTEST_MAIN(TestExperimentFiles)
#include "test_experiment_files.moc"
