// HTA's metrics on two hand-worked ranks (tests/data/kineto/two_ranks):
// rank 0 has integer timestamps, three ProfilerSteps (the last left out),
// an all-reduce named by record_param_comms and an all-gather found only
// through correlation -> launch -> the enclosing nccl:all_gather op; rank 1
// has float timestamps (rounded to whole µs, one kernel ends up with a
// negative duration, as in HTA) and a reduce-scatter whose args sit on the
// ncclDevKernel itself. Each number below is worked out in the comments.
#include <QtTest>

#include <cmath>
#include <sstream>

#include "kineto/hta_metrics.h"
#include "kineto/hta_rules.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"

using namespace shardscope::kineto;
using shardscope::Collective;

namespace {

const std::string kDir = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/two_ranks";

double round2(double v) { return std::round(v * 100.0) / 100.0; }

int64_t typeNs(const HtaRankMetrics& m, const std::string& label) {
  for (const auto& [l, ns] : m.kernel_type_ns)
    if (l == label) return ns;
  return -1;
}

const CollectiveKindSummary* kind(const CommSummary& c, Collective k) {
  for (const auto& s : c.kinds)
    if (s.kind == k) return &s;
  return nullptr;
}

}  // namespace

class TestKinetoHta : public QObject {
  Q_OBJECT

 private slots:
  void kernelTypesFollowHtaNameRules() {
    QCOMPARE(htaKernelType("ncclKernel_AllReduce_RING_LL_Sum_float"), HtaKernelType::Communication);
    QCOMPARE(htaKernelType("ncclDevKernel_AllGather_RING_LL"), HtaKernelType::Communication);
    QCOMPARE(htaKernelType("Memcpy DtoH (Device -> Pinned)"), HtaKernelType::Memory);
    QCOMPARE(htaKernelType("Memset (Device)"), HtaKernelType::Memory);
    QCOMPARE(htaKernelType("Event Sync"), HtaKernelType::Other);
    QCOMPARE(htaKernelType("void at::native::vectorized_elementwise_kernel<4>"), HtaKernelType::Computation);
    QCOMPARE(htaKernelType("nccl_helper"), HtaKernelType::Computation);  // ^nccl.*Kernel needs "Kernel"
  }

  void mergeGroupsLikeHta() {
    // Touching intervals merge (a new group needs ts > every earlier end).
    const auto m = mergeIntervals({{10, 20}, {20, 30}, {31, 40}, {0, 5}});
    QCOMPARE(m.size(), size_t(3));
    QCOMPARE(m[0].ts, 0);
    QCOMPARE(m[1].ts, 10);
    QCOMPARE(m[1].end, 30);
    QCOMPARE(m[2].ts, 31);
  }

  void rankZeroIntegerTimestamps() {
    const TraceSet set = loadTraceSet({kDir});
    QCOMPARE(set.ranks.size(), size_t(2));
    const JobAnalysis job = analyzeTraceSet(set, {});
    const RankAnalysis& r = job.ranks[0];
    QCOMPARE(r.rank, 0);
    QVERIFY(!r.selection.rounded);
    QVERIFY(r.selection.last_step_dropped);
    QCOMPARE(r.steps, (std::vector<int64_t>{1, 2, 3}));
    QCOMPARE(r.steps_analyzed, 2);
    // Kept: sgemm [50,150], all-reduce [100,180], fill [200,230], all-gather
    // [220,260], memcpy [240,250]; reduce_kernel [300,350] was launched in the last step.
    QCOMPARE(r.selection.kernels.size(), size_t(5));
    // Merged [50,180] [200,260]: kernel time 210, busy 190, idle 20;
    // computation [50,150] [200,230] = 130; non-compute 210 - 130 - 20 = 60.
    QCOMPARE(r.hta.kernel_time_ns, 210000);
    QCOMPARE(r.hta.idle_ns, 20000);
    QCOMPARE(r.hta.compute_ns, 130000);
    QCOMPARE(r.hta.non_compute_ns, 60000);
    QCOMPARE(round2(r.hta.idle_pct), 9.52);
    QCOMPARE(round2(r.hta.compute_pct), 61.90);
    QCOMPARE(round2(r.hta.non_compute_pct), 28.57);
    // Communication [100,180] [220,260] = 120; under computation [100,150] + [220,230] = 60.
    QCOMPARE(r.hta.comm_ns, 120000);
    QCOMPARE(r.hta.overlap_ns, 60000);
    QCOMPARE(round2(r.hta.overlap_pct), 50.00);
    // Sweep: comp 50-100 + 200-220; comp+comm 100-150 + 220-230; comm 150-180,
    // 230-240, 250-260; comm+memory 240-250.
    QCOMPARE(typeNs(r.hta, "COMPUTATION"), 70000);
    QCOMPARE(typeNs(r.hta, "COMPUTATION overlapping COMMUNICATION"), 60000);
    QCOMPARE(typeNs(r.hta, "COMMUNICATION"), 50000);
    QCOMPARE(typeNs(r.hta, "COMMUNICATION overlapping MEMORY"), 10000);
  }

  void rankZeroCollectivesFromTheCpuSide() {
    const TraceSet set = loadTraceSet({kDir});
    const RankAnalysis r = analyzeTraceSet(set, {}).ranks[0];
    // all-reduce: 1048576 Float = 4 MiB in 80 µs: algbw 52.4288 GB/s, busbw x 2(2-1)/2 = 1.
    const auto* ar = kind(r.comm, Collective::AllReduce);
    QVERIFY(ar);
    QCOMPARE(ar->count, 1);
    QCOMPARE(ar->bytes, 4194304);
    QCOMPARE(ar->group_size, 2);
    QCOMPARE(std::round(ar->algbw_gbps * 1e4) / 1e4, 52.4288);
    QCOMPARE(std::round(ar->busbw_gbps * 1e4) / 1e4, 52.4288);
    // all-gather, found only through correlation 4 -> launch -> nccl:all_gather:
    // out 2048 BFloat16 = 4096 bytes in 40 µs: algbw 0.1024, busbw x (2-1)/2.
    const auto* ag = kind(r.comm, Collective::AllGather);
    QVERIFY(ag);
    QCOMPARE(ag->bytes, 4096);
    QCOMPARE(std::round(ag->algbw_gbps * 1e4) / 1e4, 0.1024);
    QCOMPARE(std::round(ag->busbw_gbps * 1e4) / 1e4, 0.0512);
    // Exposed: all-reduce 80 - 50 = 30, all-gather 40 - 10 = 30; ties by start time.
    QCOMPARE(r.comm.longest_exposed.size(), size_t(2));
    QCOMPARE(r.comm.longest_exposed[0].kind, Collective::AllReduce);
    QCOMPARE(r.comm.longest_exposed[0].exposed_ns, 30000);
    QCOMPARE(r.comm.longest_exposed[1].kind, Collective::AllGather);
    QCOMPARE(r.comm.longest_exposed[1].exposed_ns, 30000);
  }

  void rankOneFloatTimestampsRounded() {
    const TraceSet set = loadTraceSet({kDir});
    const RankAnalysis r = analyzeTraceSet(set, {}).ranks[1];
    QCOMPARE(r.rank, 1);
    QVERIFY(r.selection.rounded);
    // Rounded: gemm [51,150], reduce-scatter [121,180], tiny [161,160] (dur -1);
    // late_kernel's launch (205.5 -> 206) is after the last step's start (201).
    QCOMPARE(r.selection.kernels.size(), size_t(3));
    // All merged: [51,180] -> kernel time 129, idle 0; computation groups
    // [51,150] and [161,160]: 99 - 1 = 98; non-compute 129 - 98 = 31.
    QCOMPARE(r.hta.kernel_time_ns, 129000);
    QCOMPARE(r.hta.idle_ns, 0);
    QCOMPARE(r.hta.compute_ns, 98000);
    QCOMPARE(r.hta.non_compute_ns, 31000);
    QCOMPARE(round2(r.hta.compute_pct), 75.97);
    QCOMPARE(round2(r.hta.non_compute_pct), 24.03);
    // Sweep 51(+2) 121(+1) 150(-2) 160(-2) 161(+2) 180(-1): running 3 only 121-150.
    QCOMPARE(r.hta.overlap_ns, 29000);
    QCOMPARE(r.hta.comm_ns, 59000);
    QCOMPARE(round2(r.hta.overlap_pct), 49.15);
    QCOMPARE(typeNs(r.hta, "COMPUTATION"), 71000);
    QCOMPARE(typeNs(r.hta, "COMPUTATION overlapping COMMUNICATION"), 29000);
    QCOMPARE(typeNs(r.hta, "COMMUNICATION"), 29000);
    // reduce-scatter from the kernel's own args: in 4096 Float = 16384 bytes in 59 µs.
    const auto* rs = kind(r.comm, Collective::ReduceScatter);
    QVERIFY(rs);
    QCOMPARE(rs->bytes, 16384);
    QCOMPARE(rs->time_ns, 59000);
    QCOMPARE(std::round(rs->busbw_gbps * 1e6) / 1e6, std::round(16384.0 / 59000.0 / 2 * 1e6) / 1e6);
    QCOMPARE(r.comm.longest_exposed.at(0).exposed_ns, 30000);
  }

  void wholeTraceKeepsTheLastStepAndExactTimes() {
    const TraceSet set = loadTraceSet({kDir});
    HtaOptions whole;
    whole.whole_trace = true;
    const JobAnalysis job = analyzeTraceSet(set, whole);
    const RankAnalysis& r0 = job.ranks[0];
    QVERIFY(!r0.selection.last_step_dropped);
    // Adds reduce_kernel [300,350]: kernel time 300, idle 60, compute 180.
    QCOMPARE(r0.hta.kernel_time_ns, 300000);
    QCOMPARE(r0.hta.idle_ns, 60000);
    QCOMPARE(r0.hta.compute_ns, 180000);
    QCOMPARE(round2(r0.hta.idle_pct), 20.00);
    const RankAnalysis& r1 = job.ranks[1];
    QVERIFY(!r1.selection.rounded);
    QCOMPARE(r1.hta.kernel_time_ns, 270000 - 50400);  // gemm starts 50.4, late_kernel ends 270
  }

  void jsonHasTheStableKeys() {
    const TraceSet set = loadTraceSet({kDir});
    std::ostringstream json;
    writeAnalysisJson(analyzeTraceSet(set, {}), set, json);
    const std::string s = json.str();
    for (const char* key : {"\"rank\": 0", "\"overlap_pct\": 50.00", "\"idle_pct\": 9.52", "\"compute_pct\": 61.90",
                            "\"non_compute_pct\": 28.57", "\"kernel_time_us\": 210.000", "\"collectives\": [",
                            "\"kind\": \"all_reduce\"", "\"bytes\": 4194304", "\"overlap_pct\": 49.15"})
      QVERIFY2(s.find(key) != std::string::npos, key);
  }
};

QTEST_GUILESS_MAIN(TestKinetoHta)
#include "test_kineto_hta.moc"
