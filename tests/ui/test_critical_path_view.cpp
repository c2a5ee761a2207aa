// The critical-path page in the window: the two-rank job in which rank 1
// starts the all-reduce 30 us late (tests/data/kineto/critical_path/late_rank,
// worked out in tests/core/test_critical_path.cpp) opened as a folder: a bar per
// rank split by category (rank 0: compute 20, communication 20, launch/CPU 28,
// idle 2, waiting 30 us; rank 1: 50, 20, 28, 2, 0), rank 0's path as 9 rows,
// the summary above, its figure. A registered page: its "?", and why not for
// a ShardScope run or a trace without ProfilerStep spans.
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>
#include <qcustomplot.h>

#include "critical_path_view.h"
#include "kineto/critical_path.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_index.h"
#include "kineto/trace_set.h"
#include "main_window.h"
#include "page.h"
#include "timeline_view.h"

using namespace shardscope;
using kineto::PathCategory;

namespace {
const QString kData = QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/");
}

class TestCriticalPathView : public QObject {
  Q_OBJECT

 private slots:
  void lateRankDrawn() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    Page* page = w.pages().find(QStringLiteral("critical-path"));
    QVERIFY(page);
    QVERIFY(w.findChild<QToolButton*>(QStringLiteral("helpButton_critical-path")));
    QCOMPARE(page->unavailable(), QStringLiteral("there is no run to draw: run a preset or open a trace first"));
    QString error;
    QVERIFY2(w.openTrace(kData + QStringLiteral("kineto/critical_path/late_rank"), &error), qPrintable(error));
    QCOMPARE(page->unavailable(), QString());
    auto* view = w.findChild<CriticalPathView*>();
    QVERIFY(view);
    const double want[2][5] = {{20, 20, 28, 2, 30}, {50, 20, 28, 2, 0}};
    for (int c = 0; c < 5; ++c) {
      QCPBars* bars = view->bars(c);
      QCOMPARE(bars->data()->size(), 2);
      for (int r = 0; r < 2; ++r) {
        QCOMPARE(bars->data()->at(r)->key, double(r));
        QCOMPARE(bars->data()->at(r)->value, want[r][c]);
      }
    }
    QCOMPARE(view->bars(int(PathCategory::WaitingForRank))->name(), QStringLiteral("waiting for another rank"));
    QTableWidget* table = view->segmentTable();
    QCOMPARE(table->rowCount(), 9);
    const QStringList row5 = {QStringLiteral("30.000"), QStringLiteral("30.000"),
                              QStringLiteral("waiting for another rank (rank 1)"), QStringLiteral("0"),
                              QStringLiteral("kernel"), QStringLiteral("ncclDevKernel_AllReduce_Sum_f32_RING_LL")};
    for (int c = 0; c < 6; ++c) QCOMPARE(table->item(5, c)->text(), row5[c]);
    QCOMPARE(table->item(6, 2)->text(), QStringLiteral("communication"));
    QCOMPARE(table->item(6, 0)->text(), QStringLiteral("60.000"));
    QVERIFY2(view->summaryText().contains(QStringLiteral("critical path of ProfilerStep#1 (the last step every rank "
                                                         "analysed), rank 0 (its step ends last): 100.000 us")),
             qPrintable(view->summaryText()));
    QVERIFY(!view->summaryText().contains(QStringLiteral("longest of its")));  // the table lists them
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("critical-path.png"));
    QVERIFY2(w.exportViewFigure(QStringLiteral("critical-path"), png, 1200, 600, &error), qPrintable(error));
    QVERIFY(QFileInfo(png).size() > 1000);

    // ShardScope's own trace: nothing to follow, and the view empties.
    QVERIFY2(w.openTrace(kData + QStringLiteral("golden/ddp.trace.json"), &error), qPrintable(error));
    QVERIFY2(page->unavailable().startsWith(QStringLiteral("the critical path reads an imported PyTorch")),
             qPrintable(page->unavailable()));
    QCOMPARE(view->segmentTable()->rowCount(), 0);
    QCOMPARE(view->bars(0)->data()->size(), 0);
  }

  // A trace without ProfilerStep spans: the page says why, in core's words.
  // Key P on the timeline outlines the shown rank's path: exactly core's ops
  // (kineto::criticalPathOps of analyze's path) that the timeline draws as
  // spans, i.e. all but the ProfilerStep op, whose time is its step band.
  void timelineHighlightsThePath() {
    const std::string job = (kData + QStringLiteral("kineto/critical_path/real_shaped")).toStdString();
    const kineto::TraceSet set = kineto::loadTraceSet({job});
    const kineto::JobAnalysis analysis = kineto::analyzeTraceSet(set, {});
    const kineto::RankCriticalPath* shown = analysis.critical_path.shownPath();
    QVERIFY(shown);
    QCOMPARE(shown->rank, 3);
    std::vector<int64_t> want = kineto::criticalPathOps(analysis.critical_path);
    size_t k = 0;
    while (k < set.ranks.size() && set.ranks[k].rank != 3) ++k;
    QVERIFY(k < set.ranks.size());
    std::erase_if(want, [&](int64_t op) { return kineto::profilerStepNumber(set.ranks[k].str(set.ranks[k].events[size_t(op)].name)) >= 0; });
    QCOMPARE(want.size(), size_t(10));  // linear, addmm, 2 launches, 2 gemms, the all-reduce, the sync, the optimizer and its kernel

    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    QString error;
    QVERIFY2(w.openTrace(QString::fromStdString(job), &error), qPrintable(error));
    TimelineView* timeline = w.timeline();
    QVERIFY(timeline->hasCriticalPath());
    QVERIFY(!timeline->criticalPathShown());
    QVERIFY(timeline->highlightedOps().empty());
    QTest::keyClick(timeline, Qt::Key_P);
    QVERIFY(timeline->criticalPathShown());
    QCOMPARE(timeline->highlightedOps(), want);
    QTest::keyClick(timeline, Qt::Key_P);
    QVERIFY(timeline->highlightedOps().empty());
    // A trace without ProfilerStep spans has no critical path: nothing to outline.
    QVERIFY2(w.openTrace(kData + QStringLiteral("kineto/no_rank.json"), &error), qPrintable(error));
    timeline->setCriticalPathShown(true);
    QVERIFY(timeline->highlightedOps().empty());
  }

  void noStepSaysWhy() {
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY2(w.openTrace(kData + QStringLiteral("kineto/no_rank.json"), &error), qPrintable(error));
    Page* page = w.pages().find(QStringLiteral("critical-path"));
    QVERIFY2(page->unavailable().startsWith(QStringLiteral("no critical path: the traces have no ProfilerStep#N")),
             qPrintable(page->unavailable()));
  }
};

QTEST_MAIN(TestCriticalPathView)
#include "test_critical_path_view.moc"
