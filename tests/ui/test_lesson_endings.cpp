// Each lesson driven through the window as a lecturer does it: pick the
// preset, press Run, wait. A lesson of several runs ends compared — every one
// of its rows selected and pinned, the page its text names showing the
// comparison (zero-stages-compared's 16 / 7 / 5.5 / 4 B/param, unit-size's
// gathered slices) — and the form shows the run the single-run views show.
// Time lessons end on their step times, exposed and hidden communication
// beside the bytes. The wheel over the form edits only a field with focus.
// With SHARDSCOPE_KEEP_FIGURES=DIR the window is saved at 1280×720 and
// 1920×1080 at each lesson's end, to look at.
#include <QItemSelectionModel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "compare_comm_view.h"
#include "compare_controller.h"
#include "compare_memory_view.h"
#include "compare_timeline_view.h"
#include "config/run_config.h"
#include "engine/run.h"
#include "experiment_panel.h"
#include "main_window.h"
#include "preset.h"
#include "run_history_model.h"
#include "view_pages.h"

using namespace shardscope;

namespace {

QWidget* shownPage(MainWindow& w, const QString& view) {
  return qobject_cast<QStackedWidget*>(w.pages().find(view)->widget())->currentWidget();
}

QWidget* comparePage(MainWindow& w, const QString& view) {
  if (view == QLatin1String("memory")) return static_cast<MemoryPage*>(w.pages().find(view))->compareView();
  if (view == QLatin1String("comm")) return static_cast<CommPage*>(w.pages().find(view))->compareView();
  if (view == QLatin1String("timeline")) return static_cast<TimelinePage*>(w.pages().find(view))->compareView();
  return nullptr;
}

void keepWindow(MainWindow& w, const QString& name) {
  if (!qEnvironmentVariableIsSet("SHARDSCOPE_KEEP_FIGURES")) return;
  const QSize before = w.size();
  for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)}) {
    w.resize(size);
    QTest::qWait(400);
    w.grab().save(qEnvironmentVariable("SHARDSCOPE_KEEP_FIGURES") +
                  QStringLiteral("/lesson-%1-%2x%3.png").arg(name).arg(size.width()).arg(size.height()));
  }
  w.resize(before);
}

// The lessons whose question is about time.
const QStringList kTimeLessons = {QStringLiteral("slow-interconnect"), QStringLiteral("hybrid-2x4"),
                                  QStringLiteral("tp-vs-fsdp"), QStringLiteral("tp-x-fsdp-70b")};

}  // namespace

class TestLessonEndings : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_lesson_endings"));
  }

  void lessonEndsOnItsPicture_data() {
    QTest::addColumn<QString>("name");
    for (const Preset& p : builtinPresets())
      if (!p.expectError && p.name != QLatin1String("3d-parallelism"))  // 3d: minutes of a 16-stage model
        QTest::newRow(qPrintable(p.name)) << p.name;
  }
  void lessonEndsOnItsPicture() {
    QFETCH(QString, name);
    const Preset preset = findPreset(name);
    const int runs = static_cast<int>(preset.runs.size());
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ExperimentPanel* panel = w.experimentPanel();
    QVERIFY(panel->selectPreset(name));
    const std::vector<std::string> run1 = runArgs(panel->config());  // run 1 as the form shows it
    // While the runs go, the form shows the run in progress.
    QList<size_t> shownAtEachEnd;
    connect(&w, &MainWindow::runFinished, this, [&] { shownAtEachEnd << panel->shownPresetRun(); });
    QSignalSpy done(&w, &MainWindow::presetFinished);
    QSignalSpy oneDone(&w, &MainWindow::runFinished);
    QTest::mouseClick(panel->runButton(), Qt::LeftButton);
    if (runs > 1) {
      QVERIFY(done.wait(300000));
      QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    } else {
      QVERIFY(oneDone.wait(300000));
      QVERIFY2(oneDone.at(0).at(0).toBool(), qPrintable(oneDone.at(0).at(1).toString()));
    }
    QCOMPARE(w.history()->runCount(), runs);
    QVERIFY(panel->activePreset());
    QCOMPARE(panel->activePreset()->name, name);  // Run repeats the whole lesson
    if (runs == 1) {
      QVERIFY(!w.inspection().comparing());
      return;
    }
    QList<size_t> expected;
    for (size_t i = 0; i < size_t(runs); ++i) expected << i;
    QCOMPARE(shownAtEachEnd, expected);

    // Compared: every run of the lesson, selected in the Runs table and pinned.
    QVERIFY(w.inspection().comparing());
    QCOMPARE(int(w.inspection().compared().size()), runs);
    for (int i = 0; i < runs; ++i)
      QCOMPARE(QString::fromStdString(w.inspection().compared()[size_t(i)].label), w.history()->run(i).label);
    QCOMPARE(w.runsTable()->selectionModel()->selectedRows().size(), qsizetype(runs));
    QCOMPARE(w.compare()->pinnedRows().size(), qsizetype(runs));
    // The page the lesson names shows the comparison.
    if (QWidget* compared = comparePage(w, preset.view)) QCOMPARE(shownPage(w, preset.view), compared);
    // The form shows run 1, as the single-run views do (the first pinned row).
    QCOMPARE(panel->shownPresetRun(), size_t(0));
    QCOMPARE(runArgs(panel->config()), run1);
    QCOMPARE(w.inspection().run().historyRow, 0);
    if (name == QLatin1String("zero-stages-compared")) {
      // The classic figure: 16, 7, 5.5 and 4 B/param at P = 4, each its run's measurement.
      const CompareMemoryView* view = static_cast<MemoryPage*>(w.pages().find(QStringLiteral("memory")))->compareView();
      const double bpp[] = {16.0, 7.0, 5.5, 4.0};
      QCOMPARE(view->measuredBytes().size(), size_t(4));
      for (size_t i = 0; i < 4; ++i) {
        const RunResult& r = *w.history()->run(int(i)).result;
        QVERIFY2(std::abs(double(view->measuredBytes()[i]) / double(r.params) - bpp[i]) < 0.05,
                 qPrintable(QStringLiteral("run %1: %2 B/param").arg(i).arg(double(view->measuredBytes()[i]) / double(r.params))));
      }
    }
    if (kTimeLessons.contains(name)) {
      // The figure of a time lesson: each run's step, its exposed and hidden communication.
      const CompareCommView* view = static_cast<CommPage*>(w.pages().find(QStringLiteral("comm")))->compareView();
      QCOMPARE(int(view->stepMs().size()), runs);
      bool any_exposed = false;
      for (int i = 0; i < runs; ++i) {
        const RunResult& r = *w.history()->run(i).result;
        const StepMetrics& m = r.last_step.front();  // rank 0
        QCOMPARE(m.rank, 0);
        QVERIFY(std::abs(view->stepMs()[size_t(i)] - double(m.wall_ns) * 1e-6) < 1e-3);
        QVERIFY(std::abs(view->exposedMs()[size_t(i)] - double(m.exposed_comm_ns) * 1e-6) < 1e-3);
        QVERIFY(std::abs(view->hiddenMs()[size_t(i)] - double(m.comm_ns - m.exposed_comm_ns) * 1e-6) < 1e-3);
        any_exposed = any_exposed || view->exposedMs()[size_t(i)] > 0;
      }
      QVERIFY(any_exposed);
      if (name == QLatin1String("hybrid-2x4")) {
        // Which link the bytes cross: zero3's rings span both nodes; hsdp keeps its
        // gathers and reduce-scatters in the node and sends only the replicas' all-reduce across.
        const QTableWidget* table = view->table();
        int within = -1, across = -1;
        for (int row = 0; row < table->rowCount(); ++row) {
          if (table->verticalHeaderItem(row)->text() == QStringLiteral("sent within a node (MiB)")) within = row;
          if (table->verticalHeaderItem(row)->text() == QStringLiteral("sent across nodes (MiB)")) across = row;
        }
        QVERIFY(within >= 0 && across >= 0);
        const auto mib = [&](int row, int col) { return table->item(row, col)->text().toDouble(); };
        QCOMPARE(mib(within, 0), 0.0);
        QVERIFY(mib(across, 0) > 0);
        QVERIFY(mib(within, 1) > 0);
        QVERIFY2(mib(across, 1) < mib(across, 0) / 4,
                 qPrintable(QStringLiteral("hsdp %1 MiB across, zero3 %2").arg(mib(across, 1)).arg(mib(across, 0))));
      }
      QVERIFY(view->figureTitle().startsWith(QStringLiteral("Step time")));
      QTemporaryDir dir;
      QString error;
      const QString path = dir.filePath(QStringLiteral("comm.png"));
      QVERIFY2(w.exportViewFigure(QStringLiteral("comm"), path, 1280, 720, &error), qPrintable(error));
      QCOMPARE(QImage(path).size(), QSize(1280, 720));
      if (qEnvironmentVariableIsSet("SHARDSCOPE_KEEP_FIGURES"))
        QFile::copy(path, qEnvironmentVariable("SHARDSCOPE_KEEP_FIGURES") + QStringLiteral("/comm-%1.png").arg(name));
    }
    keepWindow(w, name);
  }

  void wheelEditsOnlyAFocusedField() {
    ExperimentPanel panel;
    panel.show();
    panel.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&panel));
    auto* steps = panel.findChild<QSpinBox*>(QStringLiteral("steps"));
    QVERIFY(steps);
    QCOMPARE(steps->focusPolicy(), Qt::StrongFocus);
    const int before = steps->value();
    const QPointF at(steps->width() / 2.0, steps->height() / 2.0);
    const auto wheel = [&] {
      QWheelEvent event(at, steps->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                        Qt::NoScrollPhase, false);
      QApplication::sendEvent(steps, &event);
    };
    wheel();
    QCOMPARE(steps->value(), before);  // no focus: the wheel is the form's scroll
    steps->setFocus();
    QTRY_VERIFY(steps->hasFocus());
    wheel();
    QCOMPARE(steps->value(), before + 1);
  }
};

QTEST_MAIN(TestLessonEndings)
#include "test_lesson_endings.moc"
