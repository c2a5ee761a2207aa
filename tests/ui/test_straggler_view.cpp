// The straggler view in the window: the 4-rank, 2-host job with rank 2
// starting every collective 5 ms late (tests/data/kineto/straggler_job)
// opened as a folder fills the "stragglers" page: 8 collectives x 4 ranks,
// each cell the rank's wait in ms, rank 2 marked last in every column, the
// summary above, the timeline on node-a's clock; its figure exports. With no run,
// or one rank's file, the page says why not.
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "inspection.h"
#include "main_window.h"
#include "page.h"
#include "straggler_view.h"
#include "timeline_view.h"

using namespace shardscope;

class TestStragglerView : public QObject {
  Q_OBJECT

 private slots:
  void plantedStragglerDrawn() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    Page* page = w.pages().find(QStringLiteral("stragglers"));
    QVERIFY(page);
    QString error;
    QVERIFY2(w.openTrace(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/straggler_job"), &error),
             qPrintable(error));
    QCOMPARE(page->unavailable(), QString());
    auto* view = w.findChild<StragglerView*>();
    QVERIFY(view);
    QCOMPARE(view->table().ranks, (std::vector<int>{0, 1, 2, 3}));
    QCOMPARE(view->table().labels.size(), size_t(8));
    QCOMPARE(QString::fromStdString(view->table().labels[0]), QStringLiteral("all_reduce #0 · pg 0 · 4.00 MiB"));
    QCPColorMapData* cells = view->waitMap()->data();
    QCOMPARE(cells->keySize(), 8);
    QCOMPARE(cells->valueSize(), 4);
    for (int x = 0; x < 8; ++x) {
      QCOMPARE(cells->cell(x, 0), 5.0);  // rank 0 waits 5 ms
      QCOMPARE(cells->cell(x, 1), 4.99);
      QCOMPARE(cells->cell(x, 2), 0.0);  // the straggler never waits
      QCOMPARE(cells->cell(x, 3), 4.97);
    }
    QCOMPARE(view->waitMap()->dataRange().upper, 5.0);
    // The last arriver: row 2 (rank 2) in every column.
    QCOMPARE(view->lastArrivals()->dataCount(), 8);
    for (int x = 0; x < 8; ++x) {
      QCOMPARE(view->lastArrivals()->data()->at(x)->key, double(x));
      QCOMPARE(view->lastArrivals()->data()->at(x)->value, 2.0);
    }
    QVERIFY2(view->summaryText().contains(
                 QStringLiteral("rank 2 arrived last in 100.0 % of collectives (8 of 8), 4.970 ms median wait imposed")),
             qPrintable(view->summaryText()));
    // The timeline puts node-b on node-a's clock too: rank 2's first all-reduce starts 5 ms after
    // rank 0's, not 1.25 s + 5 ms (its host's clock as written).
    const auto firstAllReduce = [&](int rank) {
      for (const Event& e : w.inspection().store().events(rank))
        if (e.kind == EventKind::AllReduce) return e.begin_ns;
      return int64_t(-1);
    };
    QVERIFY(firstAllReduce(0) >= 0);
    QCOMPARE(firstAllReduce(2) - firstAllReduce(0), int64_t(5000000));
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("stragglers.png"));
    QVERIFY2(w.exportViewFigure(QStringLiteral("stragglers"), png, 1200, 600, &error), qPrintable(error));
    QVERIFY(QFileInfo(png).size() > 1000);
  }

  // Selecting one rank's collective outlines the same call on every rank and
  // names who entered it last (issue 32: the selected collective on every rank).
  void selectedCollectiveOnEveryRank() {
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY2(w.openTrace(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/straggler_job"), &error),
             qPrintable(error));
    const EventStore& store = w.inspection().store();
    int32_t index = -1;
    for (size_t i = 0; i < store.events(0).size() && index < 0; ++i)
      if (store.events(0)[i].kind == EventKind::AllReduce) index = static_cast<int32_t>(i);
    QVERIFY(index >= 0);
    TimelineView* timeline = w.timeline();
    timeline->selectEvent(0, index);
    const auto& peers = timeline->selectedPeers();
    QCOMPARE(peers.size(), size_t(4));
    const Event& mine = store.events(0)[static_cast<size_t>(index)];
    for (const CollectivePeer& p : peers) {
      const Event& e = store.events(p.rank)[static_cast<size_t>(p.index)];
      QCOMPARE(e.seq, mine.seq);
      QCOMPARE(e.group, mine.group);
    }
    // The selected outline, three dashed ones for its peers.
    QVERIFY(timeline->arrowCount() >= 4);
    const QString tip = timeline->eventTooltip(1, peers[1].index);
    QVERIFY2(tip.contains(QStringLiteral("the same collective on 4 ranks")) && tip.contains(QStringLiteral("rank 2 entered last")),
             qPrintable(tip));
    timeline->selectEvent(-1, -1);
    QVERIFY(timeline->selectedPeers().empty());
  }

  void unavailableWithoutAnImportedJob() {
    MainWindow w;
    w.setPersistSettings(false);
    Page* page = w.pages().find(QStringLiteral("stragglers"));
    QVERIFY(page);
    QCOMPARE(page->unavailable(), QStringLiteral("there is no run to draw: run a preset or open a trace first"));
    // One rank's file: nothing matched across ranks, and the page says so.
    QString error;
    QVERIFY2(w.openTrace(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/rank1_of_2.json"), &error),
             qPrintable(error));
    QVERIFY2(page->unavailable().startsWith(QStringLiteral("no collective of this trace was matched across two or more ranks")),
             qPrintable(page->unavailable()));
  }
};

QTEST_MAIN(TestStragglerView)
#include "test_straggler_view.moc"
