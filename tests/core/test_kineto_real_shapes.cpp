// Trace shapes real PyTorch jobs leave (issue 50), each written from the
// documented Kineto format in tests/data/kineto/real_shapes: a group's size
// from the op's own input and output before "Process Group Ranks", "Group
// size" and pg_config; record_param_comms' sizes around an arg-less
// nccl:* annotation with fractional timestamps; an arg-less outer
// record_param_comms around nccl:all_to_all in a profile without GPU
// activity; a reported step for one rank's file whose rank is not 0; files
// of two jobs refused. Bytes and bandwidths worked by hand in the comments.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "inspect/reported_step.h"
#include "kineto/comm_summary.h"
#include "kineto/kineto_run_trace.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"

using namespace shardscope;
using namespace shardscope::kineto;

namespace {

const std::string kShapes = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/real_shapes/";

const CollectiveKindSummary* kindOf(const CommSummary& c, Collective k) {
  for (const auto& s : c.kinds)
    if (s.kind == k) return &s;
  return nullptr;
}

// One rank's file: `steps` ProfilerSteps of 1000 µs from `t0_us`, each with a kernel.
std::string writeRank(const QTemporaryDir& dir, const std::string& name, int rank, int world, int64_t t0_us, int steps,
                      const std::string& pg_config = "") {
  const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
  std::ofstream f(path);
  f << "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " << rank
    << ", \"world_size\": " << world << pg_config << "},\n\"traceEvents\": [\n";
  for (int s = 0; s < steps; ++s) {
    const int64_t t = t0_us + s * 1000;
    f << (s ? ",\n" : "") << "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" << s
      << "\", \"pid\": 5, \"tid\": 5, \"ts\": " << t << ", \"dur\": 900},\n"
      << "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 5, \"tid\": 5, \"ts\": "
      << t + 10 << ", \"dur\": 5, \"args\": {\"correlation\": " << s + 1 << "}},\n"
      << "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": " << t + 50
      << ", \"dur\": 400, \"args\": {\"stream\": 7, \"correlation\": " << s + 1 << "}}";
  }
  f << "]}\n";
  return path;
}

std::string loadError(const std::vector<std::string>& files, TraceSetOptions o = {}) {
  try {
    loadTraceSet(files, o);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestKinetoRealShapes : public QObject {
  Q_OBJECT

 private slots:
  void allGatherGroupFromItsOwnInputAndOutput() {
    // Rank 5 of 128: 16777216 int8 in, 1073741824 out, "Group size": 128. The
    // op's own sizes say 64; the world (and that Group size) said 128.
    const TraceSet set = loadTraceSet({kShapes + "allgather_group_from_dims.json"});
    const TraceIndex& idx = set.indexes[0];
    QCOMPARE(idx.collectives.size(), size_t(2));
    // c10d::_allgather_base_'s Input Dims [[1073741824], [16777216], ...] (output first).
    QCOMPARE(idx.collectives[0].kind, Collective::AllGather);
    QCOMPARE(idx.collectives[0].group_size, 64);
    QCOMPARE(idx.collectives[0].bytes, int64_t(1073741824));
    // record_param_comms' In / Out msg nelems 16777216 / 1073741824.
    QCOMPARE(idx.collectives[1].group_size, 64);
    QCOMPARE(idx.collectives[1].bytes, int64_t(1073741824));
    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    const CollectiveKindSummary* ag = kindOf(job.ranks[0].comm, Collective::AllGather);
    QVERIFY(ag);
    QCOMPARE(ag->group_size, 64);
    // 2 GiB in 4000 µs: algbw 536.870912 GB/s; busbw x 63/64 = 528.482304 (x 127/128 = 532.67 with 128).
    QVERIFY(qAbs(ag->algbw_gbps - 536.870912) < 1e-6);
    QVERIFY2(qAbs(ag->busbw_gbps - 528.482304) < 1e-6, QByteArray::number(ag->busbw_gbps));
  }

  void groupOfEightInWorldOfSixteen() {
    // "Process Group Ranks" lists 8 ranks while "Group size" says 16: the list wins;
    // the all-gather names only group "1", whose pg_config entry has 8 ranks.
    const TraceSet set = loadTraceSet({kShapes + "group_of_8_in_16.json"});
    const TraceIndex& idx = set.indexes[0];
    QCOMPARE(idx.collectives.size(), size_t(2));
    QCOMPARE(idx.collectives[0].kind, Collective::ReduceScatter);
    QCOMPARE(idx.collectives[0].group_size, 8);
    QCOMPARE(idx.collectives[1].kind, Collective::AllGather);
    QCOMPARE(idx.collectives[1].group_size, 8);
  }

  void recordParamCommsAroundArglessAnnotation() {
    // "Collective name": "allreduce" / "broadcast" (no underscore), "dtype": "Float",
    // In / Out msg nelems, fractional ns timestamps, an arg-less nccl:* user annotation inside.
    const TraceSet set = loadTraceSet({kShapes + "allreduce_fractional_ns.json"});
    const TraceIndex& idx = set.indexes[0];
    QCOMPARE(idx.collectives.size(), size_t(2));
    QCOMPARE(idx.collectives[0].kind, Collective::AllReduce);
    QCOMPARE(idx.collectives[0].bytes, int64_t(1048576) * 4);
    QCOMPARE(idx.collectives[0].group_size, 1);
    QCOMPARE(idx.collectives[0].seq, int64_t(1));
    QCOMPARE(idx.collectives[1].kind, Collective::Broadcast);
    QCOMPARE(idx.collectives[1].bytes, int64_t(262144) * 4);
    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    const CollectiveKindSummary* ar = kindOf(job.ranks[0].comm, Collective::AllReduce);
    const CollectiveKindSummary* bc = kindOf(job.ranks[0].comm, Collective::Broadcast);
    QVERIFY(ar && bc);
    QCOMPARE(ar->sized, int64_t(1));
    QCOMPARE(ar->bytes, int64_t(4194304));
    QCOMPARE(bc->sized, int64_t(1));
    std::ostringstream text;
    printAnalysisText(job, set, text);
    QVERIFY2(text.str().find("unknown size") == std::string::npos, text.str().c_str());
  }

  void allToAllUnderArglessRecordParamComms() {
    // No GPU activity: 6 x (arg-less record_param_comms around nccl:all_to_all with
    // Input Dims [[8, 1024, 8816]] float) and 6 arg-less record_param_comms (waits).
    const TraceSet set = loadTraceSet({kShapes + "all_to_all_outer_argless.json"});
    const TraceIndex& idx = set.indexes[0];
    QCOMPARE(idx.collectives.size(), size_t(6));
    for (const TraceCollective& c : idx.collectives) {
      QCOMPARE(c.kind, Collective::AllToAll);
      QCOMPARE(c.bytes, int64_t(8) * 1024 * 8816 * 4);  // 288882688
      QVERIFY(c.bytes_from_dims);
    }
    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    QCOMPARE(job.ranks[0].comm.kinds.size(), size_t(1));
    QCOMPARE(job.ranks[0].comm.kinds[0].count, int64_t(6));
  }

  void batchIsendIrecvIsOneCoalescedGroup() {
    // Two batch_isend_irecv groups (make_batch_isend_irecv.py): each a run of c10d::send /
    // c10d::recv_ ops around record_param_comms "send"/"recv" (sizes, no launch), then
    // nccl:coalesced around record_param_comms "coalesced" (0 elements) launching one
    // ncclDevKernel_SendRecv. Group 1: 2 x 1048576 floats = 8388608 bytes; group 2:
    // 2 x 524288 bf16 + 1024 floats = 2097152 + 4096 = 2101248. Then one all-reduce.
    const TraceSet set = loadTraceSet({kShapes + "batch_isend_irecv.json"});
    const TraceIndex& idx = set.indexes[0];
    QCOMPARE(idx.collectives.size(), size_t(3));
    QCOMPARE(idx.collectives[0].kind, Collective::SendRecv);
    QVERIFY(idx.collectives[0].coalesced);
    QCOMPARE(idx.collectives[0].coalesced_ops, 2);
    QCOMPARE(idx.collectives[0].bytes, int64_t(8388608));
    QCOMPARE(idx.collectives[1].kind, Collective::SendRecv);
    QCOMPARE(idx.collectives[1].coalesced_ops, 3);
    QCOMPARE(idx.collectives[1].bytes, int64_t(2101248));
    QCOMPARE(idx.collectives[2].kind, Collective::AllReduce);
    QVERIFY(!idx.collectives[2].coalesced);
    QCOMPARE(idx.collectives[2].bytes, int64_t(1048576));
    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    const CollectiveKindSummary* p2p = kindOf(job.ranks[0].comm, Collective::SendRecv);
    QVERIFY(p2p);
    QCOMPARE(p2p->count, int64_t(2));
    QCOMPARE(p2p->coalesced_groups, int64_t(2));
    QCOMPARE(p2p->coalesced_ops, int64_t(5));
    QCOMPARE(p2p->sized, int64_t(2));
    QCOMPARE(p2p->bytes, int64_t(8388608 + 2101248));
    QVERIFY(!kindOf(job.ranks[0].comm, Collective::Unknown));
    std::ostringstream text;
    printAnalysisText(job, set, text);
    QVERIFY2(text.str().find("2 of them coalesced groups (batch_isend_irecv, nccl:coalesced) of 5 point-to-point ops") !=
                 std::string::npos, text.str().c_str());
    std::ostringstream js;
    writeAnalysisJson(job, set, js);
    QVERIFY2(js.str().find("\"coalesced_groups\": 2, \"coalesced_ops\": 5") != std::string::npos, js.str().c_str());

    // The same without GPU activity (a profile of CPU ops only): nccl:coalesced is the call, not
    // an unknown collective, sized by its members.
    QTemporaryDir dir;
    std::ifstream in(kShapes + "batch_isend_irecv.json");
    std::string host_only, line;
    while (std::getline(in, line))
      if (line.find("\"cat\": \"kernel\"") == std::string::npos && line.find("\"cat\": \"cuda_runtime\"") == std::string::npos)
        host_only += line + "\n";
    const size_t last_comma = host_only.rfind("},\n  ]");  // the last event kept before "]"
    if (last_comma != std::string::npos) host_only.erase(last_comma + 1, 1);
    const std::string path = dir.filePath("host_only.json").toStdString();
    std::ofstream(path) << host_only;
    const TraceSet host = loadTraceSet({path});
    const TraceIndex& h = host.indexes[0];
    QCOMPARE(h.collectives.size(), size_t(3));
    QCOMPARE(h.collectives[0].kind, Collective::SendRecv);
    QCOMPARE(h.collectives[0].coalesced_ops, 2);
    QCOMPARE(h.collectives[0].bytes, int64_t(8388608));
    QCOMPARE(h.collectives[1].bytes, int64_t(2101248));
    QCOMPARE(h.collectives[2].kind, Collective::AllReduce);
  }

  void oneRankFileNotRankZeroHasAReportedStep() {
    // Rank 3 of 4, five steps: ranks 0-2 are not in view, so the step every
    // rank in view completed is step 3 (the last, #4, left out as HTA does).
    QTemporaryDir dir;
    const std::string path = writeRank(dir, "rank3.json", 3, 4, 1000, 5);
    const RunTrace run = importedRunTrace(loadTraceSet({path}));
    QCOMPARE(run.ranks, 4);
    const ReportedStep reported = reportedStepMetrics(run.events, run.imported.get());
    QCOMPARE(reported.step, 3);
    QCOMPARE(reported.ranks.size(), size_t(1));
    QCOMPARE(reported.ranks[0].rank, 3);
    // A ShardScope run's rank without a completed step still has none.
    QCOMPARE(reportedStep({{1, 2}, {}}, nullptr), -1);
  }

  void filesOfTwoJobsAreRefused() {
    QTemporaryDir dir;
    // Different world sizes.
    const std::string a = writeRank(dir, "a.json", 0, 8, 1759000000000000, 2);
    const std::string b = writeRank(dir, "b.json", 1, 16, 1759000000000000, 2);
    std::string error = loadError({a, b});
    QVERIFY2(error.find("rank 1 (" + b + "): distributedInfo.world_size 16, but rank 0 (" + a + ") says 8") !=
                 std::string::npos, error.c_str());
    QVERIFY2(error.find("--merge-unrelated") != std::string::npos, error.c_str());
    // Asked to merge anyway: a warning, and the job loads.
    TraceSetOptions merge;
    merge.merge_unrelated = true;
    const TraceSet set = loadTraceSet({a, b}, merge);
    QCOMPARE(set.ranks.size(), size_t(2));
    QCOMPARE(set.notes.size(), size_t(1));
    QVERIFY(set.notes[0].rfind("warning: rank 1", 0) == 0);
    // Same world, clocks 8.5 days apart (735003243 ms).
    const std::string c = writeRank(dir, "c.json", 1, 8, 1759000000000000 + 735003243000, 2);
    error = loadError({a, c});
    QVERIFY2(error.find("starts 8.5 days after rank 0") != std::string::npos, error.c_str());
    // Same world, one process group of two sizes.
    const std::string d = writeRank(dir, "d.json", 0, 8, 1000, 2,
                                    ", \"pg_config\": [{\"pg_name\": \"1\", \"pg_desc\": \"shard\", \"pg_size\": 4}]");
    const std::string e = writeRank(dir, "e.json", 1, 8, 1000, 2,
                                    ", \"pg_config\": [{\"pg_name\": \"1\", \"pg_desc\": \"shard\", \"pg_size\": 2}]");
    error = loadError({d, e});
    QVERIFY2(error.find("distributedInfo.pg_config group \"1\" has 2 ranks, but rank 0") != std::string::npos,
             error.c_str());
    // One job's ranks: no conflict.
    const std::string f = writeRank(dir, "f.json", 1, 8, 1759000000000000 + 2000, 2);
    QVERIFY(loadTraceSet({a, f}).notes.empty());
  }
};

QTEST_GUILESS_MAIN(TestKinetoRealShapes)
#include "test_kineto_real_shapes.moc"
