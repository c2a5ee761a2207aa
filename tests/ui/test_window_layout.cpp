// The window on a lecturer's screens (issue 31, defect 9): on first start it
// fits the screen it opens on (1280×720 and 1920×1080), Run and the status bar
// are on screen, no label of the Experiment form is cut, and the Runs table's
// run names are whole. Two virtual screens of the offscreen platform (its
// config file) stand for the projector and the desktop.
// SHARDSCOPE_SCREENSHOT_DIR=DIR also writes the window after a preset at both
// sizes there, to be looked at.
#include <QtTest>

#include <QDockWidget>
#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QStyle>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>

#include "buckets_view.h"
#include "experiment_panel.h"
#include "main_window.h"
#include "preset_run.h"
#include "run_history_model.h"
#include "timeline_view.h"

using namespace shardscope;

namespace {

QScreen* screenOfSize(QSize size) {
  for (QScreen* s : QGuiApplication::screens())
    if (s->geometry().size() == size) return s;
  return nullptr;
}

// The widget lies inside the window's client area and nothing of it is cut.
bool whollyShown(const QWidget* w, const QWidget* window) {
  if (!w->isVisible()) return false;
  const QRect in_window(w->mapTo(window, QPoint(0, 0)), w->size());
  return window->rect().contains(in_window) && w->visibleRegion().boundingRect().size() == w->size();
}

// Every label of the form is at least as wide as its text (word-wrapped
// labels wrap instead); returns the first that is not, or "".
QString cutLabel(const ExperimentPanel* panel) {
  for (const QLabel* label : panel->findChildren<QLabel*>()) {
    if (!label->isVisibleTo(panel) || label->wordWrap() || label->text().isEmpty()) continue;
    if (label->width() < label->sizeHint().width())
      return QStringLiteral("'%1' is %2 px wide, its text %3 px").arg(label->text()).arg(label->width()).arg(label->sizeHint().width());
  }
  return {};
}

void checkFits(MainWindow& w, QScreen* screen) {
  const QRect available = screen->availableGeometry();
  QVERIFY2(available.contains(w.frameGeometry()),
           qPrintable(QStringLiteral("window %1×%2 at %3,%4 on a %5×%6 screen")
                          .arg(w.frameGeometry().width())
                          .arg(w.frameGeometry().height())
                          .arg(w.frameGeometry().x())
                          .arg(w.frameGeometry().y())
                          .arg(available.width())
                          .arg(available.height())));
  QVERIFY2(whollyShown(w.experimentPanel()->runButton(), &w), "the Run button is off screen or cut");
  QVERIFY2(whollyShown(w.statusBar(), &w), "the status bar is off screen or cut");
  // The form is never narrower than it needs: no field or label cut on either side.
  auto* scroll = w.findChild<QDockWidget*>(QStringLiteral("experimentDock"))->findChild<QScrollArea*>();
  QVERIFY(scroll);
  QVERIFY2(w.experimentPanel()->width() <= scroll->viewport()->width(),
           qPrintable(QStringLiteral("form %1 px in a %2 px dock").arg(w.experimentPanel()->width()).arg(scroll->viewport()->width())));
  const QString cut = cutLabel(w.experimentPanel());
  QVERIFY2(cut.isEmpty(), qPrintable(cut));
}

}  // namespace

class TestWindowLayout : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_window_layout"));
    QVERIFY2(screenOfSize({1280, 720}) && screenOfSize({1920, 1080}), "the offscreen platform's two screens are missing");
  }

  // A first start on the small screen: the window the constructor sizes.
  void firstStartFitsA1280x720Screen() {
    QScreen* small = screenOfSize({1280, 720});
    QCOMPARE(QGuiApplication::primaryScreen(), small);
    MainWindow w;
    w.setPersistSettings(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    checkFits(w, small);
  }

  void fitsEitherScreenWithARunShown() {
    const QString dir = qEnvironmentVariable("SHARDSCOPE_SCREENSHOT_DIR");
    for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)}) {
      QScreen* screen = screenOfSize(size);
      MainWindow w;
      w.setPersistSettings(false);
      w.fitToScreen(screen);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      runPreset(w, "ddp-basics");
      if (QTest::currentTestFailed()) return;
      // The communication view's plots, filled (their legends grew the window once).
      w.showView(QStringLiteral("comm"));
      w.inspection().refresh(true);
      QCoreApplication::processEvents();
      checkFits(w, screen);
      if (QTest::currentTestFailed()) return;
      w.showView(QStringLiteral("buckets"));
      w.showView(QStringLiteral("runs"));
      QCoreApplication::processEvents();
      // Looked at before it is checked: what is wrong shows in the picture.
      const QImage shot = w.grab().toImage();
      QVERIFY(!shot.isNull());
      if (!dir.isEmpty())
        QVERIFY(shot.save(QStringLiteral("%1/window-ddp-basics-%2x%3.png").arg(dir).arg(size.width()).arg(size.height())));
      checkFits(w, screen);
      if (QTest::currentTestFailed()) return;
      // The buckets view's row labels never overlap: at most one per text line.
      w.showView(QStringLiteral("buckets"));
      QCoreApplication::processEvents();
      QCustomPlot* buckets = w.bucketsView()->plot();
      buckets->replot(QCustomPlot::rpImmediateRefresh);
      const auto ticker = buckets->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
      QVERIFY(ticker && ticker->ticks().size() > 1);
      const double line = QFontMetricsF(buckets->yAxis->tickLabelFont()).height();
      double previous = -1e9;
      for (double at : ticker->ticks().keys()) {
        const double px = buckets->yAxis->coordToPixel(at);
        if (buckets->axisRect()->rect().contains(buckets->axisRect()->left() + 1, static_cast<int>(px))) {
          QVERIFY2(std::abs(px - previous) >= line - 0.5,
                   qPrintable(QStringLiteral("bucket labels %1 px apart, a line is %2 px").arg(std::abs(px - previous)).arg(line)));
          previous = px;
        }
      }
      // The run's name is whole in the Runs table.
      QTableView* runs = w.runsTable();
      QVERIFY(w.history()->runCount() > 0);
      // The item's text margins (QStyle::PM_FocusFrameHMargin + 1 a side) around the name.
      const int margins = 2 * (runs->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, runs) + 1);
      int needed = 0;
      for (int row = 0; row < w.history()->runCount(); ++row)
        needed = std::max(needed, runs->fontMetrics().horizontalAdvance(
                                      w.history()->index(row, RunHistoryModel::Run).data().toString()) + margins);
      QVERIFY2(runs->columnWidth(RunHistoryModel::Run) >= needed,
               qPrintable(QStringLiteral("run column %1 px, its names %2 px").arg(runs->columnWidth(RunHistoryModel::Run)).arg(needed)));
    }
  }

  // The timeline is readable on the projector (issue 51, item 7): beside the
  // default docks it got about 310×200 px with its legend stacked over half
  // of it. At 1920×1080 it keeps the roomy arrangement, Loss below it.
  void theTimelineIsReadableOnEitherScreen() {
    for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)}) {
      MainWindow w;
      w.setPersistSettings(false);
      w.fitToScreen(screenOfSize(size));
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      runPreset(w, "ddp-basics");
      if (QTest::currentTestFailed()) return;
      QCoreApplication::processEvents();
      QCustomPlot* plot = w.timeline()->plot();
      plot->replot(QCustomPlot::rpImmediateRefresh);
      const QRect rows = plot->axisRect()->rect();
      const double legend = plot->legend->visible() ? plot->legend->outerRect().height() : 0;
      const QString seen = QStringLiteral("%1×%2: timeline rows %3×%4 px, legend %5 px high in a %6 px plot")
                               .arg(size.width()).arg(size.height()).arg(rows.width()).arg(rows.height())
                               .arg(legend).arg(plot->height());
      qInfo("%s", qPrintable(seen));
      QVERIFY2(rows.width() >= (size.width() < 1600 ? 360 : 700), qPrintable(seen));
      QVERIFY2(rows.height() >= (size.width() < 1600 ? 400 : 450), qPrintable(seen));
      QVERIFY2(legend <= plot->height() / 5.0, qPrintable(seen));
      // The loss curves: below the timeline on the desktop, tabbed under the pages on the projector.
      auto* loss = w.findChild<QDockWidget*>(QStringLiteral("lossDock"));
      QCOMPARE(w.dockWidgetArea(loss), size.width() < 1600 ? Qt::RightDockWidgetArea : Qt::BottomDockWidgetArea);
      checkFits(w, screenOfSize(size));
      if (QTest::currentTestFailed()) return;
    }
  }

  // Every built-in preset, one after another in one window on the projector:
  // no preset (its text, fields or compared runs) widens the window past the
  // screen or the form past its dock.
  void everyPresetFitsTheSmallScreen() {
    QScreen* small = screenOfSize({1280, 720});
    MainWindow w;
    w.setPersistSettings(false);
    w.fitToScreen(small);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    for (const Preset& preset : builtinPresets()) {
      runPreset(w, qPrintable(preset.name));
      if (QTest::currentTestFailed()) return;
      QCoreApplication::processEvents();
      checkFits(w, small);
      if (QTest::currentTestFailed()) {
        qWarning("after preset %s", qPrintable(preset.name));
        return;
      }
    }
  }
};

// Two virtual screens, the small one primary (the platform lists them by name:
// the first is primary), set before QApplication reads the platform.
int main(int argc, char** argv) {
  QTemporaryDir dir;
  const QString config = dir.filePath(QStringLiteral("screens.json"));
  QFile file(config);
  if (!file.open(QIODevice::WriteOnly)) return 1;
  file.write(R"({"windowFrameMargins": true, "screens": [
    {"name": "screen1-projector", "x": 0, "y": 0, "width": 1280, "height": 720, "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1},
    {"name": "screen2-desktop", "x": 1280, "y": 0, "width": 1920, "height": 1080, "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]})");
  file.close();
  qputenv("QT_QPA_PLATFORM", "offscreen:configfile=" + config.toLocal8Bit());
  QApplication app(argc, argv);
  TestWindowLayout test;
  QTEST_SET_MAIN_SOURCE_PATH
  return QTest::qExec(&test, argc, argv);
}

#include "test_window_layout.moc"
