// The timeline's layout across a new run: once the store is reset or cleared,
// a layout that has not synced yet yields no boxes, markers or hits (its lanes
// index the old run's events), and after a sync it draws only the new run.
#include <QtTest>

#include "inspect/event_store.h"
#include "inspect/timeline_layout.h"

using namespace shardscope;

namespace {

Event box(int rank, int64_t begin, int64_t end, EventKind kind = EventKind::Forward) {
  Event e;
  e.rank = static_cast<int16_t>(rank);
  e.begin_ns = begin;
  e.end_ns = end;
  e.kind = kind;
  e.lane = Lane::Compute;
  e.block = 0;
  return e;
}

RunTrace meta(int ranks) {
  RunTrace t;
  t.ranks = ranks;
  return t;
}

// Many boxes per rank: more than any new run's first few events.
void fill(EventStore& store, int ranks, int per_rank) {
  for (int r = 0; r < ranks; ++r) {
    std::vector<Event> events;
    for (int i = 0; i < per_rank; ++i) events.push_back(box(r, i * 1000, i * 1000 + 900));
    store.appendEvents(r, events);
  }
}

void layoutAll(TimelineLayout& layout, int64_t end_ns) {
  layout.layout(0, static_cast<double>(end_ns), 1000, 0, static_cast<int>(layout.rows().size()) - 1);
}

}  // namespace

class TestTimelineLayoutReset : public QObject {
  Q_OBJECT
 private slots:
  void resetStoreYieldsNothingUntilSync() {
    EventStore store;
    store.reset(meta(4));
    fill(store, 4, 200);
    TimelineLayout layout;
    layout.sync(store);
    layoutAll(layout, 200'000);
    QVERIFY(!layout.items().empty());
    QVERIFY(layout.current(store));

    // A new, smaller run: fewer ranks, fewer events. Not synced yet.
    store.reset(meta(1));
    store.appendEvents(0, std::vector<Event>{box(0, 0, 500)});
    QVERIFY(!layout.current(store));
    layoutAll(layout, 200'000);
    QCOMPARE(layout.items().size(), size_t(0));
    QCOMPARE(layout.markers().size(), size_t(0));
    QVERIFY(layout.itemAt(0, 10) == nullptr);
    QVERIFY(layout.markerAt(0, 10, 5) == nullptr);

    layout.sync(store);
    QVERIFY(layout.current(store));
    layoutAll(layout, 1000);
    QCOMPARE(layout.items().size(), size_t(1));
    QCOMPARE(layout.items()[0].event, 0);
  }

  void clearedStoreYieldsNothing() {
    EventStore store;
    store.reset(meta(2));
    fill(store, 2, 50);
    TimelineLayout layout;
    layout.sync(store);
    layoutAll(layout, 50'000);
    QVERIFY(!layout.items().empty());
    store.clear();
    layoutAll(layout, 50'000);
    QVERIFY(layout.items().empty());
    QCOMPARE(layout.rowItems(0), (std::pair<size_t, size_t>(0, 0)));
  }
};

QTEST_GUILESS_MAIN(TestTimelineLayoutReset)
#include "test_timeline_layout_reset.moc"
