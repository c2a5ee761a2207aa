// UI layer tests, offscreen: the bridge drains a real run into the store, the
// timeline folds a million events into a bounded number of draw items, the
// memory bars reproduce DDP's 16 bytes/param, the experiment form refuses what
// the CLI refuses with the same message, and figures export at the asked size.
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>
#include <numeric>
#include <set>

#include "analysis/formulas.h"
#include "engine/run.h"
#include "engine_bridge.h"
#include "inspect/event_store.h"
#include "experiment_panel.h"
#include "main_window.h"
#include "memory/memory_ledger.h"
#include "memory_view.h"
#include "inspect/timeline_layout.h"
#include "timeline_view.h"

using namespace shardscope;

namespace {

RunConfig tinyConfig() {
  RunConfig c;
  c.ranks = 2;
  c.model.layers = 2;
  c.model.hidden = 32;
  c.batch = 4;
  c.steps = 2;
  c.timeout_ms = 20000;  // CI machines are slow and shared: no false hang reports
  return c;
}

// rows × lanes of back-to-back 100 ns compute boxes, `per_rank` per rank.
void fillSynthetic(EventStore& store, int ranks, int per_rank) {
  RunTrace meta;
  meta.strategy = "ddp";
  meta.ranks = ranks;
  meta.block_names = {"input", "block0", "head"};
  store.reset(meta);
  std::vector<Event> events(static_cast<size_t>(per_rank));
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < per_rank; ++i) {
      Event& e = events[static_cast<size_t>(i)];
      e.begin_ns = int64_t{100} * i;
      e.end_ns = e.begin_ns + 90;
      e.rank = static_cast<int16_t>(r);
      e.lane = Lane::Compute;
      e.kind = i % 2 ? EventKind::Backward : EventKind::Forward;
      e.block = static_cast<int16_t>(i % 3);
      e.step = 0;
    }
    store.appendEvents(r, events);
  }
}

int countKind(const std::vector<Event>& events, EventKind kind) {
  return static_cast<int>(std::count_if(events.begin(), events.end(), [&](const Event& e) { return e.kind == kind; }));
}

bool nonBlank(const QImage& image) {
  std::set<QRgb> colours;
  for (int y = 0; y < image.height(); y += 3)
    for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
  return colours.size() > 8;
}

}  // namespace

class TestUi : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // QSettings stay out of the user's config
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_ui"));
  }

  void bridgeDrainsRealRun() {
    EventStore store;
    EngineBridge bridge(&store);
    QSignalSpy appended(&bridge, &EngineBridge::eventsAppended);
    QSignalSpy finished(&bridge, &EngineBridge::runFinished);
    const RunConfig config = tinyConfig();
    bridge.start(config);
    QVERIFY(bridge.isRunning());
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.count(), 1);
    QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));
    QVERIFY(appended.count() >= 1);
    QVERIFY(!bridge.isRunning());

    QCOMPARE(store.rankCount(), 2);
    QCOMPARE(store.meta().strategy, std::string("ddp"));
    QVERIFY(store.meta().params > 0);
    QCOMPARE(store.losses().size(), size_t{2});
    const int segments = config.model.layers + 2;
    for (int r = 0; r < 2; ++r) {
      const auto& events = store.events(r);
      for (const Event& e : events) QCOMPARE(static_cast<int>(e.rank), r);
      QCOMPARE(countKind(events, EventKind::Forward), segments * config.steps);
      QCOMPARE(countKind(events, EventKind::Backward), segments * config.steps);
      QVERIFY(countKind(events, EventKind::AllReduce) >= config.steps);
      QCOMPARE(countKind(events, EventKind::StepBegin), config.steps);
    }
    QVERIFY(store.endNs() > store.beginNs());
  }

  void bridgeShowsModeledRunInModeledOrder() {
    EventStore store;
    EngineBridge bridge(&store);
    QSignalSpy finished(&bridge, &EngineBridge::runFinished);
    RunConfig config = tinyConfig();
    config.clock = ClockKind::Modeled;
    bridge.start(config);
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));
    QVERIFY(store.modeledClock());
    QCOMPARE(store.losses().size(), size_t{2});
    for (int r = 0; r < store.rankCount(); ++r) {
      const auto& events = store.events(r);
      QVERIFY(countKind(events, EventKind::Forward) > 0);
      QVERIFY(std::is_sorted(events.begin(), events.end(),
                             [](const Event& a, const Event& b) { return a.begin_ns < b.begin_ns; }));
    }
  }

  void bridgeCancelReportsStop() {
    EventStore store;
    EngineBridge bridge(&store);
    QSignalSpy finished(&bridge, &EngineBridge::runFinished);
    RunConfig config = tinyConfig();
    config.steps = 100000;  // long enough to still be running when cancelled
    bridge.start(config);
    QTRY_VERIFY_WITH_TIMEOUT(bridge.stepsDone() >= 1, 60000);
    bridge.cancel();
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.at(0).at(0).toBool(), false);
    QVERIFY(finished.at(0).at(1).toString().contains(QStringLiteral("stopped")));
    QVERIFY(store.losses().size() < size_t{100000});
  }

  void badConfigThrowsBeforeStarting() {
    EventStore store;
    EngineBridge bridge(&store);
    RunConfig config = tinyConfig();
    config.batch = 3;
    QVERIFY_THROWS_EXCEPTION(ConfigError, bridge.start(config));
    QVERIFY(!bridge.hasRun());
  }

  void layoutFoldsMillionEvents() {
    EventStore store;
    fillSynthetic(store, 2, 500'000);
    TimelineLayout layout;
    QVERIFY(layout.sync(store));
    QCOMPARE(layout.rows().size(), size_t{2});  // only compute has events
    const double width = 1000;
    const int rows = static_cast<int>(layout.rows().size());
    layout.layout(0, 50e6, width, 0, rows - 1);
    const size_t bound = static_cast<size_t>(rows * (width / TimelineLayout::kMinBoxPx + 2));
    QVERIFY2(layout.items().size() <= bound, qPrintable(QString::number(layout.items().size())));
    // Folding loses nothing: the folds of a row account for every event in view.
    const int row = layout.rowOf(0, Lane::Compute);
    const auto [first, last] = layout.rowItems(row);
    int64_t covered = 0;
    for (size_t k = first; k < last; ++k) covered += layout.items()[k].folded;
    QCOMPARE(covered, int64_t{500'000});
    QVERIFY(layout.items()[first].folded > 1);
    // Zoomed in to 20 boxes (2 µs over 1000 px), every box stands alone.
    layout.layout(1'000'000, 1'002'000, width, row, row);
    const auto [a, b] = layout.rowItems(row);
    QVERIFY(b - a >= 20 && b - a <= 21);
    for (size_t k = a; k < b; ++k) QCOMPARE(layout.items()[k].folded, 1);

    // One all-reduce on rank 1 gives every rank a comm row, so groups line up.
    Event ar;
    ar.begin_ns = 10;
    ar.end_ns = 20;
    ar.lane = Lane::Comm;
    ar.kind = EventKind::AllReduce;
    store.appendEvents(1, std::span<const Event>(&ar, 1));
    QVERIFY(layout.sync(store));
    QCOMPARE(layout.rows().size(), size_t{4});
    QCOMPARE(layout.rowOf(0, Lane::Comm), 1);
    QCOMPARE(layout.rowOf(1, Lane::Comm), 3);
    QCOMPARE(layout.rowOf(1, Lane::Host), -1);
  }

  void timelineViewBoundsDrawItems() {
    EventStore store;
    fillSynthetic(store, 2, 500'000);
    TimelineView view(&store);
    view.resize(1200, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.refresh();
    view.zoomToFit();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const int width = view.plot()->axisRect()->width();
    const size_t rows = view.layout().rows().size();
    QVERIFY(width > 100);
    QVERIFY(view.drawItemCount() > 0);
    QVERIFY2(view.drawItemCount() <= rows * (static_cast<size_t>(width) / 3 + 2),
             qPrintable(QStringLiteral("%1 items for %2 px × %3 rows").arg(view.drawItemCount()).arg(width).arg(rows)));
    // Zoom in on two boxes: the tooltip names the op under the mouse.
    view.plot()->xAxis->setRange(1.0, 1.0 + 200e-6);  // ms: 200 ns
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QRect rect = view.plot()->axisRect()->rect();
    const auto& compute = view.layout().rows()[static_cast<size_t>(view.layout().rowOf(0, Lane::Compute))];
    const int y = static_cast<int>(view.plot()->yAxis->coordToPixel(compute.center()));
    const int x = static_cast<int>(view.plot()->xAxis->coordToPixel(1.0 + 40e-6));
    QVERIFY(rect.contains(x, y));
    const QString tip = view.tooltipAt(QPoint(x, y));
    QVERIFY2(tip.contains(QStringLiteral("forward")) && tip.contains(QStringLiteral("90 ns")), qPrintable(tip));
  }

  void emptyTimelinePaintsAndManyRanksScroll() {
    EventStore store;
    TimelineView view(&store);
    view.resize(900, 420);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);  // no rows: nothing to draw, no crash
    QCOMPARE(view.drawItemCount(), size_t{0});
    QVERIFY(!view.cursorTime());

    fillSynthetic(store, 32, 100);  // 32 ranks × 3 rows cannot fit 420 px legibly
    view.refresh();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    auto* scroll = view.findChild<QScrollBar*>();
    QVERIFY(scroll && scroll->isVisible());
    const QCPRange shown = view.plot()->yAxis->range();
    QVERIFY(shown.size() < view.layout().totalHeight());
    QVERIFY(view.plot()->axisRect()->height() / shown.size() >= 19.5);  // rows stay legible
    scroll->setValue(scroll->maximum());
    QCOMPARE(view.plot()->yAxis->range().upper, view.layout().totalHeight());
  }

  void tooltipShowsCollectiveBandwidth() {
    EventStore store;
    RunTrace meta;
    meta.strategy = "ddp";
    meta.ranks = 4;
    store.reset(meta);
    Event ar;
    ar.begin_ns = 0;
    ar.end_ns = 1'000'000;  // 1 ms
    ar.bytes = 4'000'000;   // 4 MB in 1 ms: algbw 4 GB/s, busbw 4 × 2·3/4 = 6 GB/s
    ar.lane = Lane::Comm;
    ar.kind = EventKind::AllReduce;
    ar.bucket = 1;
    ar.rank = 0;
    store.appendEvents(0, std::span<const Event>(&ar, 1));
    TimelineView view(&store);
    view.resize(900, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.refresh();
    view.zoomToFit();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const auto& comm = view.layout().rows()[static_cast<size_t>(view.layout().rowOf(0, Lane::Comm))];
    const int y = static_cast<int>(view.plot()->yAxis->coordToPixel(comm.center()));
    const int x = static_cast<int>(view.plot()->xAxis->coordToPixel(0.5));
    const QString tip = view.tooltipAt(QPoint(x, y));
    QVERIFY2(tip.contains(QStringLiteral("all-reduce · bucket 1")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("4.00 GB/s")) && tip.contains(QStringLiteral("6.00 GB/s")), qPrintable(tip));

    // Half the span waiting for a peer: bandwidth counts the transfer only.
    store.reset(meta);
    ar.value = 500'000;
    store.appendEvents(0, std::span<const Event>(&ar, 1));
    view.refresh();
    view.zoomToFit();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QString waited = view.tooltipAt(QPoint(x, y));
    QVERIFY2(waited.contains(QStringLiteral("waiting for peers 500.0 µs")), qPrintable(waited));
    QVERIFY2(waited.contains(QStringLiteral("8.00 GB/s")), qPrintable(waited));
  }

  // Activation checkpointing's recompute span: a forward event flagged
  // kEventRecompute, named as a recompute in its tooltip.
  void tooltipNamesARecompute() {
    EventStore store;
    RunTrace meta;
    meta.strategy = "ddp";
    meta.ranks = 1;
    store.reset(meta);
    Event f;
    f.begin_ns = 0;
    f.end_ns = 1'000'000;
    f.lane = Lane::Compute;
    f.kind = EventKind::Forward;
    f.block = 1;
    f.rank = 0;
    f.flags = kEventRecompute;
    store.appendEvents(0, std::span<const Event>(&f, 1));
    TimelineView view(&store);
    view.resize(900, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.refresh();
    view.zoomToFit();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const auto& compute = view.layout().rows()[static_cast<size_t>(view.layout().rowOf(0, Lane::Compute))];
    const QPoint at(static_cast<int>(view.plot()->xAxis->coordToPixel(0.5)),
                    static_cast<int>(view.plot()->yAxis->coordToPixel(compute.center())));
    QVERIFY2(view.tooltipAt(at).contains(QStringLiteral("recompute (forward in backward)")), qPrintable(view.tooltipAt(at)));
    store.reset(meta);
    f.flags = 0;  // a plain forward stays a forward
    store.appendEvents(0, std::span<const Event>(&f, 1));
    view.refresh();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY2(!view.tooltipAt(at).contains(QStringLiteral("recompute")), qPrintable(view.tooltipAt(at)));
  }

  // Ranks of another machine (a multi-node measured run): their times are
  // node 0's clock as estimated at rendezvous, and the tooltip says within what.
  void tooltipStatesAnotherNodesClock() {
    EventStore store;
    RunTrace meta;
    meta.strategy = "ddp";
    meta.ranks = 2;
    meta.node_clocks.push_back({1, 1, 1, 44'100, 16});  // node 1: rank 1, ±44.1 us
    store.reset(meta);
    for (int r = 0; r < 2; ++r) {
      Event f;
      f.end_ns = 1'000'000;
      f.lane = Lane::Compute;
      f.kind = EventKind::Forward;
      f.block = 0;
      f.rank = static_cast<int16_t>(r);
      store.appendEvents(r, std::span<const Event>(&f, 1));
    }
    TimelineView view(&store);
    view.resize(900, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.refresh();
    view.zoomToFit();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const auto tipOf = [&](int rank) {
      const auto& row = view.layout().rows()[static_cast<size_t>(view.layout().rowOf(rank, Lane::Compute))];
      return view.tooltipAt(QPoint(static_cast<int>(view.plot()->xAxis->coordToPixel(0.5)),
                                   static_cast<int>(view.plot()->yAxis->coordToPixel(row.center()))));
    };
    QVERIFY2(tipOf(1).contains(QStringLiteral("node 1's clock, aligned to node 0's within ±44.1")), qPrintable(tipOf(1)));
    QVERIFY2(tipOf(1).contains(QStringLiteral("16 pings")), qPrintable(tipOf(1)));
    QVERIFY2(tipOf(0).contains(QStringLiteral("forward")) && !tipOf(0).contains(QStringLiteral("clock")), qPrintable(tipOf(0)));
  }

  void memoryBarsShowSixteenBytesPerParamForDdp() {
    Run run(tinyConfig());
    const RunResult result = run.execute();
    EventStore store;
    store.setFromTrace(run.trace());
    MemoryView view(&store);
    view.refresh(true);
    const double n = static_cast<double>(result.params);
    QCOMPARE(view.predictedBytes(), expectedBytesPerParam(formulaConfig(Strategy::Ddp, 2)) * n);
    QCOMPARE(view.predictedBytes(), 16.0 * n);
    // Read back what the plot holds: the model-state segments of each rank's stack.
    for (int r = 0; r < 2; ++r) {
      double state_mib = 0;
      for (int i = 0; i < view.barsPlot()->plottableCount(); ++i) {
        auto* bars = qobject_cast<QCPBars*>(view.barsPlot()->plottable(i));
        QVERIFY(bars);
        bool is_state = false;
        for (int c = 0; c < kCategoryCount; ++c)
          if (bars->name() == QString::fromLatin1(categoryName(static_cast<Category>(c)).data()))
            is_state = isModelState(static_cast<Category>(c));
        if (!is_state) continue;
        QVERIFY(bars->data()->size() == 2);
        state_mib += (bars->data()->begin() + r)->value;
      }
      QCOMPARE(qRound64(state_mib * 1024.0 * 1024.0), static_cast<qint64>(16 * result.params));
      QCOMPARE(result.ranks[static_cast<size_t>(r)].ledger.model_state_peak, int64_t{16} * result.params);
    }
    // Before the first allocation the cursor shows an empty ledger.
    view.setCursorTime(store.beginNs() - 1);
    const auto before = view.barBytes(0);
    QCOMPARE(std::accumulate(before.begin(), before.end(), int64_t{0}), int64_t{0});
  }

  void experimentPanelRefusesWhatTheCliRefuses() {
    ExperimentPanel panel;
    QVERIFY(panel.isValid());
    QVERIFY(panel.runButton()->isEnabled());
    panel.findChild<QSpinBox*>(QStringLiteral("ranks"))->setValue(4);
    panel.findChild<QSpinBox*>(QStringLiteral("batch"))->setValue(30);  // as a user typing
    QVERIFY(!panel.isValid());
    QVERIFY(!panel.runButton()->isEnabled());
    auto* label = panel.findChild<QLabel*>(QStringLiteral("configError"));
    QVERIFY(label);
    QCOMPARE(label->text(), panel.errorText());
    // Explained next to the field it is about: right under "global batch", in its group.
    auto* batch = panel.findChild<QSpinBox*>(QStringLiteral("batch"));
    QCOMPARE(panel.errorField(), static_cast<QWidget*>(batch));
    QCOMPARE(label->parentWidget(), batch->parentWidget());

    QProcess cli;
    cli.start(QStringLiteral(SHARDSCOPE_CLI_PATH), {"run", "--ranks", "4", "--batch", "30"});
    QVERIFY(cli.waitForFinished(30000));
    QCOMPARE(cli.exitCode(), 2);
    const QString cli_error = QString::fromUtf8(cli.readAllStandardError()).trimmed();
    QCOMPARE(cli_error, QStringLiteral("error: ") + panel.errorText());
    QVERIFY(panel.errorText().contains(QStringLiteral("--batch 30")));

    panel.findChild<QSpinBox*>(QStringLiteral("batch"))->setValue(32);
    QVERIFY(panel.isValid());
    QVERIFY(!panel.errorField());

    // Tensor parallelism has its row, checked like --tp (T divides P).
    auto* tp = panel.findChild<QSpinBox*>(QStringLiteral("tp"));
    QVERIFY(tp);
    tp->setValue(3);
    QVERIFY(!panel.isValid());
    QCOMPARE(panel.errorField(), static_cast<QWidget*>(tp));
    QProcess tp_cli;
    tp_cli.start(QStringLiteral(SHARDSCOPE_CLI_PATH), {"run", "--ranks", "4", "--tp", "3"});
    QVERIFY(tp_cli.waitForFinished(30000));
    QCOMPARE(QString::fromUtf8(tp_cli.readAllStandardError()).trimmed(), QStringLiteral("error: ") + panel.errorText());
    tp->setValue(2);
    QVERIFY2(panel.isValid(), qPrintable(panel.errorText()));
    QCOMPARE(panel.config().tp, 2);
    tp->setValue(1);

    // hsdp: the shard group appears and is checked like --shard-group.
    auto* shard_group = panel.findChild<QSpinBox*>(QStringLiteral("shard-group"));
    QVERIFY(shard_group);
    panel.findChild<QComboBox*>(QStringLiteral("strategy"))->setCurrentText(QStringLiteral("hsdp"));
    shard_group->setValue(3);
    QVERIFY(!panel.isValid());
    QCOMPARE(panel.errorField(), static_cast<QWidget*>(shard_group));
    QCOMPARE(panel.config().shard_group, std::optional<int>(3));
    QVERIFY(!panel.config().unit_blocks || *panel.config().unit_blocks == 1);
    QProcess hsdp;
    hsdp.start(QStringLiteral(SHARDSCOPE_CLI_PATH), {"run", "--strategy", "hsdp", "--ranks", "4", "--shard-group", "3"});
    QVERIFY(hsdp.waitForFinished(30000));
    QCOMPARE(QString::fromUtf8(hsdp.readAllStandardError()).trimmed(), QStringLiteral("error: ") + panel.errorText());
    shard_group->setValue(2);
    QVERIFY2(panel.isValid(), qPrintable(panel.errorText()));
    // Back to ddp: sharding knobs leave the config, so validate() has nothing to object to.
    panel.findChild<QComboBox*>(QStringLiteral("strategy"))->setCurrentText(QStringLiteral("ddp"));
    QVERIFY(!panel.config().shard_group && !panel.config().unit_blocks && !panel.config().prefetch);
    QVERIFY(panel.isValid());
    QVERIFY(panel.runButton()->isEnabled());
    panel.setRunning(true);
    QVERIFY(!panel.runButton()->isEnabled());
  }

  void exportWritesFiguresOfRequestedSize() {
    EventStore store;
    fillSynthetic(store, 2, 2000);
    TimelineView view(&store);
    view.resize(1000, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.refresh();
    view.zoomToFit();
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QString error;

    const QString png = dir.filePath(QStringLiteral("t.png"));
    QVERIFY2(view.exportFigure(png, 820, 460, &error), qPrintable(error));
    const QImage image(png);
    QCOMPARE(image.size(), QSize(820, 460));
    QVERIFY(nonBlank(image));

    const QString svg = dir.filePath(QStringLiteral("t.svg"));
    QVERIFY2(view.exportFigure(svg, 700, 400, &error), qPrintable(error));
    QSvgRenderer renderer(svg);
    QVERIFY(renderer.isValid());
    QCOMPARE(renderer.defaultSize(), QSize(700, 400));
    QImage rendered(700, 400, QImage::Format_ARGB32);
    rendered.fill(Qt::white);
    QPainter painter(&rendered);
    renderer.render(&painter);
    painter.end();
    QVERIFY(nonBlank(rendered));

    const QString pdf = dir.filePath(QStringLiteral("t.pdf"));
    QVERIFY2(view.exportFigure(pdf, 640, 360, &error), qPrintable(error));
    QFile file(pdf);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray bytes = file.readAll();
    QVERIFY(bytes.startsWith("%PDF"));
    QVERIFY(bytes.size() > 2000);
    QVERIFY(bytes.contains("/MediaBox [0 0 640.000000 360.000000]"));  // points, as asked

    QVERIFY(!view.exportFigure(dir.filePath(QStringLiteral("t.bmp")), 640, 360, &error));
    QVERIFY(error.contains(QStringLiteral(".png, .svg or .pdf")));
  }

  void mainWindowOpensExportedTraceAndReportsBadOnes() {
    MainWindow window;
    window.setPersistSettings(false);
    QTemporaryDir dir;
    Run run(tinyConfig());
    run.execute();
    window.store().setFromTrace(run.trace());
    const size_t events = window.store().eventCount();
    const QString path = dir.filePath(QStringLiteral("run.trace.json"));
    QString error;
    QVERIFY2(window.exportTrace(path, &error), qPrintable(error));
    window.store().clear();
    QVERIFY2(window.openTrace(path, &error), qPrintable(error));
    QCOMPARE(window.store().eventCount(), events);
    QCOMPARE(window.store().rankCount(), 2);
    QVERIFY(window.timeline()->layout().rows().size() >= 6);

    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    QFile file(bad);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("{\"traceEvents\": [");
    file.close();
    QVERIFY(!window.openTrace(bad, &error));
    QVERIFY2(error.contains(QStringLiteral("bad.json")), qPrintable(error));
    QCOMPARE(window.store().eventCount(), events);  // a bad file leaves the open one alone
  }
};

QTEST_MAIN(TestUi)
#include "test_ui.moc"
