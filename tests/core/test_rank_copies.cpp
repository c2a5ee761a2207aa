// Guards symmetric replication: a meta run whose ranks are copies of rank 0
// must report, per rank, exactly what simulating every rank reports — every
// event of every rank (rank and group ids included), the Chrome trace file
// byte for byte, each rank's ledger, traffic, orders and step timing, and the
// summary JSON — and, in the window's EventStore (one log plus the rank map),
// every inspected series: memory, unit states, exposure, the timeline's rows
// and boxes, a selected collective's peers. A wrong rank map (a copy on rank 0's groups) fails here.
#include <QtTest>

#include <cstring>
#include <numeric>
#include <sstream>

#include "analysis/run_summary.h"
#include "config/run_config.h"
#include "engine/run.h"
#include "inspect/collective_exposure.h"
#include "inspect/collective_peers.h"
#include "inspect/event_store.h"
#include "inspect/memory_series.h"
#include "inspect/rank_symmetry.h"
#include "inspect/stuck_collectives.h"
#include "inspect/timeline_layout.h"
#include "inspect/unit_states.h"
#include "trace/chrome_trace_writer.h"
#include "trace/run_trace.h"
#include "sanitizer_build.h"

using namespace shardscope;

namespace {

// A small GPT on 64 meta ranks (the least that is replicated), one step.
RunConfig smallRun(const QStringList& extra) {
  std::vector<std::string> args = {"--backend", "meta", "--clock",  "modeled", "--model", "gpt",
                                   "--layers",  "4",    "--hidden", "256",     "--heads",      "4",
                                   "--seq",     "128",  "--vocab",  "1024",    "--ranks",      "64",
                                   "--batch",   "64",   "--steps",  "1",       "--profile",    "h100-sxm"};
  for (const QString& a : extra) args.push_back(a.toStdString());
  RunConfig c = parseRunArgs(args);
  c.timeout_ms = 20000;
  return c;
}

std::string summaryJson(RunResult r) {
  r.wall_seconds = 0;  // the one number that is the host's, not the run's
  std::ostringstream out;
  writeSummaryJson(r, out);
  return out.str();
}

std::string chromeTrace(const RunTrace& t) {
  std::ostringstream out;
  writeChromeTrace(t, out);
  return out.str();
}

QString eventText(const Event& e) {
  return QStringLiteral("%1 lane %2 group %3 seq %4 op %5 at %6")
      .arg(QLatin1String(eventKindName(e.kind).data()))
      .arg(int(e.lane))
      .arg(e.group)
      .arg(e.seq)
      .arg(e.op)
      .arg(e.begin_ns);
}

// The window's store of the shared trace (one log, the rank map) against the
// fully simulated run's: each rank's events as recorded, and what every view
// derives from them.
void compareInspected(const RunTrace& full_trace, const RunTrace& shared_trace) {
  EventStore full, copied;
  full.setFromTrace(full_trace);
  copied.setFromTrace(shared_trace);
  QVERIFY(!copied.copies().empty());
  QCOMPARE(copied.rankCount(), full.rankCount());
  QCOMPARE(copied.eventCount(), full.eventCount());
  QCOMPARE(copied.beginNs(), full.beginNs());
  QCOMPARE(copied.endNs(), full.endNs());
  for (int r = 0; r < full.rankCount(); ++r) {
    QCOMPARE(copied.events(r).size(), full.events(r).size());
    for (size_t i = 0; i < full.events(r).size(); ++i) {
      const Event e = copied.eventAt(r, i);
      QVERIFY2(std::memcmp(&e, &full.events(r)[i], sizeof(Event)) == 0, qPrintable(QStringLiteral("rank %1 event %2").arg(r).arg(i)));
    }
  }
  // Only rank 0's log is held.
  for (int r = 1; r < copied.rankCount(); ++r) QVERIFY(copied.isCopy(r));
  QCOMPARE(chromeTrace(copied.toRunTrace()), chromeTrace(full_trace));

  MemorySeries ma, mb;
  ma.sync(full);
  mb.sync(copied);
  QCOMPARE(mb.rankCount(), ma.rankCount());
  for (int r = 0; r < ma.rankCount(); ++r) {
    QCOMPARE(mb.samples(r).size(), ma.samples(r).size());
    for (size_t i = 0; i < ma.samples(r).size(); ++i) {
      QCOMPARE(mb.samples(r)[i].t_ns, ma.samples(r)[i].t_ns);
      QVERIFY(mb.samples(r)[i].bytes == ma.samples(r)[i].bytes);
    }
    QCOMPARE(mb.peakTotal(r) != nullptr, ma.peakTotal(r) != nullptr);
    if (ma.peakTotal(r)) QCOMPARE(mb.peakTotal(r)->t_ns, ma.peakTotal(r)->t_ns);
    if (ma.peakModelState(r)) QCOMPARE(mb.peakModelState(r)->modelState(), ma.peakModelState(r)->modelState());
  }

  UnitStates ua, ub;
  ua.sync(full);
  ub.sync(copied);
  QCOMPARE(ub.rankCount(), ua.rankCount());
  QCOMPARE(ub.unitCount(), ua.unitCount());
  QCOMPARE(ub.lastStep(), ua.lastStep());
  const int64_t mid = (full.beginNs() + full.endNs()) / 2;
  for (int r = 0; r < ua.rankCount(); ++r) {
    QCOMPARE(ub.unattributedBytes(r, mid), ua.unattributedBytes(r, mid));
    for (int u = 0; u < ua.unitCount(); ++u) {
      const auto& sa = ua.spans(r, u);
      const auto& sb = ub.spans(r, u);
      QCOMPARE(sb.size(), sa.size());
      for (size_t i = 0; i < sa.size(); ++i) {
        QCOMPARE(sb[i].begin_ns, sa[i].begin_ns);
        QCOMPARE(sb[i].end_ns, sa[i].end_ns);
        QCOMPARE(int(sb[i].state), int(sa[i].state));
        QCOMPARE(sb[i].step, sa[i].step);
      }
      QCOMPARE(ub.heldBytes(r, u, mid), ua.heldBytes(r, u, mid));
    }
  }

  for (int r = 0; r < full.rankCount(); ++r) {
    const auto xa = collectiveExposure(full, r, 0), xb = collectiveExposure(copied, r, 0);
    QCOMPARE(xb.size(), xa.size());
    for (size_t i = 0; i < xa.size(); ++i) {
      QCOMPARE(xb[i].event, xa[i].event);
      QCOMPARE(xb[i].bytes, xa[i].bytes);
      QCOMPARE(xb[i].begin_ns, xa[i].begin_ns);
      QCOMPARE(xb[i].dur_ns, xa[i].dur_ns);
      QCOMPARE(xb[i].exposed_ns, xa[i].exposed_ns);
    }
  }
  QCOMPARE(findStuckCollectives(copied).size(), findStuckCollectives(full).size());
  QCOMPARE(findRankSymmetry(copied).sameAsRank0(), findRankSymmetry(full).sameAsRank0());

  // The timeline: every rank's rows, and the boxes of each over the whole run.
  TimelineLayout la, lb;
  la.sync(full);
  lb.sync(copied);
  QCOMPARE(lb.rows().size(), la.rows().size());
  for (size_t i = 0; i < la.rows().size(); ++i) {
    QCOMPARE(lb.rows()[i].rank, la.rows()[i].rank);
    QCOMPARE(int(lb.rows()[i].lane), int(la.rows()[i].lane));
    QCOMPARE(lb.rows()[i].top, la.rows()[i].top);
  }
  QCOMPARE(lb.stepStarts().size(), la.stepStarts().size());
  QCOMPARE(lb.drawnEnd(), la.drawnEnd());
  const int last_row = int(la.rows().size()) - 1;
  la.layout(double(la.drawnBegin()), double(la.drawnEnd()), 1200, 0, last_row);
  lb.layout(double(lb.drawnBegin()), double(lb.drawnEnd()), 1200, 0, last_row);
  QCOMPARE(lb.items().size(), la.items().size());
  QVERIFY(!la.items().empty());
  for (size_t i = 0; i < la.items().size(); ++i) {
    const TimelineDrawItem &a = la.items()[i], &b = lb.items()[i];
    QCOMPARE(b.row, a.row);
    QCOMPARE(b.event, a.event);
    QCOMPARE(b.folded, a.folded);
    QCOMPARE(b.x0, a.x0);
    QCOMPARE(b.x1, a.x1);
    QCOMPARE(int(b.kind), int(a.kind));
  }
  QCOMPARE(lb.markers().size(), la.markers().size());

  // The selected collective on every member of its group: the same members and
  // ops, selected on rank 0 or on a copy (whose group ids are its own).
  for (const int rank : {0, 5, 63}) {
    int checked = 0;
    for (size_t i = 0; i < full.events(rank).size() && checked < 4; ++i) {
      if (!isAnyCollective(full.events(rank)[i].kind) || full.events(rank)[i].seq < 0) continue;
      const auto pa = collectivePeers(full, rank, static_cast<int32_t>(i));
      const auto pb = collectivePeers(copied, rank, static_cast<int32_t>(i));
      QVERIFY(pa.size() > 1);
      QCOMPARE(pb.size(), pa.size());
      for (size_t k = 0; k < pa.size(); ++k) {
        QCOMPARE(pb[k].rank, pa[k].rank);
        QCOMPARE(pb[k].index, pa[k].index);
      }
      ++checked;
    }
    QVERIFY(checked > 0);
  }
}

}  // namespace

class TestRankCopies : public QObject {
  Q_OBJECT
 private slots:
  void copiesEqualTheFullSimulation_data() {
    QTest::addColumn<QStringList>("args");
    QTest::newRow("zero3") << QStringList{"--strategy", "zero3"};
    QTest::newRow("hsdp 8x8") << QStringList{"--strategy", "hsdp", "--shard-group", "8"};
#ifndef SHARDSCOPE_UNDER_SANITIZER
    // Under a sanitizer the two above carry the copies' code: 64 simulated
    // ranks a row take seconds there.
    QTest::newRow("zero3 tp4") << QStringList{"--strategy", "zero3", "--tp", "4"};
    QTest::newRow("ddp") << QStringList{"--strategy", "ddp"};
#endif
  }
  void copiesEqualTheFullSimulation() {
    QFETCH(QStringList, args);
    const RunConfig c = smallRun(args);
    Run full_run(c);
    full_run.setReplication(false);
    const RunResult full = full_run.execute();
    Run copied_run(c);
    QVERIFY(copied_run.replicated());
    const RunResult copied = copied_run.execute();
    QCOMPARE(full.simulated_ranks, 64);
    QCOMPARE(copied.simulated_ranks, 1);

    // The result, rank by rank.
    QCOMPARE(copied.ranks.size(), full.ranks.size());
    for (size_t r = 0; r < full.ranks.size(); ++r) {
      const RankResult& a = full.ranks[r];
      const RankResult& b = copied.ranks[r];
      QCOMPARE(b.rank, a.rank);
      QCOMPARE(b.ledger.peak, a.ledger.peak);
      QCOMPARE(b.ledger.current, a.ledger.current);
      QCOMPARE(b.ledger.total_peak, a.ledger.total_peak);
      QCOMPARE(b.ledger.model_state_peak, a.ledger.model_state_peak);
      QCOMPARE(b.comm_bytes.all_gather, a.comm_bytes.all_gather);
      QCOMPARE(b.comm_bytes.reduce_scatter, a.comm_bytes.reduce_scatter);
      QCOMPARE(b.comm_bytes.all_reduce, a.comm_bytes.all_reduce);
      QCOMPARE(b.tp_comm_bytes.all_reduce, a.tp_comm_bytes.all_reduce);
      QCOMPARE(b.tp_comm_bytes.all_gather, a.tp_comm_bytes.all_gather);
      QCOMPARE(b.device_memory.has_value(), a.device_memory.has_value());
      // A copy's lists are its source's (RunResult::listsOf), not stored again.
      const RankResult& lists = copied.listsOf(int(r));
      QCOMPARE(&lists == &b, !copied.copies.isCopy(int(r)));
      if (copied.copies.isCopy(int(r))) QVERIFY(b.unit_order.empty() && b.fire_order.empty());
      QCOMPARE(full.listsOf(int(r)).rank, int(r));
      QCOMPARE(lists.tp_forward_bytes, a.tp_forward_bytes);
      QCOMPARE(lists.tp_backward_bytes, a.tp_backward_bytes);
      QCOMPARE(lists.fire_order, a.fire_order);
      QVERIFY(lists.unit_order == a.unit_order);
      QCOMPARE(b.padding_state_bytes, a.padding_state_bytes);
      QCOMPARE(b.activation_bytes_per_layer, a.activation_bytes_per_layer);
    }
    QCOMPARE(copied.last_step.size(), full.last_step.size());
    for (size_t i = 0; i < full.last_step.size(); ++i) {
      const StepMetrics& a = full.last_step[i];
      const StepMetrics& b = copied.last_step[i];
      QCOMPARE(b.rank, a.rank);
      QCOMPARE(b.step, a.step);
      QCOMPARE(b.wall_ns, a.wall_ns);
      QCOMPARE(b.compute_ns, a.compute_ns);
      QCOMPARE(b.comm_ns, a.comm_ns);
      QCOMPARE(b.exposed_comm_ns, a.exposed_comm_ns);
      QCOMPARE(b.wait_ns, a.wait_ns);
    }
    QCOMPARE(copied.mfu(), full.mfu());
    QCOMPARE(summaryJson(copied), summaryJson(full));

    // The trace: every event of every rank, then the file.
    const RunTrace ta = full_run.trace(), tb = copied_run.trace();
    QCOMPARE(tb.events.size(), ta.events.size());
    for (size_t r = 0; r < ta.events.size(); ++r) {
      const auto& ea = ta.events[r];
      const auto& eb = tb.events[r];
      QCOMPARE(eb.size(), ea.size());
      for (size_t i = 0; i < ea.size(); ++i)
        QVERIFY2(std::memcmp(&ea[i], &eb[i], sizeof(Event)) == 0,
                 qPrintable(QStringLiteral("rank %1 event %2: %3 vs %4").arg(r).arg(i).arg(eventText(ea[i]),
                                                                                         eventText(eb[i]))));
    }
    QCOMPARE(chromeTrace(tb), chromeTrace(ta));

    // The shared form (what `run --trace` writes from): one log and the rank
    // map; the writer derives each copy's events from it, byte for byte.
    const RunTrace shared = copied_run.trace(Run::CopiedRanks::Shared);
    QCOMPARE(shared.copies.copies(), 63);
    for (int r = 1; r < 64; ++r) QVERIFY(shared.events[size_t(r)].empty());
    QCOMPARE(chromeTrace(shared), chromeTrace(ta));
    QVERIFY(full_run.trace(Run::CopiedRanks::Shared).copies.empty());

    compareInspected(ta, shared);
    if (QTest::currentTestFailed()) return;

    // The CLI's tables: rank 0's rows, then one line for its copies.
    std::ostringstream text;
    printSummaryText(copied, text);
    QVERIFY(text.str().find("ranks 1\u201363: same as rank 0") != std::string::npos);
    QVERIFY(text.str().find("\n    63 ") == std::string::npos);  // no row of its own
  }

  // The memory and communication bar charts' columns: rank 0, one column for
  // the ranks equal to it, then the others (a pipeline: a pair per stage);
  // tick labels thinned to about 16.
  void barColumnsFoldTheCopies() {
    const auto ranks = [](int n) {
      std::vector<int> v(static_cast<size_t>(n));
      std::iota(v.begin(), v.end(), 0);
      return v;
    };
    const auto all = rankColumns(ranks(512), [](int, int) { return true; });
    QCOMPARE(all.size(), size_t(2));
    QCOMPARE(all[0].rank, 0);
    QVERIFY(all[0].folded.empty());
    QCOMPARE(all[1].rank, 1);
    QCOMPARE(all[1].source, 0);
    QCOMPARE(all[1].folded.size(), size_t(511));
    QCOMPARE(rankRangesText(all[1].folded), std::string("1\u2013511"));
    const auto one_differs = rankColumns(ranks(16), [](int a, int b) { return (a != 5) == (b != 5); });
    QCOMPARE(one_differs.size(), size_t(3));
    QCOMPARE(one_differs[2].rank, 5);
    QCOMPARE(rankRangesText(one_differs[1].folded), std::string("1\u20134, 6\u201315"));
    // 3 alike: no fold.
    QCOMPARE(rankColumns(ranks(16), [](int a, int b) { return a == b || (a < 4 && b < 4); }).size(), size_t(16));
    // Some ranks of a job (the files of ranks 34 and 40–59): the first shown
    // rank is the reference, and no rank outside the list gets a column.
    std::vector<int> some = {34};
    for (int r = 40; r < 60; ++r) some.push_back(r);
    const auto partial = rankColumns(some, [](int a, int b) { return (a != 41) == (b != 41); });
    QCOMPARE(partial.size(), size_t(3));
    QCOMPARE(partial[0].rank, 34);
    QCOMPARE(partial[1].rank, 40);
    QCOMPARE(rankRangesText(partial[1].folded), std::string("40, 42\u201359"));
    QCOMPARE(partial[2].rank, 41);
    // A pipeline's stages: 4 classes of 8 ranks, each its first rank's column
    // and one fold column after it.
    const auto stages = rankColumns(ranks(32), [](int a, int b) { return a / 8 == b / 8; });
    QCOMPARE(stages.size(), size_t(8));
    for (int s = 0; s < 4; ++s) {
      QCOMPARE(stages[static_cast<size_t>(2 * s)].rank, 8 * s);
      QVERIFY(stages[static_cast<size_t>(2 * s)].folded.empty());
      QCOMPARE(stages[static_cast<size_t>(2 * s + 1)].source, 8 * s);
      QCOMPARE(rankRangesText(stages[static_cast<size_t>(2 * s + 1)].folded),
               std::to_string(8 * s + 1) + "\u2013" + std::to_string(8 * s + 7));
    }
    int labelled = 0;
    for (size_t i = 0; i < 512; ++i) labelled += labelsColumn(i, 512);
    QVERIFY(labelled <= 16 && labelled >= 8);
    for (size_t i = 0; i < 8; ++i) QVERIFY(labelsColumn(i, 8));
  }
};

QTEST_APPLESS_MAIN(TestRankCopies)
#include "test_rank_copies.moc"
