// A repaint of the timeline between a new run's store reset and the view's
// next refresh (a tab switch or resize while a run starts) draws nothing from
// the old run: no boxes indexing its cleared events (issue 31's crash in
// TimelinePlottable::drawBoxes).
#include <QtTest>

#include "inspect/event_store.h"
#include "timeline_plottable.h"
#include "timeline_view.h"

using namespace shardscope;

namespace {

TimelinePlottable* plottableOf(TimelineView& view) {
  for (int i = 0; i < view.plot()->plottableCount(); ++i)
    if (auto* p = qobject_cast<TimelinePlottable*>(view.plot()->plottable(i))) return p;
  return nullptr;
}

void fill(EventStore& store, int ranks, int per_rank) {
  RunTrace meta;
  meta.ranks = ranks;
  store.reset(meta);
  for (int r = 0; r < ranks; ++r) {
    std::vector<Event> events;
    for (int i = 0; i < per_rank; ++i) {
      Event e;
      e.rank = static_cast<int16_t>(r);
      e.begin_ns = i * 100'000;
      e.end_ns = e.begin_ns + 90'000;
      e.lane = Lane::Compute;
      e.kind = EventKind::Forward;
      e.block = 0;
      events.push_back(e);
    }
    store.appendEvents(r, events);
  }
}

}  // namespace

class TestRunRestartStress : public QObject {
  Q_OBJECT
 private slots:
  void repaintAfterResetDrawsNothingOld_data() {
    QTest::addColumn<int>("perRank");
    // 300 boxes a rank fold (narrower than 3 px); 20 are drawn one by one,
    // each read from the store for its label and waiting time: a stale index
    // there is a use-after-free under ASan (the store frees the old run's events).
    QTest::newRow("folded boxes") << 300;
    QTest::newRow("boxes read from the store") << 20;
  }

  void repaintAfterResetDrawsNothingOld() {
    QFETCH(int, perRank);
    EventStore store;
    TimelineView view(&store);
    view.resize(900, 500);
    TimelinePlottable* plottable = plottableOf(view);
    QVERIFY(plottable);
    for (int round = 0; round < 40; ++round) {
      fill(store, 8, perRank);
      view.refresh();
      view.resize(round % 2 ? 900 : 700, 500);
      view.grab();
      QVERIFY(plottable->lastItemCount() > 0);
      // A new, smaller run starts: the store is reset before the view syncs.
      fill(store, 1 + round % 3, 2);
      view.resize(round % 2 ? 800 : 1000, 450);
      view.grab();  // the repaint a tab switch or resize forces
      QCOMPARE(plottable->lastItemCount(), size_t(0));
      view.refresh();
      view.grab();
    }
  }
};

QTEST_MAIN(TestRunRestartStress)
#include "test_run_restart_stress.moc"
