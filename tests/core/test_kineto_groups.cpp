// Collective sizes and groups as a trace gives them: an all-gather in a
// 4-rank group of an 8-rank world (distributedInfo.pg_config, Process Group
// Ranks, c10d::_allgather_base_'s output dims), sizes on an enclosing
// record_param_comms, nccl:all_to_all by Input Dims, and record_param_comms'
// "wait" entries left out. Hand-worked bytes and bandwidths. One rank's file
// of a job (rank 1 of 2) draws no hang waiting for the rank not in it.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include <sstream>

#include "inspect/event_store.h"
#include "inspect/stuck_collectives.h"
#include "common/errors.h"
#include "kineto/comm_summary.h"
#include "kineto/kineto_run_trace.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"

using namespace shardscope;
using namespace shardscope::kineto;

namespace {
const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/";
}

class TestKinetoGroups : public QObject {
  Q_OBJECT
 private slots:
  void groupOfFourInWorldOfEight() {
    const TraceSet set = loadTraceSet({kData + "group_of_four.json"});
    const RankTrace& t = set.ranks[0];
    QCOMPARE(t.world_size, 8);
    QCOMPARE(t.process_groups.size(), size_t(2));
    QCOMPARE(t.process_groups[1].name, std::string("1"));
    QCOMPARE(t.process_groups[1].size, 4);
    const TraceIndex& idx = set.indexes[0];
    QCOMPARE(idx.collectives.size(), size_t(4));  // the "wait" entry is none
    // 262144 floats in, group "1" of pg_config has 4 ranks: 4 MiB out, not 8 MiB (x world 8).
    QCOMPARE(idx.collectives[0].kind, Collective::AllGather);
    QCOMPARE(idx.collectives[0].group_size, 4);
    QCOMPARE(idx.collectives[0].bytes, int64_t(262144) * 4 * 4);
    // c10d::_allgather_base_'s first Input Dims is its output: 1048576 floats.
    QCOMPARE(idx.collectives[1].kind, Collective::AllGather);
    QCOMPARE(idx.collectives[1].group_size, 4);
    QCOMPARE(idx.collectives[1].bytes, int64_t(1048576) * 4);
    // Sizes on the enclosing record_param_comms, none on the nccl:* op inside.
    QCOMPARE(idx.collectives[2].kind, Collective::ReduceScatter);
    QCOMPARE(idx.collectives[2].group_size, 4);
    QCOMPARE(idx.collectives[2].bytes, int64_t(1048576) * 4);
    QVERIFY(!idx.collectives[2].bytes_from_dims);
    // nccl:all_to_all over a SendRecv kernel, sized by its Input Dims.
    QCOMPARE(idx.collectives[3].kind, Collective::AllToAll);
    QCOMPARE(idx.collectives[3].bytes, int64_t(4096) * 4);

    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    const CommSummary& comm = job.ranks[0].comm;
    const CollectiveKindSummary* ag = nullptr;
    const CollectiveKindSummary* rs = nullptr;
    for (const auto& k : comm.kinds) {
      if (k.kind == Collective::AllGather) ag = &k;
      if (k.kind == Collective::ReduceScatter) rs = &k;
    }
    QVERIFY(ag && rs);
    QCOMPARE(ag->count, int64_t(2));
    QCOMPARE(ag->bytes, int64_t(8388608));
    QCOMPARE(ag->group_size, 4);
    // 8388608 B in 200 us: 41.94304 GB/s; busbw x (4-1)/4 = 31.45728.
    QVERIFY(qAbs(ag->algbw_gbps - 41.94304) < 1e-9);
    QVERIFY(qAbs(ag->busbw_gbps - 31.45728) < 1e-9);
    // 4194304 B in 200 us: 20.97152 GB/s; busbw x 3/4 = 15.72864.
    QVERIFY(qAbs(rs->algbw_gbps - 20.97152) < 1e-9);
    QVERIFY(qAbs(rs->busbw_gbps - 15.72864) < 1e-9);
    std::ostringstream json;
    writeAnalysisJson(job, set, json);
    QVERIFY2(json.str().find("\"busbw_gbps\": 31.457") != std::string::npos, json.str().c_str());
  }

  void hostWaitIsNoCollective() {
    const TraceSet set = loadTraceSet({kData + "host_wait.json"});
    const TraceIndex& idx = set.indexes[0];
    QCOMPARE(idx.collectives.size(), size_t(1));
    QCOMPARE(idx.collectives[0].kind, Collective::AllReduce);
    QCOMPARE(idx.collectives[0].bytes, int64_t(4096));
  }

  void groupSizeBeyondInt32IsRefused() {
    // 4294967297 = 2^32 + 1 would wrap to a group of 1.
    QTemporaryDir dir;
    const std::string path = dir.filePath("big_group.json").toStdString();
    std::ofstream(path) << R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, )"
                           R"("ts": 1, "dur": 2, "args": {"Collective name": "allreduce", "Group size": 4294967297}}]})";
    std::string error;
    try {
      TraceSetOptions o;
      o.rank_of[path] = 0;
      loadTraceSet({path}, o);
    } catch (const ConfigError& e) {
      error = e.what();
    }
    QVERIFY2(error.find("\"Group size\" as an integer in [1, 2147483647], not '4294967297'") != std::string::npos,
             error.c_str());
  }

  void oneRankOfTwoIsNoHang() {
    EventStore store;
    store.setFromTrace(kineto::importedRunTrace(loadTraceSet({kData + "rank1_of_2.json"})));
    // Events sit at their rank's index: rank 0 is a row with nothing, rank 1 the file.
    QCOMPARE(store.rankCount(), 2);
    QVERIFY(store.events(0).empty());
    bool all_reduce = false;
    for (const Event& e : store.events(1)) all_reduce |= e.kind == shardscope::EventKind::AllReduce && e.seq == 0 && e.bytes == 4096;
    QVERIFY(all_reduce);
    // Its all-reduce names group [0, 1]; rank 0 is not in the file, which is no hang.
    QVERIFY(findStuckCollectives(store).empty());
  }
};

QTEST_GUILESS_MAIN(TestKinetoGroups)
#include "test_kineto_groups.moc"
