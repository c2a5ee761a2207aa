// findRankSymmetry: the ranks of a symmetric run on the modeled clock (ddp,
// zero3 and hsdp, 8 ranks) are all rank 0's again, group ids aside; a rank
// with other bytes, a straggler (times shifted) and a hang (a rank that
// skipped a block) are not, and the band's text names the ranks as ranges; a
// pipeline's ranks fold per stage.
#include <QtTest>

#include "engine/run.h"
#include "inspect/event_store.h"
#include "inspect/rank_symmetry.h"

using namespace shardscope;

namespace {

RunConfig config(Strategy strategy, int ranks = 8) {
  RunConfig c;
  c.strategy = strategy;
  c.ranks = ranks;
  c.model.layers = 3;
  c.model.hidden = 48;
  c.model.io_dim = 32;
  c.batch = 16;
  c.steps = 2;
  c.clock = ClockKind::Modeled;
  c.profile = "h100-sxm";
  c.timeout_ms = 20000;
  return c;
}

RunTrace traceOf(const RunConfig& c) {
  Run run(c);
  try {
    run.execute();
  } catch (const std::exception&) {
    // a hang: the trace keeps what every rank did until it stopped
  }
  return run.trace();
}

std::vector<int> sameAs0(const RunTrace& trace, int64_t tolerance_ns = 0) {
  EventStore store;
  store.setFromTrace(trace);
  return findRankSymmetry(store, tolerance_ns).sameAsRank0();
}

const std::vector<int> kAllButZero = {1, 2, 3, 4, 5, 6, 7};

}  // namespace

class TestRankSymmetry : public QObject {
  Q_OBJECT
 private slots:
  void symmetricRunsAreRank0Again() {
    for (Strategy s : {Strategy::Ddp, Strategy::Zero3}) {
      const RunTrace trace = traceOf(config(s));
      QCOMPARE(sameAs0(trace), kAllButZero);
    }
  }

  void groupIdsDoNotCount() {
    RunTrace trace = traceOf(config(Strategy::Zero3));
    for (Event& e : trace.events[3]) {
      if (e.group >= 0) e.group = static_cast<int16_t>(e.group + 5);
      e.seq += 100;
    }
    QCOMPARE(sameAs0(trace), kAllButZero);
  }

  void otherBytesAreNotTheSame() {
    RunTrace trace = traceOf(config(Strategy::Ddp));
    for (Event& e : trace.events[3])
      if (e.kind == EventKind::AllReduce) {
        e.bytes += 4;
        break;
      }
    QCOMPARE(sameAs0(trace), (std::vector<int>{1, 2, 4, 5, 6, 7}));
    QCOMPARE(QString::fromStdString(RankFold{0, sameAs0(trace)}.text(nullptr)),
             QStringLiteral("ranks 1–2, 4–7: same as rank 0"));
    QCOMPARE(QString::fromStdString(RankFold{0, kAllButZero}.text(nullptr)), QStringLiteral("ranks 1–7: same as rank 0"));
    QCOMPARE(QString::fromStdString(RankFold{0, {3}}.text(nullptr)), QStringLiteral("rank 3: same as rank 0"));
  }

  void aStragglerIsNotTheSame() {
    RunTrace trace = traceOf(config(Strategy::Zero3));
    bool shifted = false;
    for (Event& e : trace.events[5])
      if (e.kind == EventKind::Backward && !shifted) {
        e.end_ns += 1500;  // one slow backward op
        shifted = true;
      }
    QVERIFY(shifted);
    QCOMPARE(sameAs0(trace), (std::vector<int>{1, 2, 3, 4, 6, 7}));
    QCOMPARE(sameAs0(trace, 2000), kAllButZero);  // within a measured clock's tolerance
  }

  void aHangIsNotSymmetric() {
    RunConfig c = config(Strategy::Ddp, 4);
    c.timeout_ms = 1000;
    c.inject_branch = InjectBranch{1, 1};  // rank 1 skips block 1: the others wait in its all-reduce
    const RunTrace trace = traceOf(c);
    const std::vector<int> same = sameAs0(trace);
    QVERIFY2(std::find(same.begin(), same.end(), 1) == same.end(), "the hung rank counts as rank 0's twin");
    QVERIFY(same.size() < 3);
  }

  // A pipeline's ranks differ from stage to stage but not within one: one
  // class per stage, each named by its stage (ranks r = t + T·(d + D·s)).
  void aPipelineFoldsEachStage() {
    RunConfig c = config(Strategy::Zero3);
    c.backend = Backend::Meta;
    c.model.layers = 4;
    c.pp = 2;
    c.tp = 2;
    c.microbatches = 4;
    EventStore store;
    store.setFromTrace(traceOf(c));
    const RankSymmetry symmetry = findRankSymmetry(store);
    QCOMPARE(symmetry.folds.size(), size_t(2));
    QCOMPARE(symmetry.folds[0].source, 0);
    QCOMPARE(symmetry.folds[0].ranks, (std::vector<int>{1, 2, 3}));
    QCOMPARE(symmetry.folds[1].source, 4);
    QCOMPARE(symmetry.folds[1].ranks, (std::vector<int>{5, 6, 7}));
    QCOMPARE(QString::fromStdString(symmetry.folds[1].text(store.config())),
             QStringLiteral("stage 1, ranks 5–7: same as rank 4"));
    QCOMPARE(symmetry.sameAsRank0(), (std::vector<int>{1, 2, 3}));
  }

  void oneRankHasNoTwins() {
    const RunTrace trace = traceOf(config(Strategy::Ddp, 1));
    QVERIFY(sameAs0(trace).empty());
  }
};

QTEST_GUILESS_MAIN(TestRankSymmetry)
#include "test_rank_symmetry.moc"
