// Issue 51's smaller lecture defects, each as the lecturer saw it: a tooltip
// of the previous run over the next one, a page of charts the wheel did not
// scroll, the compared timeline's legend short of the single one's entries,
// figures that could not be exported without a run, other lessons' loss
// curves, and unit rows made up for a profiler trace.
#include <QtTest>

#include <QAction>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <qcustomplot.h>

#include "compare_comm_view.h"
#include "compare_timeline_view.h"
#include "loss_view.h"
#include "main_window.h"
#include "palette.h"
#include "plot_style.h"
#include "timeline_plottable.h"
#include "timeline_view.h"
#include "units_view.h"
#include "view_pages.h"

using namespace shardscope;

namespace {

const QString kData = QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/");

QWheelEvent wheelDown(QWidget* over) {
  const QPointF at(over->width() / 2.0, over->height() / 2.0);
  return QWheelEvent(at, over->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier,
                     Qt::NoScrollPhase, false);
}

}  // namespace

class TestLectureSmalls : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_lecture_smalls"));
  }

  // A tooltip names an event of the run on screen: the next run hides it.
  void aTooltipDoesNotOutliveItsRun() {
    MainWindow w;
    w.setPersistSettings(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QWidget* timeline = w.timeline();
    QToolTip::showText(timeline->mapToGlobal(QPoint(50, 50)), QStringLiteral("fwd block3 of the last run"), timeline);
    if (!QToolTip::isVisible()) QSKIP("this platform shows no tooltips");
    ShownRun next;
    next.kind = ShownRun::Kind::Live;
    next.source = QStringLiteral("live run");
    w.inspection().show(std::move(next));
    // Hidden within its fade (0.3 s); left alone it stays up 10 s.
    QTRY_VERIFY_WITH_TIMEOUT(!QToolTip::isVisible(), 3000);
  }

  // The wheel over a chart that does not zoom scrolls the page it is on (the
  // communication page's table lies below its charts in a short dock).
  void theWheelOverAChartScrollsItsPage() {
    QScrollArea area;
    auto* page = new QWidget;
    auto* box = new QVBoxLayout(page);
    auto* plot = new QCustomPlot(page);
    plot->setMinimumHeight(900);
    box->addWidget(plot);
    area.setWidget(page);
    area.setWidgetResizable(true);
    area.resize(400, 300);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    QVERIFY(area.verticalScrollBar()->maximum() > 0);
    PlotStyle::wheelScrollsPage(plot);
    QWheelEvent down = wheelDown(plot);
    QApplication::sendEvent(plot, &down);
    QVERIFY2(area.verticalScrollBar()->value() > 0, "the wheel over the chart did not scroll the page");
    // A chart that zooms keeps the wheel.
    area.verticalScrollBar()->setValue(0);
    plot->setInteractions(QCP::iRangeZoom);
    QWheelEvent zoom = wheelDown(plot);
    QApplication::sendEvent(plot, &zoom);
    QCOMPARE(area.verticalScrollBar()->value(), 0);
  }

  // The compared timeline's legend names what its bands draw, as the single
  // timeline's does: host launches, bucket-ready marks, folds, waits.
  void theComparedTimelinesLegendNamesItsMarks() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QString error;
    QVERIFY2(w.openTrace(kData + QStringLiteral("golden/ddp.trace.json"), &error), qPrintable(error));
    QVERIFY2(w.openTrace(kData + QStringLiteral("golden/zero1.trace.json"), &error), qPrintable(error));
    QVERIFY2(w.compareRuns({0, 1}, &error), qPrintable(error));
    auto* page = static_cast<TimelinePage*>(w.pages().find(QStringLiteral("timeline")));
    CompareTimelineView* view = page->compareView();
    QCOMPARE(view->bandCount(), 2);
    view->grab();
    QCoreApplication::processEvents();  // the legend follows the paint (queued)
    view->grab();
    const QStringList names = view->legendNames();
    const QString all = names.join(QStringLiteral(" | "));
    for (EventKind kind : {EventKind::Forward, EventKind::AllReduce, EventKind::Launch, EventKind::BucketReady})
      QVERIFY2(names.contains(Palette::kindTitle(kind)), qPrintable(Palette::kindTitle(kind) + QStringLiteral(" missing: ") + all));
    bool folds = false, waits = false;
    for (int i = 0; i < view->plot()->plottableCount(); ++i)
      if (auto* band = qobject_cast<TimelinePlottable*>(view->plot()->plottable(i))) {
        folds = folds || band->drewFolds();
        waits = waits || band->drewWaits();
      }
    QVERIFY2(folds || waits, "neither band drew folds or waits: the check below checks nothing");
    QCOMPARE(names.contains(QStringLiteral("folded: several short ops")), folds);
    QCOMPARE(names.contains(QStringLiteral("pale part: waiting for the slowest peer")), waits);
  }

  // Compared communication charts in a narrow column (1280×720): stacked,
  // each the column's width, instead of two 200-px charts whose run names ran
  // into each other; side by side where there is room.
  void comparedCommChartsStackInANarrowColumn() {
    CompareCommView view;
    QSplitter* charts = nullptr;
    for (QSplitter* s : view.findChildren<QSplitter*>())
      if (s->indexOf(view.timePlot()) >= 0) charts = s;
    QVERIFY(charts);
    view.resize(460, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(charts->orientation(), Qt::Vertical);
    QVERIFY(view.timePlot()->width() >= 400);
    view.resize(1200, 700);
    QCoreApplication::processEvents();
    QCOMPARE(charts->orientation(), Qt::Horizontal);
  }

  // The capacity calculator needs no run, and an opened snapshot is a run of
  // its own: both can be exported from an otherwise empty window.
  void figuresWithoutARun() {
    MainWindow w;
    w.setPersistSettings(false);
    w.show();
    QVERIFY(w.exportFigureAction()->isEnabled());
    QCOMPARE(w.figureViews(), QStringList{QStringLiteral("capacity")});
    QTemporaryDir dir;
    QString error;
    QVERIFY2(w.exportViewFigure(QStringLiteral("capacity"), dir.filePath(QStringLiteral("c.png")), 1280, 720, &error),
             qPrintable(error));
    QVERIFY2(w.openFiles({kData + QStringLiteral("postmortem/snapshot_one_device.pickle")}, &error), qPrintable(error));
    QVERIFY(w.exportFigureAction()->isEnabled());
    QCOMPARE(w.figureViews().value(0), QStringLiteral("snapshot"));  // what the centre shows comes first
    QVERIFY2(w.exportViewFigure(QStringLiteral("snapshot"), dir.filePath(QStringLiteral("s.png")), 1280, 720, &error),
             qPrintable(error));
    QVERIFY(QFileInfo(dir.filePath(QStringLiteral("s.png"))).size() > 5000);
  }

  // A lesson's runs start a fresh loss view; a run of no lesson (the form
  // edited) joins the lesson's curves.
  void aLessonDoesNotInheritAnotherLessonsLossCurves() {
    MainWindow w;
    w.setPersistSettings(false);
    LossView* loss = w.lossView();
    const auto liveRunOf = [&w](const QString& preset) {
      ShownRun run;
      run.kind = ShownRun::Kind::Live;
      run.preset = preset;
      w.inspection().show(std::move(run));
    };
    liveRunOf(QStringLiteral("ddp-basics"));
    loss->appendRun(QStringLiteral("ddp · 4 ranks"), {2.0, 1.5, 1.2});
    liveRunOf(QString());  // the form edited after the lesson
    QCOMPARE(loss->runCount(), 1);
    loss->appendRun(QStringLiteral("ddp · 4 ranks · lr 0.01"), {2.0, 1.4, 1.0});
    liveRunOf(QStringLiteral("ddp-basics"));  // the same lesson again
    QCOMPARE(loss->runCount(), 2);
    liveRunOf(QStringLiteral("zero-stages-compared"));
    QCOMPARE(loss->runCount(), 0);
  }

  // A PyTorch profiler trace records no unit's gather, compute and free: the
  // units view says so instead of drawing a row per module, each "root".
  void aProfilerTraceDrawsNoUnitRows() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    QString error;
    QVERIFY2(w.openTrace(kData + QStringLiteral("golden/fsdp-no-prefetch.trace.json"), &error), qPrintable(error));
    w.unitsView()->refresh(true);
    QVERIFY2(w.unitsView()->drawnUnitRows() > 0, "ShardScope's own FSDP trace draws its units");
    QVERIFY(w.unitsView()->emptyText().isEmpty());
    QVERIFY2(w.openTrace(kData + QStringLiteral("kineto/fsdp_job"), &error), qPrintable(error));
    w.unitsView()->refresh(true);
    QVERIFY(w.unitsView()->states().unitCount() > 0);  // the modules its memory samples name
    QCOMPARE(w.unitsView()->drawnUnitRows(), 0);
    QVERIFY2(w.unitsView()->emptyText().contains(QStringLiteral("does not record")), qPrintable(w.unitsView()->emptyText()));
  }
};

QTEST_MAIN(TestLectureSmalls)
#include "test_lecture_smalls.moc"
