// Shared by the ui tests that run a built-in preset in a real window and wait
// for all its runs (QVERIFY inside: call it from a test function, then check
// QTest::currentTestFailed() if later steps depend on it).
#pragma once

#include <QSignalSpy>
#include <QtTest>

#include <string>
#include <vector>

#include "config/run_config.h"
#include "experiment_panel.h"
#include "main_window.h"
#include "preset.h"

inline void runPreset(shardscope::MainWindow& w, const char* name) {
  QSignalSpy done(&w, &shardscope::MainWindow::presetFinished);
  QString error;
  QVERIFY2(w.runPreset(shardscope::findPreset(QString::fromLatin1(name)), &error), qPrintable(error));
  QVERIFY(done.wait(240000));
  QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
}

// Puts the `run` flags `args` in the form and runs them as the Run button
// does, waiting for the run to finish successfully.
inline void runFromArgs(shardscope::MainWindow& w, const std::vector<std::string>& args) {
  w.experimentPanel()->setConfig(shardscope::parseRunArgs(args));
  QSignalSpy finished(&w, &shardscope::MainWindow::runFinished);
  QString error;
  QVERIFY2(w.startRun(&error), qPrintable(error));
  QVERIFY(finished.wait(240000));
  QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));
}
