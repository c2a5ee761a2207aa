// The walkthrough of a pipelined run: the schedule's lines (1F1B's warm-up,
// steady state, cool-down and flush; GPipe's two loops), their counts from
// the schedule, and at a time in the run the line of the pass stage 0 runs
// then, the bubble's wait between passes, and the flush after its last pass.
#include <QtTest>

#include "engine/run.h"
#include "inspect/event_store.h"
#include "inspect/pipeline_boxes.h"
#include "walkthrough_model.h"

using namespace shardscope;

namespace {

RunConfig pipelined(PipelineSchedule schedule) {
  RunConfig c;
  c.backend = Backend::Meta;
  c.clock = ClockKind::Modeled;
  c.profile = "h100-sxm";
  c.strategy = Strategy::Zero1;
  c.ranks = 4;
  c.pp = 4;
  c.microbatches = 8;
  c.pp_schedule = schedule;
  c.model.layers = 8;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 16;
  c.steps = 1;
  return c;
}

// The lit line marked primary, or -1.
int primaryLine(const std::vector<LitLine>& lit, QString* lane = nullptr) {
  for (const LitLine& l : lit)
    if (l.primary) {
      if (lane) *lane = l.lane;
      return l.line;
    }
  return -1;
}

bool lit(const std::vector<LitLine>& lines, int line) {
  return std::any_of(lines.begin(), lines.end(), [line](const LitLine& l) { return l.line == line; });
}

}  // namespace

class TestPipelineWalkthrough : public QObject {
  Q_OBJECT

 private slots:
  void oneFOneBLightsWarmUpSteadyCoolDownAndFlush() {
    const RunConfig c = pipelined(PipelineSchedule::OneFOneB);
    Run run(c);
    run.execute();
    EventStore store;
    store.setFromTrace(run.trace());
    WalkthroughModel model;
    model.sync(store);
    const Algorithm& a = model.current();
    QVERIFY(a.title.startsWith(QStringLiteral("One 1F1B step, stage 0 of 4")));
    QCOMPARE(a.lines.size(), size_t(8));
    // Stage 0 of 4: S − 0 − 1 = 3 warm-up forwards, 3 cool-down backwards, 4 in flight.
    QVERIFY2(a.lines[0].contains(QStringLiteral("3 forwards")), qPrintable(a.lines[0]));
    QVERIFY2(a.lines[5].contains(QStringLiteral("3 backwards")), qPrintable(a.lines[5]));
    QVERIFY2(a.lines[2].contains(QStringLiteral("at most 4 microbatches")), qPrintable(a.lines[2]));

    PipelineBoxes boxes;
    boxes.build(store, 0);
    std::vector<PipelineBox> stage0;
    for (const PipelineBox& b : boxes.boxes())
      if (b.stage == 0) stage0.push_back(b);
    QCOMPARE(stage0.size(), size_t(16));  // 8 forwards, 8 backwards
    const auto middle = [](const PipelineBox& b) { return (b.begin_ns + b.end_ns) / 2; };
    // Stage 0's order: F0 F1 F2 | F3 B0 F4 B1 ... F7 B4 | B5 B6 B7.
    QString lane;
    std::vector<LitLine> at = model.litAt(middle(stage0[1]));  // F1: warm-up
    QCOMPARE(primaryLine(at, &lane), 1);
    QCOMPARE(lane, QStringLiteral("compute"));
    QVERIFY(lit(at, 0));  // its header
    at = model.litAt(middle(stage0[3]));  // F3: the steady state's forward
    QCOMPARE(primaryLine(at), 3);
    QVERIFY(lit(at, 2));
    at = model.litAt(middle(stage0[4]));  // B0: the steady state's backward
    QCOMPARE(primaryLine(at), 4);
    at = model.litAt(middle(stage0[14]));  // B6: cool-down
    QCOMPARE(primaryLine(at), 6);
    QVERIFY(lit(at, 5));
    // Between F2 and B0 stage 0 waits for the first gradient: the bubble, lit on the pass it waits for.
    bool found_gap = false;
    for (size_t i = 0; i + 1 < stage0.size() && !found_gap; ++i) {
      if (stage0[i + 1].begin_ns - stage0[i].end_ns < 1000) continue;
      at = model.litAt((stage0[i].end_ns + stage0[i + 1].begin_ns) / 2);
      QVERIFY(primaryLine(at) == -1);
      QVERIFY(std::any_of(at.begin(), at.end(), [](const LitLine& l) { return l.lane == QStringLiteral("waiting: the bubble"); }));
      found_gap = true;
    }
    QVERIFY2(found_gap, "stage 0 of a 4-stage 1F1B pipeline idles between passes");
    // After its last backward: the flush.
    at = model.litAt(stage0.back().end_ns + 1);
    if (model.stepAt(stage0.back().end_ns + 1) == 0) QCOMPARE(primaryLine(at), 7);
    // Stopped at the gate before the flush.
    at = model.litAt(stage0.back().end_ns, EventKind::OptimizerStep);
    QCOMPARE(primaryLine(at, &lane), 7);
    QCOMPARE(lane, QStringLiteral("next, at the gate"));
  }

  void gpipeHasItsTwoLoops() {
    const RunConfig c = pipelined(PipelineSchedule::GPipe);
    Run run(c);
    run.execute();
    EventStore store;
    store.setFromTrace(run.trace());
    WalkthroughModel model;
    model.sync(store);
    const Algorithm& a = model.current();
    QVERIFY(a.title.startsWith(QStringLiteral("One GPipe step")));
    QCOMPARE(a.lines.size(), size_t(5));
    QVERIFY(a.lines[0].contains(QStringLiteral("all 8 activations")));
    PipelineBoxes boxes;
    boxes.build(store, 0);
    std::vector<PipelineBox> stage0;
    for (const PipelineBox& b : boxes.boxes())
      if (b.stage == 0) stage0.push_back(b);
    QCOMPARE(stage0.size(), size_t(16));
    QCOMPARE(primaryLine(model.litAt((stage0[7].begin_ns + stage0[7].end_ns) / 2)), 1);  // the last forward
    QCOMPARE(primaryLine(model.litAt((stage0[8].begin_ns + stage0[8].end_ns) / 2)), 3);  // the first backward
  }
};

QTEST_MAIN(TestPipelineWalkthrough)
#include "test_pipeline_walkthrough.moc"
