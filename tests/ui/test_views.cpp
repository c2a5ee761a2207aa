// The teaching views, offscreen, each built from a short real run: presets
// load, validate and refuse bad files naming the field; the buckets view has
// one ready marker and one collective per bucket per rank and paints the hang
// preset's bucket red; the units grid shows unit 2 computing on every rank
// inside its forward; the walkthrough lights the line rank 0 is on; the
// communication table matches the formula; loss curves of DDP and ZeRO-3
// coincide; the headless figure of a modeled preset is byte-identical twice.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>
#include <cmath>

#include "analysis/formulas.h"
#include "analysis/run_summary.h"
#include "buckets_view.h"
#include "comm_view.h"
#include "common/errors.h"
#include "engine/run.h"
#include "inspect/event_store.h"
#include "experiment_panel.h"
#include "figure_job.h"
#include "loss_view.h"
#include "main_window.h"
#include "preset.h"
#include "run_history_model.h"
#include "step_walkthrough.h"
#include "timeline_view.h"
#include "units_view.h"

using namespace shardscope;

namespace {

RunConfig smallConfig(const std::string& strategy, int ranks = 2) {
  RunConfig c;
  c.strategy = *parseStrategy(strategy);
  c.ranks = ranks;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.batch = 2 * ranks;
  c.steps = 2;
  c.bucket_mb = 0.05;  // several buckets from a small model
  c.first_bucket_mb = 0.02;
  c.clock = ClockKind::Modeled;  // deterministic times: ranks line up exactly
  c.timeout_ms = 20000;          // CI machines are slow and shared: no false hang reports
  return c;
}

// Runs to the end and loads the (sorted, modeled) trace into a store.
RunResult runInto(const RunConfig& config, EventStore& store) {
  Run run(config);
  RunResult result = run.execute();
  RunTrace trace = run.trace();
  trace.config = config;
  store.setFromTrace(std::move(trace));
  store.setLosses(result.losses);
  return result;
}

// Rank 0's first forward (or backward) of `unit` in `step`: [begin, end).
std::pair<int64_t, int64_t> computeOf(const EventStore& store, int unit, int step, EventKind kind) {
  for (const Event& e : store.events(0))
    if (e.unit == unit && e.step == step && e.kind == kind) return {e.begin_ns, e.end_ns};
  return {-1, -1};
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

const char* const kPresetNames[] = {"ddp-basics", "zero-stages-compared", "fsdp-prefetch-on-off", "unit-size",
                                    "hybrid-2x4", "rank-dependent-hang",  "slow-interconnect",
                                    "tp-vs-fsdp", "tp-x-fsdp-70b",  "activation-checkpointing",
                                    "tiny-units", "reduce-dtype", "pipeline-schedules", "3d-parallelism"};

}  // namespace

class TestViews : public QObject {
  Q_OBJECT

 private slots:
  void presetsAllLoadAndValidate() {
    const auto& builtin = builtinPresets();
    QCOMPARE(builtin.size(), std::size(kPresetNames));
    // The files in the source tree are the ones compiled in, and each is valid.
    const QDir dir(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/resources/presets"));
    for (const char* name : kPresetNames) {
      const QString path = dir.filePath(QString::fromLatin1(name) + QStringLiteral(".json"));
      QVERIFY2(QFile::exists(path), qPrintable(path));
      Preset p;
      try {
        p = loadPresetFile(path);
      } catch (const PresetError& e) {
        QFAIL(e.what());
      }
      QCOMPARE(findPreset(QString::fromLatin1(name)).title, p.title);
      QVERIFY(!p.title.isEmpty() && p.text.size() > 200);  // a real paragraph
      QVERIFY(presetViews().contains(p.view));
      QVERIFY(!p.runs.empty());
      for (const PresetRun& run : p.runs) {
        validate(run.config);  // throws ConfigError on a bad config
        QCOMPARE(run.config.clock, ClockKind::Modeled);  // presets default to the deterministic clock
        QVERIFY(!run.label.isEmpty());
        QVERIFY(run.args.contains(QStringLiteral("--strategy")));
      }
    }
    const Preset hang = findPreset(QStringLiteral("rank-dependent-hang"));
    QVERIFY(hang.expectError);
    QVERIFY(hang.runs.front().config.inject_branch.has_value());
    QCOMPARE(findPreset(QStringLiteral("zero-stages-compared")).runs.size(), size_t{4});
    QCOMPARE(findPreset(QStringLiteral("hybrid-2x4")).runs.back().config.shardGroupSize(), 4);
    const Preset activations = findPreset(QStringLiteral("activation-checkpointing"));
    QCOMPARE(activations.runs.front().config.model.attention, Attention::Naive);
    QCOMPARE(activations.runs[1].config.model.attention, Attention::Flash);
    QCOMPARE(activations.runs.back().config.model.checkpointing, Checkpointing::Full);
  }

  void badPresetNamesTheField_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("expected");
    const QByteArray ok_run = R"({"config": {"strategy": "ddp", "ranks": 2, "batch": 4}})";
    QTest::newRow("not json") << QByteArray("{\"title\": ") << QStringLiteral("bad.json: not valid JSON at byte");
    QTest::newRow("no title") << QByteArray(R"({"text": "t", "runs": [)" + ok_run + "]}")
                              << QStringLiteral("bad.json: missing field \"title\"");
    QTest::newRow("title type") << QByteArray(R"({"title": 3, "text": "t", "runs": [)" + ok_run + "]}")
                                << QStringLiteral("field \"title\" must be a non-empty string, got a number");
    QTest::newRow("unknown top") << QByteArray(R"({"title": "a", "text": "t", "colour": 1, "runs": [)" + ok_run + "]}")
                                 << QStringLiteral("unknown field \"colour\"");
    QTest::newRow("no runs") << QByteArray(R"({"title": "a", "text": "t", "runs": []})")
                             << QStringLiteral("field \"runs\" must be a non-empty array");
    QTest::newRow("bad view") << QByteArray(R"({"title": "a", "text": "t", "view": "3d", "runs": [)" + ok_run + "]}")
                              << QStringLiteral("field \"view\" must be one of timeline");
    QTest::newRow("snake case") << QByteArray(R"({"title": "a", "text": "t", "runs": [{"config": {"bucket_mb": 1}}]})")
                                << QStringLiteral("bad.json: runs[0].config: unknown field \"bucket_mb\"");
    QTest::newRow("bad value") << QByteArray(R"({"title": "a", "text": "t", "runs": [{"config": {"ranks": "two"}}]})")
                               << QStringLiteral("runs[0].config: --ranks expects an integer, got 'two'");
    QTest::newRow("validate") << QByteArray(R"({"title": "a", "text": "t", "runs": [)" + ok_run +
                                            R"(, {"config": {"ranks": 4, "batch": 30}}]})")
                              << QStringLiteral("runs[1].config: --batch 30");
    QTest::newRow("bool") << QByteArray(R"({"title": "a", "text": "t", "runs": [{"config": {"ranks": true}}]})")
                          << QStringLiteral("\"ranks\" must be a string or a number, got a boolean");
  }

  void badPresetNamesTheField() {
    QFETCH(QByteArray, json);
    QFETCH(QString, expected);
    try {
      parsePreset(json, QStringLiteral("bad"));
      QFAIL("a bad preset was accepted");
    } catch (const PresetError& e) {
      const QString message = QString::fromUtf8(e.what());
      QVERIFY2(message.contains(expected), qPrintable(message));
      QVERIFY2(!message.contains(QLatin1Char('\n')), qPrintable(message));  // one line
    }
    QVERIFY_THROWS_EXCEPTION(PresetError, findPreset(QStringLiteral("no-such-preset")));
  }

  void panelPickerFillsTheFormAndShowsTheText() {
    ExperimentPanel panel;
    QVERIFY2(panel.presetLoadError().isEmpty(), qPrintable(panel.presetLoadError()));
    auto* picker = panel.findChild<QComboBox*>(QStringLiteral("preset"));
    QVERIFY(picker);
    QCOMPARE(picker->count(), static_cast<int>(std::size(kPresetNames)) + 1);  // plus "custom experiment"
    QVERIFY(!panel.activePreset());
    QSignalSpy changed(&panel, &ExperimentPanel::presetChanged);
    picker->setCurrentIndex(picker->findData(QStringLiteral("fsdp-prefetch-on-off")));
    emit picker->activated(picker->currentIndex());  // as a user picking it
    QCOMPARE(changed.count(), 1);
    QVERIFY(panel.activePreset());
    QCOMPARE(panel.findChild<QComboBox*>(QStringLiteral("strategy"))->currentText(), QStringLiteral("fsdp"));
    QCOMPARE(panel.findChild<QComboBox*>(QStringLiteral("backend"))->currentText(), QStringLiteral("meta"));
    QCOMPARE(panel.findChild<QComboBox*>(QStringLiteral("model"))->currentText(), QStringLiteral("gpt2-124m"));
    QCOMPARE(panel.findChild<QSpinBox*>(QStringLiteral("ranks"))->value(), 8);
    QCOMPARE(panel.findChild<QComboBox*>(QStringLiteral("prefetch"))->currentText(), QStringLiteral("none"));
    QVERIFY2(panel.isValid(), qPrintable(panel.errorText()));
    const RunConfig c = panel.config();
    QCOMPARE(c.backend, Backend::Meta);
    QCOMPARE(c.model.preset, std::string("gpt2-124m"));
    QCOMPARE(c.clock, ClockKind::Modeled);
    auto* text = panel.findChild<QLabel*>(QStringLiteral("presetText"));
    QVERIFY(text && !text->isHidden());
    QVERIFY(text->text().contains(QStringLiteral("prefetch")));
    QCOMPARE(panel.runButton()->text(), QStringLiteral("Run preset (2 runs)"));
    // Editing the form makes it a custom experiment again.
    panel.findChild<QSpinBox*>(QStringLiteral("ranks"))->setValue(4);
    QVERIFY(!panel.activePreset());
    QCOMPARE(picker->currentIndex(), 0);
    QVERIFY(text->isHidden());
    QCOMPARE(panel.runButton()->text(), QStringLiteral("Run"));
  }

  void bucketsViewHasOneMarkerAndOneBarPerBucketPerRank() {
    EventStore store;
    runInto(smallConfig("ddp", 3), store);
    const int buckets = static_cast<int>(store.meta().buckets.size());
    QVERIFY2(buckets >= 3, qPrintable(QString::number(buckets)));
    BucketsView view(&store);
    view.resize(900, 600);
    view.refresh(true);
    QCOMPARE(view.shownStep(), 1);  // the last complete step
    QCOMPARE(view.readyMarkerCount(), buckets * 3);
    QCOMPARE(view.collectiveBarCount(), buckets * 3);
    const BucketActivity& a = view.activity();
    for (int r = 0; r < 3; ++r) {
      for (int b = 0; b < buckets; ++b) {
        const BucketSlot& s = a.slot(1, r, b);
        QCOMPARE(s.kind, EventKind::AllReduce);
        QVERIFY(s.ready_ns <= s.begin_ns);  // launched once ready, never before
        if (b > 0) QVERIFY(s.ready_ns >= a.slot(1, r, b - 1).ready_ns);  // reverse registration order
        QVERIFY(!view.neverReadyHighlighted(r, b) && !view.stuckHighlighted(r, b));
      }
    }
    // Hovering a bucket lists its parameters.
    const QString tip = view.bucketTooltip(1, 0);
    QVERIFY(tip.contains(QString::fromStdString(store.meta().buckets[0].params.front())));
    QVERIFY(tip.contains(QString::fromStdString(store.meta().buckets[0].params.back())));
    QVERIFY(view.infoText().contains(QStringLiteral("fired them in order 0 1 2")));
    const QPixmap pixels = view.plot()->toPixmap(900, 600);  // paints without trouble
    QVERIFY(!pixels.isNull());

    // ZeRO-2: the bar is a reduce-scatter, and the updated parameters are gathered per bucket.
    EventStore zero;
    runInto(smallConfig("zero2"), zero);
    BucketsView zero_view(&zero);
    zero_view.refresh(true);
    const int zb = static_cast<int>(zero.meta().buckets.size());
    QCOMPARE(zero_view.collectiveBarCount(), zb * 2);
    for (int b = 0; b < zb; ++b) {
      QCOMPARE(zero_view.activity().slot(1, 0, b).kind, EventKind::ReduceScatter);
      QVERIFY(zero_view.activity().slot(1, 0, b).gather_begin_ns >= 0);
    }
  }

  void hangPresetPaintsTheBucketRed() {
    MainWindow window;
    window.setPersistSettings(false);
    Preset preset = findPreset(QStringLiteral("rank-dependent-hang"));
    preset.runs.front().config.timeout_ms = 1500;
    QSignalSpy done(&window, &MainWindow::presetFinished);
    QString error;
    QVERIFY2(window.runPreset(preset, &error), qPrintable(error));
    QVERIFY(done.wait(120000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));  // it stops, as it should
    BucketsView* view = window.bucketsView();
    // Rank 1 skips block 2: bucket 1 (block3.fc1 … block2.fc2) never becomes ready on rank 1.
    QVERIFY(view->neverReadyHighlighted(1, 1));
    QVERIFY(!view->neverReadyHighlighted(0, 1));
    QVERIFY(view->stuckHighlighted(0, 1));  // rank 0 launched it and waits for rank 1
    QVERIFY(!view->neverReadyHighlighted(1, 0) && !view->stuckHighlighted(0, 0));  // bucket 0 fired everywhere
    const QString info = view->infoText();
    QVERIFY2(info.contains(QStringLiteral("bucket 1 never fired: rank 1 never readied it")), qPrintable(info));
    QVERIFY2(info.contains(QStringLiteral("never became ready on rank 1")), qPrintable(info));  // the run's error
    QVERIFY(window.bannerText().contains(QStringLiteral("bucket 1")));
    QCOMPARE(window.history()->runCount(), 1);
    QVERIFY(!window.history()->run(0).ok);
  }

  void unitsGridShowsUnitTwoComputingOnEveryRank() {
    EventStore store;
    RunConfig config = smallConfig("zero3", 4);
    runInto(config, store);
    UnitsView view(&store);
    view.resize(700, 500);
    view.refresh(true);
    QCOMPARE(view.states().rankCount(), 4);
    QCOMPARE(view.states().unitCount(), 5);  // root + one per block
    const auto [b, e] = computeOf(store, 2, 1, EventKind::Forward);
    QVERIFY(b >= 0 && e > b);
    view.setCursorTime(b + (e - b) / 2);
    for (int r = 0; r < 4; ++r) {
      QCOMPARE(view.cellState(r, 2), UnitState::Computing);
      QCOMPARE(view.cellState(r, 4), UnitState::Sharded);  // not reached yet in this forward
      QCOMPARE(view.cellState(r, 1), UnitState::Freed);    // done, gathered copy dropped
    }
    QVERIFY(view.infoText().contains(QStringLiteral("computing 2")));
    // Backward: unit 2 computes again, and after it, its gradients are reduced.
    const auto [bb, be] = computeOf(store, 2, 1, EventKind::Backward);
    view.setCursorTime(bb + (be - bb) / 2);
    QCOMPARE(view.cellState(3, 2), UnitState::Computing);
    bool reducing = false;
    for (const UnitSpan& s : view.states().spans(0, 2)) reducing = reducing || (s.state == UnitState::Reducing && s.step == 1);
    QVERIFY(reducing);
    QVERIFY(!view.plot()->toPixmap(700, 500).isNull());

    // Without resharding after forward, unit 2 stays gathered from its forward into its backward.
    EventStore kept;
    config.reshard_after_forward = false;
    runInto(config, kept);
    UnitsView kept_view(&kept);
    kept_view.refresh(true);
    const auto [fb, fe] = computeOf(kept, 2, 1, EventKind::Forward);
    const auto [kb, ke] = computeOf(kept, 2, 1, EventKind::Backward);
    QVERIFY(fe < kb);
    kept_view.setCursorTime(fe + (kb - fe) / 2);
    QCOMPARE(kept_view.cellState(0, 2), UnitState::Gathered);
    // With it (the default), the gathered copy is dropped the moment the forward ends.
    view.setCursorTime(e + 1);
    QCOMPARE(view.cellState(0, 2), UnitState::Freed);
  }

  void walkthroughLightsTheLineRankZeroIsOn() {
    EventStore store;
    runInto(smallConfig("zero3"), store);
    StepWalkthrough walk(&store);
    walk.refresh();
    QCOMPARE(walk.lineCount(), 10);  // the FSDP reference text's ten lines
    QCOMPARE(walk.lineText(0), QStringLiteral("forward, for each unit in order:"));
    QCOMPARE(walk.lineText(9), QStringLiteral("update: each rank steps only the shard it owns; no further communication"));
    const auto primary = [&walk]() {
      for (const LitLine& l : walk.litLines())
        if (l.primary) return l.line;
      return -1;
    };
    const auto lit = [&walk](int line) {
      for (const LitLine& l : walk.litLines())
        if (l.line == line) return true;
      return false;
    };
    walk.setCursorTime(std::nullopt);
    QVERIFY(walk.litLines().empty());
    const auto [fb, fe] = computeOf(store, 2, 1, EventKind::Forward);
    walk.setCursorTime(fb + (fe - fb) / 2);
    QCOMPARE(primary(), 2);  // "run the unit; save activations"
    QVERIFY(lit(0));         // inside the forward loop
    const auto [bb, be] = computeOf(store, 2, 1, EventKind::Backward);
    walk.setCursorTime(bb + (be - bb) / 2);
    QCOMPARE(primary(), 6);  // "compute input and weight gradients"
    QVERIFY(lit(4));
    int64_t opt = -1;
    for (const Event& e : store.events(0))
      if (e.step == 1 && e.kind == EventKind::OptimizerStep) opt = (e.begin_ns + e.end_ns) / 2;
    walk.setCursorTime(opt);
    QCOMPARE(primary(), 9);

    // DDP: an all-reduce on the comm stream while backward computes lights both lines.
    EventStore ddp;
    runInto(smallConfig("ddp"), ddp);
    StepWalkthrough ddp_walk(&ddp);
    ddp_walk.refresh();
    QCOMPARE(ddp_walk.lineCount(), 8);
    bool both = false;
    for (const Event& ar : ddp.events(0)) {
      if (ar.kind != EventKind::AllReduce || ar.step != 1) continue;
      for (const Event& bw : ddp.events(0)) {
        if (bw.kind != EventKind::Backward || bw.step != 1) continue;
        const int64_t lo = std::max(ar.begin_ns, bw.begin_ns), hi = std::min(ar.end_ns, bw.end_ns);
        if (hi <= lo) continue;
        ddp_walk.setCursorTime(lo + (hi - lo) / 2);
        bool compute = false, comm = false;
        for (const LitLine& l : ddp_walk.litLines()) {
          compute = compute || (l.line == 3 && l.primary);
          comm = comm || (l.line == 5 && l.lane == QStringLiteral("comm stream"));
        }
        both = both || (compute && comm);
      }
    }
    QVERIFY(both);

    // ZeRO-2: its own ten lines; the parameter all-gather after the update is line 9.
    EventStore zero;
    runInto(smallConfig("zero2"), zero);
    StepWalkthrough zero_walk(&zero);
    zero_walk.refresh();
    QCOMPARE(zero_walk.lineCount(), 10);
    QVERIFY(zero_walk.lineText(4).startsWith(QStringLiteral("when a bucket's last gradient arrives, reduce-scatter")));
    bool gathered = false;
    for (const Event& ag : zero.events(0)) {
      if (ag.kind != EventKind::AllGather || ag.step != 1 || ag.end_ns <= ag.begin_ns) continue;
      zero_walk.setCursorTime((ag.begin_ns + ag.end_ns) / 2);
      for (const LitLine& l : zero_walk.litLines()) gathered = gathered || l.line == 8;
    }
    QVERIFY(gathered);
  }

  void commViewMatchesTheFormula() {
    for (const char* strategy : {"ddp", "zero3"}) {
      EventStore store;
      const RunResult result = runInto(smallConfig(strategy, 4), store);
      CommView view(&store);
      QAbstractItemModelTester tester(view.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
      view.setRun(&result);
      CommStatsModel* model = view.model();
      QCOMPARE(model->step(), 1);
      QVERIFY(model->measuredAtSends());
      QCOMPARE(model->rankCount(), 4);
      const CommBytes seed = expectedTraffic(result.config).data_parallel;
      QCOMPARE(model->expectedTotal(), seed.all_reduce + seed.reduce_scatter + seed.all_gather);
      for (int r = 0; r < 4; ++r) {
        const CommBytes& sent = result.ranks[static_cast<size_t>(r)].comm_bytes;
        QCOMPARE(model->sentTotal(r), sent.all_reduce + sent.reduce_scatter + sent.all_gather);
        // Measured within 1% of the seed (the flat-buffer padding is the difference).
        QVERIFY(std::abs(static_cast<double>(model->sentTotal(r)) / model->expectedTotal() - 1.0) < 0.01);
      }
      for (const CommStatsModel::RankTiming& t : model->timing()) {
        QVERIFY(t.comm_ns > 0 && t.exposed_ns >= 0 && t.exposed_ns <= t.comm_ns);
        QVERIFY(t.overlap >= 0 && t.overlap <= 100);
      }
      for (const CommStatsModel::Row& row : model->statRows())
        if (row.ops > 0) QVERIFY2(row.busbw > 0, qPrintable(QString::number(row.busbw)));
      QVERIFY(view.sourceText().contains(QStringLiteral("measured at the sends")));
      // An opened trace: from the events × ring factor, within a byte per collective of the measurement.
      view.setRun(nullptr);
      QVERIFY(!model->measuredAtSends());
      QVERIFY(view.sourceText().contains(QStringLiteral("computed from the trace")));
      for (int r = 0; r < 4; ++r) {
        const CommBytes& sent = result.ranks[static_cast<size_t>(r)].comm_bytes;
        const double measured = static_cast<double>(sent.all_reduce + sent.reduce_scatter + sent.all_gather);
        QVERIFY2(std::abs(static_cast<double>(model->sentTotal(r)) - measured) <= 64,
                 qPrintable(QStringLiteral("%1 vs %2").arg(model->sentTotal(r)).arg(measured)));
      }
      QCOMPARE(model->data(model->index(0, CommStatsModel::Rank)).toInt(), 0);
      view.clear();
      QCOMPARE(model->rowCount(), 0);
    }
  }

  void runHistoryKeepsEveryRun() {
    RunHistoryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    EventStore store;
    Run run(smallConfig("zero2"));
    RunResult result = run.execute();
    for (int i = 0; i < RunHistoryModel::kKeptTraces + 2; ++i) {
      RunRecord record;
      record.label = QStringLiteral("run %1").arg(i);
      record.config = smallConfig("zero2");
      record.ok = i != 1;
      record.error = record.ok ? QString() : QStringLiteral("collective hang");
      record.trace = std::make_shared<const RunTrace>(run.trace());
      if (record.ok) record.result = std::make_shared<const RunResult>(result);
      record.losses = result.losses;
      model.addRun(std::move(record));
    }
    QCOMPARE(model.rowCount(), RunHistoryModel::kKeptTraces + 2);
    QVERIFY(!model.run(0).trace && !model.run(1).trace);  // the oldest traces were dropped
    QVERIFY(!model.run(0).result);  // and their results (16k-rank lessons' are large): the row keeps its figures
    QVERIFY(model.data(model.index(0, RunHistoryModel::StateBytes)).toString().startsWith(QStringLiteral("9.00")));
    QVERIFY(model.run(model.runCount() - 1).trace);
    QVERIFY(model.run(model.runCount() - 1).result);
    // zero2 at P = 2: 2 + 14/2 = 9 bytes per parameter, measured and predicted.
    const QString state = model.data(model.index(2, RunHistoryModel::StateBytes)).toString();
    QVERIFY2(state.startsWith(QStringLiteral("9.00 (formula 9)")), qPrintable(state));
    QVERIFY(model.data(model.index(1, RunHistoryModel::Status)).toString().contains(QStringLiteral("hang")));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  void lossCurvesOfDdpAndZero3Coincide() {
    EventStore ddp, zero3;
    runInto(smallConfig("ddp"), ddp);
    runInto(smallConfig("zero3"), zero3);
    QCOMPARE(ddp.losses().size(), zero3.losses().size());
    for (size_t s = 0; s < ddp.losses().size(); ++s) QVERIFY(std::abs(ddp.losses()[s] - zero3.losses()[s]) < 1e-4);
    LossView view(&zero3);
    view.appendRun(QStringLiteral("ddp · 2 ranks"), ddp.losses());
    view.keepRun(QStringLiteral("zero3 · 2 ranks"));
    QCOMPARE(view.runCount(), 2);
    QCOMPARE(view.pointCount(), 0);  // the live curve hides once kept
    QCOMPARE(view.runLabel(1), QStringLiteral("zero3 · 2 ranks"));
    QCOMPARE(view.plot()->legend->itemCount(), 2);
    view.findChild<QPushButton*>(QStringLiteral("clearLossRuns"))->click();
    QCOMPARE(view.runCount(), 0);
  }

  void timelineCursorDragsWithoutPanning() {
    EventStore store;
    runInto(smallConfig("ddp"), store);
    TimelineView view(&store);
    view.resize(900, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.refresh();
    view.zoomToFit();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QRect rect = view.plot()->axisRect()->rect();
    const int x0 = rect.left() + rect.width() / 3, x1 = rect.left() + rect.width() / 2, y = rect.center().y();
    const auto ns = [&](int x) { return static_cast<int64_t>(std::llround(view.plot()->xAxis->pixelToCoord(x) * 1e6)); };
    view.setCursorTime(ns(x0));
    const QCPRange before = view.plot()->xAxis->range();
    QSignalSpy moved(&view, &TimelineView::cursorChanged);
    QWidget* canvas = view.plot();
    QTest::mousePress(canvas, Qt::LeftButton, Qt::NoModifier, QPoint(x0, y));
    QMouseEvent move(QEvent::MouseMove, QPointF(x1, y), canvas->mapToGlobal(QPointF(x1, y)), Qt::NoButton, Qt::LeftButton,
                     Qt::NoModifier);
    QApplication::sendEvent(canvas, &move);
    QTest::mouseRelease(canvas, Qt::LeftButton, Qt::NoModifier, QPoint(x1, y));
    QVERIFY(moved.count() >= 1);
    QVERIFY(view.cursorTime());
    QVERIFY(std::abs(*view.cursorTime() - ns(x1)) <= std::abs(ns(x1) - ns(x1 + 1)) + 1);
    QCOMPARE(view.plot()->xAxis->range().lower, before.lower);  // scrubbed, not panned
  }

  void headlessFigureIsByteIdentical() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const struct {
      const char* preset;
      const char* view;
    } jobs[] = {{"ddp-basics", "buckets"}, {"fsdp-prefetch-on-off", "units"}};
    for (const auto& j : jobs) {
      QByteArray first;
      for (int i = 0; i < 2; ++i) {
        FigureJob job;
        job.preset = QString::fromLatin1(j.preset);
        job.view = QString::fromLatin1(j.view);
        job.out = dir.filePath(QStringLiteral("%1-%2-%3.png").arg(j.preset, j.view).arg(i));
        job.width = 1000;
        job.height = 640;
        QString message;
        QCOMPARE(runFigureJob(job, &message), 0);
        const QByteArray bytes = readAll(job.out);
        QVERIFY(bytes.size() > 5000);
        QCOMPARE(QImage(job.out).size(), QSize(1000, 640));
        if (i == 0) first = bytes;
        else QVERIFY2(bytes == first, qPrintable(QStringLiteral("%1/%2 differs between two runs").arg(j.preset, j.view)));
      }
    }
    // Every view that has something to draw exports in every format; the others say why not.
    MainWindow window;
    window.setPersistSettings(false);
    QSignalSpy done(&window, &MainWindow::presetFinished);
    QString error;
    QVERIFY(window.runPreset(findPreset(QStringLiteral("hybrid-2x4")), &error));
    QVERIFY(done.wait(60000));
    for (const QString& view : presetViews()) {
      const QString why = window.figureUnavailable(view);
      // hsdp has units, not buckets, and no pipeline stages; the meta backend has no loss; stragglers and HTA are an imported job's,
      // a snapshot an opened file's.
      QCOMPARE(!why.isEmpty(), view == QLatin1String("buckets") || view == QLatin1String("loss") ||
                                   view == QLatin1String("stragglers") || view == QLatin1String("hta") ||
                                   view == QLatin1String("critical-path") ||
                                   view == QLatin1String("pipeline") ||
                                   view == QLatin1String("snapshot") || view == QLatin1String("memory-timeline"));
      for (const char* suffix : {"png", "svg", "pdf"}) {
        const QString path = dir.filePath(QStringLiteral("%1.%2").arg(view, suffix));
        QCOMPARE(window.exportViewFigure(view, path, 800, 500, &error), why.isEmpty());
        if (why.isEmpty())
          QVERIFY(readAll(path).size() > 1000);
        else
          QCOMPARE(error, why);
      }
    }
    QVERIFY(!window.exportViewFigure(QStringLiteral("3d"), dir.filePath(QStringLiteral("x.png")), 800, 500, &error));
    QVERIFY(error.contains(QStringLiteral("unknown view")));
  }

  void figureJobRefusesBadInput() {
    QString message;
    FigureJob job;
    job.preset = QStringLiteral("ddp-basics");
    job.view = QStringLiteral("histogram");
    job.out = QStringLiteral("x.png");
    QCOMPARE(runFigureJob(job, &message), 2);
    QVERIFY(message.contains(QStringLiteral("--view must be one of")));
    job.view = QStringLiteral("loss");
    job.preset = QStringLiteral("nope");
    QCOMPARE(runFigureJob(job, &message), 2);
    QVERIFY(message.contains(QStringLiteral("unknown preset 'nope'")) && message.contains(QStringLiteral("ddp-basics")));
    // A view with nothing to draw for the preset's run is refused, not drawn empty.
    QTemporaryDir dir;
    job.preset = QStringLiteral("ddp-basics");
    job.view = QStringLiteral("units");
    job.out = dir.filePath(QStringLiteral("units.png"));
    QCOMPARE(runFigureJob(job, &message), 2);
    QVERIFY2(message.contains(QStringLiteral("the units view shows zero3, fsdp and hsdp runs")), qPrintable(message));
    QVERIFY(!QFile::exists(job.out));
    job.view = QStringLiteral("loss");  // the meta backend: no math, no loss
    QCOMPARE(runFigureJob(job, &message), 2);
    QVERIFY2(message.contains(QStringLiteral("meta backend")), qPrintable(message));
  }
};

QTEST_MAIN(TestViews)
#include "test_views.moc"
