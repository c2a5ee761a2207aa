// Selecting on the timeline. Dependency arrows: in a real FSDP run a forward
// op links back to the all-gather of its unit and a backward op forward to
// the reduce-scatter it launches; in DDP a bucket's all-reduce links back to
// the bucket's ready marker; clicking finds the op under the mouse. Time
// ranges: Shift+drag selects one, Z zooms to it, a figure covers exactly it.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "inspect/dependency_links.h"
#include "engine_bridge.h"
#include "inspect/event_store.h"
#include "inspect/timeline_layout.h"
#include "timeline_view.h"

using namespace shardscope;

namespace {

RunConfig smallRun(const std::string& strategy) {
  RunConfig c;
  c.strategy = *parseStrategy(strategy);
  c.ranks = 2;
  c.model.layers = 3;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 4;
  c.steps = 1;
  c.clock = ClockKind::Modeled;
  c.timeout_ms = 20000;
  if (strategy == "ddp") {
    c.bucket_mb = 0.02;  // several buckets
    c.first_bucket_mb = 0.01;
  }
  return c;
}

bool runInto(EventStore& store, const RunConfig& config) {
  EngineBridge bridge(&store);
  QSignalSpy finished(&bridge, &EngineBridge::runFinished);
  bridge.start(config);
  return finished.wait(120000) && finished.at(0).at(0).toBool();
}

int32_t firstOf(const EventStore& store, int rank, EventKind kind, int skip = 0) {
  const auto& events = store.events(rank);
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].kind == kind && skip-- == 0) return static_cast<int32_t>(i);
  return -1;
}

bool linksFrom(const EventStore& store, int rank, int32_t index, EventKind from_kind, bool incoming) {
  for (const DependencyLink& l : dependencyLinks(store, rank, index)) {
    const int32_t other = incoming ? l.from : l.to;
    if ((incoming ? l.to : l.from) == index && store.events(rank)[size_t(other)].kind == from_kind) return true;
  }
  return false;
}

}  // namespace

class TestTimelineSelection : public QObject {
  Q_OBJECT
 private slots:
  void fsdpComputeWaitsOnItsGatherAndLaunchesItsReduce() {
    EventStore store;
    QVERIFY(runInto(store, smallRun("zero3")));
    // The second forward is block 0's unit: it waits for that unit's all-gather.
    const int32_t fwd = firstOf(store, 0, EventKind::Forward, 1);
    QVERIFY(fwd >= 0);
    QVERIFY(linksFrom(store, 0, fwd, EventKind::AllGather, true));
    const int32_t bwd = firstOf(store, 0, EventKind::Backward, 1);
    QVERIFY(bwd >= 0);
    QVERIFY2(linksFrom(store, 0, bwd, EventKind::ReduceScatter, false) ||
                 linksFrom(store, 0, firstOf(store, 0, EventKind::Backward, 0), EventKind::ReduceScatter, false),
             "a backward op launches its unit's reduce-scatter");
    // Links never cross ranks or point at themselves.
    for (const DependencyLink& l : dependencyLinks(store, 0, fwd)) QVERIFY(l.from != l.to);

    TimelineView view(&store);
    view.resize(1400, 500);
    view.show();
    view.refresh();
    view.selectEvent(0, fwd);
    QVERIFY(view.selectedEvent().has_value());
    QVERIFY(view.arrowCount() >= 2);  // the outline and at least one arrow

    // Clicking: zoom to the op and find it under its own centre.
    const Event& e = store.events(0)[size_t(fwd)];
    QCustomPlot* plot = view.plot();
    const double b = double(e.begin_ns) * 1e-6, en = double(e.end_ns) * 1e-6;
    plot->xAxis->setRange(b - (en - b), en + (en - b));
    plot->replot(QCustomPlot::rpImmediateRefresh);
    const int row = view.layout().rowOf(0, e.lane);
    QVERIFY(row >= 0);
    const QPoint centre(int(plot->xAxis->coordToPixel((b + en) / 2)),
                        int(plot->yAxis->coordToPixel(view.layout().rows()[size_t(row)].center())));
    const auto hit = view.eventAt(centre);
    QVERIFY(hit.has_value());
    QCOMPARE(hit->first, 0);
    QCOMPARE(hit->second, fwd);

    view.selectEvent(-1, -1);
    QCOMPARE(view.arrowCount(), 0);
  }

  void ddpAllReduceLinksToItsBucketReady() {
    EventStore store;
    QVERIFY(runInto(store, smallRun("ddp")));
    int checked = 0;
    const auto& events = store.events(1);
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].kind != EventKind::AllReduce) continue;
      QVERIFY2(linksFrom(store, 1, int32_t(i), EventKind::BucketReady, true),
               qPrintable(QStringLiteral("all-reduce of bucket %1 has no ready → launch link").arg(events[i].bucket)));
      ++checked;
    }
    QVERIFY(checked >= 2);
  }

  void shiftDragSelectsATimeRange() {
    EventStore store;
    QVERIFY(runInto(store, smallRun("zero3")));
    TimelineView view(&store);
    view.resize(1400, 500);
    view.show();
    view.refresh();
    view.zoomToFit();
    QCustomPlot* plot = view.plot();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    const QRect rect = plot->axisRect()->rect();
    const QPoint a(rect.left() + rect.width() / 4, rect.center().y());
    const QPoint b(rect.left() + rect.width() / 2, rect.center().y());
    const double t_a = plot->xAxis->pixelToCoord(a.x()) * 1e6, t_b = plot->xAxis->pixelToCoord(b.x()) * 1e6;
    QSignalSpy changed(&view, &TimelineView::rangeChanged);
    // Real mouse events through the plot, as a user's drag arrives.
    QMouseEvent press(QEvent::MouseButtonPress, a, plot->mapToGlobal(a), Qt::LeftButton, Qt::LeftButton, Qt::ShiftModifier);
    QMouseEvent move(QEvent::MouseMove, b, plot->mapToGlobal(b), Qt::NoButton, Qt::LeftButton, Qt::ShiftModifier);
    QMouseEvent release(QEvent::MouseButtonRelease, b, plot->mapToGlobal(b), Qt::LeftButton, Qt::NoButton, Qt::ShiftModifier);
    QApplication::sendEvent(plot, &press);
    QApplication::sendEvent(plot, &move);
    QApplication::sendEvent(plot, &release);
    QCOMPARE(changed.count(), 1);
    const auto range = view.selectedRange();
    QVERIFY(range.has_value());
    const double two_px_ns = 2.0 * (t_b - t_a) / (b.x() - a.x()) + 1.0;  // rounding to whole ns
    QVERIFY(std::abs(double(range->first) - t_a) < two_px_ns);
    QVERIFY(std::abs(double(range->second) - t_b) < two_px_ns);
    QVERIFY(plot->xAxis->range().lower < t_a * 1e-6);  // a drag with Shift selects; it does not pan

    view.zoomToSelection();
    QCOMPARE(plot->xAxis->range().lower, double(range->first) * 1e-6);
    QCOMPARE(plot->xAxis->range().upper, double(range->second) * 1e-6);

    // The figure covers the selection; the view keeps its own range and band.
    view.zoomToFit();
    const QCPRange before = plot->xAxis->range();
    QTemporaryDir dir;
    QString error;
    QVERIFY2(view.exportFigure(dir.filePath("range.png"), 800, 400, &error), qPrintable(error));
    QCOMPARE(plot->xAxis->range().lower, before.lower);
    QCOMPARE(view.selectedRange(), range);

    view.setSelectedRange(std::nullopt);
    QVERIFY(!view.selectedRange());
  }
};

QTEST_MAIN(TestTimelineSelection)
#include "test_timeline_selection.moc"
