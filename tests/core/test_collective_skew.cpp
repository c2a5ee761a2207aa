// The straggler found: tests/data/kineto/straggler_job (make_straggler_job.py)
// has 4 ranks on 2 hosts, node-b's clock 1.25 s ahead, and rank 2 starting
// every one of its 8 collectives 5 ms late (ranks 0, 1, 3 at T, T + 10 us,
// T + 30 us). Matched by Seq, node-b put on node-a's clock by the collectives'
// ends (offset -1.25 s, residual 2 us from rank 3's jittered ends), every
// wait, spread and bandwidth worked out by hand. mismatch_job: matched by
// order, each disagreement (kind, size, a missing call) reported, not matched.
#include <QtTest>

#include <sstream>

#include "kineto/collective_skew.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"

using namespace shardscope;
using namespace shardscope::kineto;

namespace {
const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/";
}

class TestCollectiveSkew : public QObject {
  Q_OBJECT
 private slots:
  void matchedBySeqAcrossHosts() {
    const TraceSet set = loadTraceSet({kData + "straggler_job"});
    QCOMPARE(set.ranks.size(), size_t(4));
    QCOMPARE(set.ranks[2].hostname, std::string("node-b"));
    QCOMPARE(set.indexes[0].collectives.size(), size_t(8));
    QCOMPARE(set.indexes[0].collectives[3].seq, int64_t(4));
    const CollectiveMatch match = matchCollectives(set);
    QCOMPARE(match.collectives.size(), size_t(8));
    QVERIFY(match.mismatches.empty());
    QCOMPARE(match.groups_by_sequence, std::vector<std::string>{"0"});
    QCOMPARE(match.collectives[1].seq, int64_t(2));
    QCOMPARE(match.collectives[1].entries.size(), size_t(4));

    const HostClocks clocks = alignHostClocks(set, match);
    QVERIFY(clocks.hosts_named);
    QCOMPARE(clocks.hosts.size(), size_t(2));
    QCOMPARE(clocks.hosts[0].host, std::string("node-a"));
    QCOMPARE(clocks.hosts[0].offset_ns, int64_t(0));
    QCOMPARE(clocks.hosts[1].host, std::string("node-b"));
    QCOMPARE(clocks.hosts[1].ranks, (std::vector<int>{2, 3}));
    // Node-b's ends read 1.25 s ahead: 5 collectives say -1250000 us, 3 say -1250002 us.
    QCOMPARE(clocks.hosts[1].offset_ns, int64_t(-1250000000));
    QCOMPARE(clocks.hosts[1].residual_ns, int64_t(2000));
    QCOMPARE(clocks.hosts[1].collectives, int64_t(8));
  }

  void plantedStragglerFound() {
    const TraceSet set = loadTraceSet({kData + "straggler_job"});
    const CollectiveSkew skew = computeCollectiveSkew(set);
    QCOMPARE(skew.rows.size(), size_t(8));
    for (const CollectiveSkewRow& r : skew.rows) {
      QCOMPARE(r.ranks, (std::vector<int>{0, 1, 2, 3}));
      QCOMPARE(r.last_rank, 2);
      QCOMPARE(r.start_spread_ns, int64_t(5000000));
      QCOMPARE(r.wait_ns, (std::vector<int64_t>{5000000, 4990000, 0, 4970000}));
      QCOMPARE(r.group_size, 4);
    }
    // Collective 0: all-reduce of 1048576 floats, rank 2's kernel 400 us: 4194304 B / 400 us.
    const CollectiveSkewRow& ar = skew.rows[0];
    QCOMPARE(ar.kind, Collective::AllReduce);
    QCOMPARE(ar.index, int64_t(0));
    QCOMPARE(ar.seq, int64_t(1));
    QCOMPARE(ar.pg, std::string("0"));
    QCOMPARE(ar.bytes, int64_t(4194304));
    QCOMPARE(ar.duration_ns, int64_t(400000));
    QVERIFY(qAbs(ar.algbw_gbps - 10.48576) < 1e-9);
    QVERIFY(qAbs(ar.busbw_gbps - 10.48576 * 1.5) < 1e-9);  // 2(n-1)/n, n = 4
    // Collective 1: all-gather, 2097152 floats out (8 MiB) in 600 us; busbw x 3/4.
    const CollectiveSkewRow& ag = skew.rows[1];
    QCOMPARE(ag.kind, Collective::AllGather);
    QCOMPARE(ag.bytes, int64_t(8388608));
    QVERIFY(qAbs(ag.algbw_gbps - 8388608.0 / 600000.0) < 1e-9);
    QVERIFY(qAbs(ag.busbw_gbps - 8388608.0 / 600000.0 * 0.75) < 1e-9);
    // Collective 2: reduce-scatter, 8 MiB in, 500 us.
    QCOMPARE(skew.rows[2].kind, Collective::ReduceScatter);
    QCOMPARE(skew.rows[2].bytes, int64_t(8388608));
    QCOMPARE(skew.rows[2].duration_ns, int64_t(500000));
    // Rows by first arrival: rank 0's start on node-a's clock, the set's origin at the first step.
    QCOMPARE(skew.rows[0].start_ns, int64_t(1000000));
    QCOMPARE(skew.rows[4].start_ns, int64_t(101000000));

    QCOMPARE(skew.ranks.size(), size_t(4));
    const RankStraggling& r2 = skew.ranks[2];
    QCOMPARE(r2.rank, 2);
    QCOMPARE(r2.collectives, int64_t(8));
    QCOMPARE(r2.arrived_last, int64_t(8));
    QCOMPARE(r2.arrived_last_pct, 100.0);
    QCOMPARE(r2.median_wait_imposed_ns, int64_t(4970000));  // 5000 - 30 us: rank 3 was the next-latest
    QCOMPARE(r2.median_wait_ns, int64_t(0));
    QCOMPARE(skew.ranks[0].arrived_last, int64_t(0));
    QCOMPARE(skew.ranks[0].median_wait_ns, int64_t(5000000));
    QCOMPARE(skew.ranks[1].median_wait_ns, int64_t(4990000));
    QCOMPARE(skew.ranks[3].median_wait_ns, int64_t(4970000));
    QCOMPARE(skew.worstRank(), 2);
  }

  void reportedInTextJsonAndCsv() {
    const TraceSet set = loadTraceSet({kData + "straggler_job"});
    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    std::ostringstream text, json, csv;
    printAnalysisText(job, set, text);
    writeAnalysisJson(job, set, json);
    writeCollectiveSkewCsv(job.skew, csv);
    const std::string t = text.str(), j = json.str(), c = csv.str();
    QVERIFY2(t.find("rank 2 arrived last in 100.0 % of collectives (8 of 8), 4.970 ms median wait imposed") !=
                 std::string::npos, t.c_str());
    QVERIFY2(t.find("host \"node-b\": offset -1250000.000 us from 8 collectives, uncertain by +/- 2.000 us") !=
                 std::string::npos, t.c_str());
    QVERIFY2(j.find("\"collective_skew\": {") != std::string::npos, j.c_str());
    QVERIFY2(j.find("{\"index\": 0, \"pg\": \"0\", \"seq\": 1, \"kind\": \"all_reduce\", \"bytes\": 4194304, "
                    "\"group_size\": 4, \"start_us\": 1000.000, \"duration_us\": 400.000, \"algbw_gbps\": 10.486, "
                    "\"busbw_gbps\": 15.729, \"start_spread_us\": 5000.000, \"last_rank\": 2, \"wait_us_by_rank\": "
                    "{\"0\": 5000.000, \"1\": 4990.000, \"2\": 0.000, \"3\": 4970.000}}") != std::string::npos,
             j.c_str());
    QVERIFY2(j.find("{\"rank\": 2, \"collectives\": 8, \"arrived_last\": 8, \"arrived_last_pct\": 100.00, "
                    "\"median_wait_imposed_us\": 4970.000, \"median_wait_us\": 0.000}") != std::string::npos,
             j.c_str());
    QVERIFY2(c.find("index,pg,seq,kind,bytes,group_size,ranks,start_us,duration_us,algbw_gbps,busbw_gbps,"
                    "start_spread_us,last_rank,wait_us_rank0,wait_us_rank1,wait_us_rank2,wait_us_rank3\n") == 0,
             c.c_str());
    QVERIFY2(c.find("\n1,0,2,all_gather,8388608,4,4,21000.000,600.000,13.981,10.486,5000.000,2,5000.000,4990.000,"
                    "0.000,4970.000\n") != std::string::npos, c.c_str());
    QCOMPARE(std::count(c.begin(), c.end(), '\n'), 9L);
  }

  void mismatchesReportedNotMatched() {
    const TraceSet set = loadTraceSet({kData + "mismatch_job"});
    const CollectiveSkew skew = computeCollectiveSkew(set);
    QVERIFY(skew.groups_by_sequence.empty());  // no Seq: by order
    QVERIFY(!skew.clocks.hosts_named);
    QCOMPARE(skew.clocks.hosts.size(), size_t(1));
    QCOMPARE(skew.rows.size(), size_t(1));
    QCOMPARE(skew.rows[0].kind, Collective::AllReduce);
    QCOMPARE(skew.rows[0].last_rank, 1);
    QCOMPARE(skew.rows[0].wait_ns, (std::vector<int64_t>{100000, 0}));
    QCOMPARE(skew.mismatches.size(), size_t(3));
    QCOMPARE(skew.mismatches[0].index, int64_t(1));
    QCOMPARE(skew.mismatches[0].what, std::string("rank 0: all_reduce 4.00 MiB; rank 1: reduce_scatter 8.00 MiB"));
    QCOMPARE(skew.mismatches[1].what, std::string("rank 1: all_gather 4.00 MiB; rank 0: all_gather 8.00 MiB"));
    QCOMPARE(skew.mismatches[2].what,
             std::string("rank 0: all_reduce 1.00 MiB; rank 1: none (fewer calls in this group)"));
    std::ostringstream text;
    printCollectiveSkewText(skew, text);
    QVERIFY2(text.str().find("the traces name no host (distributedInfo.hostname): all ranks taken as one host's "
                             "clock") != std::string::npos, text.str().c_str());
    QVERIFY2(text.str().find("3 collectives the ranks disagree on (left out):\n    group \"0\" #1: rank 0: "
                             "all_reduce 4.00 MiB; rank 1: reduce_scatter 8.00 MiB") != std::string::npos,
             text.str().c_str());
  }
};

QTEST_APPLESS_MAIN(TestCollectiveSkew)
#include "test_collective_skew.moc"
