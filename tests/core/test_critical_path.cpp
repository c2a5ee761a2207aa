// Critical path analysis on hand-worked fixtures (tests/data/kineto/critical_path,
// the multi-rank ones written by make_critical_path_jobs.py). Every number of
// analyze --json's "critical_path" key is checked against the walk worked out
// below: from the node that bounds the step's end, back through each node's
// latest predecessor (times in us since the set's origin).
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/errors.h"
#include "kineto/critical_path.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"

using namespace shardscope;
using namespace shardscope::kineto;
using nlohmann::json;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/critical_path/";

struct Seg {
  int rank;
  const char* kind;
  const char* name;
  double start_us, dur_us;
  const char* category;
  int waiting_for = -1;
};

// compute, communication, launch_cpu, idle, waiting_for_rank (us).
using Categories = std::array<double, 5>;

json criticalPathJson(const std::string& input, HtaOptions options = {}) {
  const TraceSet set = loadTraceSet({input});
  const JobAnalysis job = analyzeTraceSet(set, options);
  std::ostringstream out;
  writeAnalysisJson(job, set, out);
  return json::parse(out.str()).at("critical_path");
}

void checkCategories(const json& by, const Categories& want) {
  QCOMPARE(by.size(), size_t(5));
  QCOMPARE(by.at("compute").get<double>(), want[0]);
  QCOMPARE(by.at("communication").get<double>(), want[1]);
  QCOMPARE(by.at("launch_cpu").get<double>(), want[2]);
  QCOMPARE(by.at("idle").get<double>(), want[3]);
  QCOMPARE(by.at("waiting_for_rank").get<double>(), want[4]);
}

void checkSegments(const json& segs, const std::vector<Seg>& want) {
  QCOMPARE(segs.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const json& s = segs[i];
    const Seg& w = want[i];
    const QByteArray where = QByteArray("segment ") + QByteArray::number(qulonglong(i)) + ": " + s.dump().c_str();
    QVERIFY2(s.at("rank").get<int>() == w.rank, where);
    QVERIFY2(s.at("kind").get<std::string>() == w.kind, where);
    QVERIFY2(s.at("name").get<std::string>() == w.name, where);
    QVERIFY2(s.at("start_us").get<double>() == w.start_us, where);
    QVERIFY2(s.at("dur_us").get<double>() == w.dur_us, where);
    QVERIFY2(s.at("category").get<std::string>() == w.category, where);
    if (w.waiting_for >= 0) QVERIFY2(s.at("waiting_for_rank").get<int>() == w.waiting_for, where);
    else QVERIFY2(!s.contains("waiting_for_rank"), where);
    QCOMPARE(s.size(), size_t(w.waiting_for >= 0 ? 7 : 6));
  }
}

void checkGraph(const json& g, int64_t nodes, int64_t edges, int64_t cross, int64_t sync, int64_t stream_wait) {
  QCOMPARE(g.at("nodes").get<int64_t>(), nodes);
  QCOMPARE(g.at("edges").get<int64_t>(), edges);
  QCOMPARE(g.at("cross_rank_edges").get<int64_t>(), cross);
  QCOMPARE(g.at("sync_edges").get<int64_t>(), sync);
  QCOMPARE(g.at("stream_wait_edges").get<int64_t>(), stream_wait);
  QCOMPARE(g.at("host_collectives_skipped").get<int64_t>(), int64_t(0));
}

void checkPerRank(const json& r, int rank, double start, double end, const Categories& want) {
  QCOMPARE(r.at("rank").get<int>(), rank);
  QCOMPARE(r.at("start_us").get<double>(), start);
  QCOMPARE(r.at("end_us").get<double>(), end);
  QCOMPARE(r.at("total_us").get<double>(), end - start);
  checkCategories(r.at("by_category"), want);
}

// The categories add up to the step on every rank's path; the shown path's segments tile it.
void checkTiling(const CriticalPath& p) {
  QVERIFY(p.unavailable.empty());
  for (size_t i = 0; i < p.ranks.size(); ++i) {
    const RankCriticalPath& r = p.ranks[i];
    int64_t sum = 0;
    for (int64_t ns : r.by_category) sum += ns;
    QCOMPARE(sum, r.totalNs());
    QCOMPARE(r.segments.size(), i == p.shown ? size_t(r.segment_count) : size_t(0));
    int64_t at = r.start_ns;
    for (const PathSegment& s : r.segments) {
      QCOMPARE(s.start_ns, at);
      QVERIFY(s.dur_ns > 0);
      at += s.dur_ns;
    }
    if (i == p.shown) QCOMPARE(at, r.end_ns);
  }
}

}  // namespace

class TestCriticalPath : public QObject {
  Q_OBJECT

 private slots:
  // One rank, launch-limited: three tiny kernels (3 us each) launched by 10 us
  // launch calls inside ops, a cudaDeviceSynchronize that finds the GPU done.
  // ProfilerStep#1 [0, 100] (#2, the last, is left out as HTA does). The step
  // ends at the step op's end (100; the last kernel ends at 85), whose latest
  // predecessor is its last child, the sync [88, 92]; the sync's own start (88)
  // is later than add_kernel's end (85), so the path stays on the CPU:
  //   [0,5] step  [5,10] linear  [10,20] launch  [20,25] linear  [25,30] step
  //   [30,35] relu  [35,45] launch  [45,50] relu  [50,55] step  [55,70] add
  //   [70,80] launch  [80,85] add  [85,88] step  [88,92] sync  [92,100] step
  // All 100 us launch_cpu. Graph: 8 CPU ops + 3 kernels = 22 nodes; edges: 5
  // under the step, 3 under each op with a launch (9), the sync's span, 3
  // launch + 3 kernel + 2 stream-order edges, 1 sync edge = 24.
  void cpuBound() {
    const json cp = criticalPathJson(kData + "cpu_bound.json");
    QCOMPARE(cp.at("step").get<int64_t>(), int64_t(1));
    QCOMPARE(cp.at("step_chosen").get<bool>(), false);
    QCOMPARE(cp.at("rank").get<int>(), 0);
    QCOMPARE(cp.at("rank_chosen").get<bool>(), false);
    QCOMPARE(cp.at("start_us").get<double>(), 0.0);
    QCOMPARE(cp.at("end_us").get<double>(), 100.0);
    QCOMPARE(cp.at("total_us").get<double>(), 100.0);
    checkCategories(cp.at("by_category"), {0, 0, 100, 0, 0});
    QCOMPARE(cp.at("segments_total").get<int64_t>(), int64_t(15));
    QCOMPARE(cp.at("segments_cap").get<int64_t>(), int64_t(kCriticalPathJsonSegments));
    QCOMPARE(cp.at("segments_capped").get<bool>(), false);
    const char* L = "launch_cpu";
    checkSegments(cp.at("segments"), {{0, "user_annotation", "ProfilerStep#1", 0, 5, L},
                                      {0, "cpu_op", "aten::linear", 5, 5, L},
                                      {0, "cuda_runtime", "cudaLaunchKernel", 10, 10, L},
                                      {0, "cpu_op", "aten::linear", 20, 5, L},
                                      {0, "user_annotation", "ProfilerStep#1", 25, 5, L},
                                      {0, "cpu_op", "aten::relu", 30, 5, L},
                                      {0, "cuda_runtime", "cudaLaunchKernel", 35, 10, L},
                                      {0, "cpu_op", "aten::relu", 45, 5, L},
                                      {0, "user_annotation", "ProfilerStep#1", 50, 5, L},
                                      {0, "cpu_op", "aten::add", 55, 15, L},
                                      {0, "cuda_runtime", "cudaLaunchKernel", 70, 10, L},
                                      {0, "cpu_op", "aten::add", 80, 5, L},
                                      {0, "user_annotation", "ProfilerStep#1", 85, 3, L},
                                      {0, "cuda_runtime", "cudaDeviceSynchronize", 88, 4, L},
                                      {0, "user_annotation", "ProfilerStep#1", 92, 8, L}});
    QCOMPARE(cp.at("per_rank").size(), size_t(1));
    checkPerRank(cp.at("per_rank")[0], 0, 0, 100, {0, 0, 100, 0, 0});
    checkGraph(cp.at("graph"), 22, 24, 0, 1, 0);
  }

  // One rank, GPU-bound: three gemms of 40, 40 and 25 us queued by 4 us
  // launches; cudaStreamSynchronize [32, 120] blocks on the last (ends 115).
  // ProfilerStep#1 [0, 130]. Back from the step's end (130): its last child
  // the sync ends at 120, whose latest predecessor is gemm_c's end (115, later
  // than the sync's start 32): [115,120] sync_wait. gemm_c [90,115] starts 4 us
  // after gemm_b's end (86; its launch was at 24): [86,90] the stream idle.
  // gemm_b starts on gemm_a's end (46), gemm_a 2 us after its launch at 4:
  //   [0,2] step  [2,4] mm  [4,6] launch delay  [6,46] gemm_a  [46,86] gemm_b
  //   [86,90] idle  [90,115] gemm_c  [115,120] sync  [120,130] step
  // compute 105, launch_cpu 2+2+2+5+10 = 21, idle 4: 130.
  void gpuBound() {
    const json cp = criticalPathJson(kData + "gpu_bound.json");
    QCOMPARE(cp.at("step").get<int64_t>(), int64_t(1));
    QCOMPARE(cp.at("rank").get<int>(), 0);
    QCOMPARE(cp.at("start_us").get<double>(), 0.0);
    QCOMPARE(cp.at("end_us").get<double>(), 130.0);
    QCOMPARE(cp.at("total_us").get<double>(), 130.0);
    checkCategories(cp.at("by_category"), {105, 0, 21, 4, 0});
    QCOMPARE(cp.at("segments_total").get<int64_t>(), int64_t(9));
    QCOMPARE(cp.at("segments_capped").get<bool>(), false);
    checkSegments(cp.at("segments"), {{0, "user_annotation", "ProfilerStep#1", 0, 2, "launch_cpu"},
                                      {0, "cpu_op", "aten::mm", 2, 2, "launch_cpu"},
                                      {0, "launch_delay", "cudaLaunchKernel", 4, 2, "launch_cpu"},
                                      {0, "kernel", "gemm_a", 6, 40, "compute"},
                                      {0, "kernel", "gemm_b", 46, 40, "compute"},
                                      {0, "gap", "(GPU stream idle)", 86, 4, "idle"},
                                      {0, "kernel", "gemm_c", 90, 25, "compute"},
                                      {0, "sync_wait", "cudaStreamSynchronize", 115, 5, "launch_cpu"},
                                      {0, "user_annotation", "ProfilerStep#1", 120, 10, "launch_cpu"}});
    checkPerRank(cp.at("per_rank")[0], 0, 0, 130, {105, 0, 21, 4, 0});
    checkGraph(cp.at("graph"), 22, 24, 0, 1, 0);
  }

  // GPU work launched in the previous step bounds this one. ProfilerStep#2 [50, 100] (the last
  // analysed: #3 is left out) launches gemm_small at 57; it queues behind gemm_big [20, 80], launched
  // at 10 in step 1, and runs [80, 90]; cudaDeviceSynchronize [70, 95] waits for it. Back from the
  // step op's end (100, later than gemm_small's 90):
  //   [95,100] step  [90,95] sync_wait  [80,90] gemm_small  [50,80] gemm_big (from the step's start)
  // compute 40, launch_cpu 10. Graph: 4 CPU ops + 2 GPU events = 12 nodes; 7 CPU edges, a launch,
  // the carry from the step's start, 2 spans, 1 stream order, 1 sync = 13.
  void carriedGpuWork() {
    const json cp = criticalPathJson(kData + "carried_work.json");
    QCOMPARE(cp.at("step").get<int64_t>(), int64_t(2));
    QCOMPARE(cp.at("rank").get<int>(), 0);
    QCOMPARE(cp.at("start_us").get<double>(), 50.0);
    QCOMPARE(cp.at("end_us").get<double>(), 100.0);
    QCOMPARE(cp.at("total_us").get<double>(), 50.0);
    checkCategories(cp.at("by_category"), {40, 0, 10, 0, 0});
    QCOMPARE(cp.at("segments_total").get<int64_t>(), int64_t(4));
    checkSegments(cp.at("segments"), {{0, "kernel", "gemm_big", 50, 30, "compute"},
                                      {0, "kernel", "gemm_small", 80, 10, "compute"},
                                      {0, "sync_wait", "cudaDeviceSynchronize", 90, 5, "launch_cpu"},
                                      {0, "user_annotation", "ProfilerStep#2", 95, 5, "launch_cpu"}});
    checkPerRank(cp.at("per_rank")[0], 0, 50, 100, {40, 0, 10, 0, 0});
    checkGraph(cp.at("graph"), 12, 13, 0, 1, 0);
  }

  // Two ranks of one host. Each: ProfilerStep#1 [0, 100], a gemm launched at
  // 4 (starting at 8), an all-reduce whose kernel waits (cudaStreamWaitEvent
  // at 11) for the gemm and is launched at 13, cudaDeviceSynchronize [20, 85].
  // Rank 0's gemm runs 20 us, rank 1's 50: rank 1 starts the all-reduce at 60,
  // rank 0 at 30; both copies end at 80. Both steps end at 100: rank 0's path
  // is shown (ties: the lower rank). Rank 0, back from 100:
  //   [85,100] step  [80,85] sync_wait  [60,80] communication (after rank 1
  //   arrived)  [30,60] waiting for rank 1  [28,30] stream waiting on the
  //   gemm  [8,28] gemm  [4,8] launch delay  [2,4] mm  [0,2] step
  // compute 20, communication 20, launch_cpu 2+2+4+5+15 = 28, idle 2, waiting 30.
  // Rank 1 (the last to arrive: its copy is all communication): compute 50,
  // communication 20, launch_cpu 28, idle 2. Graph: 9 activities a rank (18
  // nodes) + rank 0's arrived node = 37; 19 edges a rank + waiting and
  // cross-rank = 40.
  void lateRankWaitedFor() {
    const json cp = criticalPathJson(kData + "late_rank");
    QCOMPARE(cp.at("step").get<int64_t>(), int64_t(1));
    QCOMPARE(cp.at("rank").get<int>(), 0);
    QCOMPARE(cp.at("rank_chosen").get<bool>(), false);
    QCOMPARE(cp.at("start_us").get<double>(), 0.0);
    QCOMPARE(cp.at("end_us").get<double>(), 100.0);
    QCOMPARE(cp.at("total_us").get<double>(), 100.0);
    checkCategories(cp.at("by_category"), {20, 20, 28, 2, 30});
    QCOMPARE(cp.at("segments_total").get<int64_t>(), int64_t(9));
    const char* nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
    checkSegments(cp.at("segments"), {{0, "user_annotation", "ProfilerStep#1", 0, 2, "launch_cpu"},
                                      {0, "cpu_op", "aten::mm", 2, 2, "launch_cpu"},
                                      {0, "launch_delay", "cudaLaunchKernel", 4, 4, "launch_cpu"},
                                      {0, "kernel", "gemm_kernel", 8, 20, "compute"},
                                      {0, "gap", "(stream waiting on another stream)", 28, 2, "idle"},
                                      {0, "kernel", nccl, 30, 30, "waiting_for_rank", 1},
                                      {0, "kernel", nccl, 60, 20, "communication"},
                                      {0, "sync_wait", "cudaDeviceSynchronize", 80, 5, "launch_cpu"},
                                      {0, "user_annotation", "ProfilerStep#1", 85, 15, "launch_cpu"}});
    QCOMPARE(cp.at("per_rank").size(), size_t(2));
    checkPerRank(cp.at("per_rank")[0], 0, 0, 100, {20, 20, 28, 2, 30});
    checkPerRank(cp.at("per_rank")[1], 1, 0, 100, {50, 20, 28, 2, 0});
    checkGraph(cp.at("graph"), 37, 40, 1, 2, 2);
  }

  // Ranks 2 and 3 of a world of 8 (group "5" = [2, 3]), as Kineto writes them
  // (make_critical_path_jobs.py). Times below are us after the origin
  // (baseTimeNanoseconds + 1000 us). Each rank: ProfilerStep#5 [0, 150]; gemm1
  // [10, 40] launched at 5 inside aten::linear [2.5, 12.5] > aten::addmm [3, 12];
  // gemm2 from the backward thread (launched at 22) right after it on stream 7;
  // the all-reduce's kernel on stream 24 behind a cudaStreamWaitEvent (its
  // cuda_sync event names stream 24) on gemm2; cudaStreamSynchronize [61, 125];
  // the optimizer [126, 140] launching at 128 a kernel from 132.
  // Rank 3: gemm2 [40, 70], all-reduce [72, 120], optimizer kernel [132, 158]:
  // its step ends last (158; rank 2's at 150), so its path is shown:
  //   [132,158] optimizer kernel (its latest predecessor its launch at 128, not the memcpy's end at 71)
  //   [128,132] launch delay  [126,128] optimizer  [125,126] step  [120,125] sync_wait
  //   [90,120] communication  [72,90] waiting for rank 2 (its copy starts at 90)
  //   [70,72] stream wait  [40,70] gemm2  [10,40] gemm1  [5,10] launch delay
  //   [3,5] addmm  [2.5,3] linear  [0,2.5] step
  // compute 30+30+26 = 86, communication 30, launch_cpu 4+2+1+5+5+2+0.5+2.5 = 22,
  // idle 2, waiting 18: 158. Rank 2 (gemm2 [40, 88], all-reduce [90, 120],
  // optimizer kernel [132, 150]): back from its step's end, 150: [140,150] step
  // [131,140] optimizer [128,131] launch [126,128] optimizer [125,126] step
  // [120,125] sync_wait [90,120] communication [88,90] stream wait [40,88] gemm2
  // [10,40] gemm1 [5,10] [3,5] [2.5,3] [0,2.5]: compute 78, communication 30,
  // launch_cpu 40, idle 2. Graph a rank: 15 CPU ops (python_function left out)
  // + 5 GPU events = 40 nodes; 25 edges on the main thread, 4 on the backward
  // thread (a fork from aten::linear's end), 5 launch + 5 span + 3 stream-order,
  // a sync and a stream wait = 44; with rank 3's arrived node: 81 nodes, 90 edges.
  void realShapedJob() {
    const json cp = criticalPathJson(kData + "real_shaped");
    QCOMPARE(cp.at("step").get<int64_t>(), int64_t(5));
    QCOMPARE(cp.at("step_chosen").get<bool>(), false);
    QCOMPARE(cp.at("rank").get<int>(), 3);
    QCOMPARE(cp.at("rank_chosen").get<bool>(), false);
    QCOMPARE(cp.at("start_us").get<double>(), 0.0);
    QCOMPARE(cp.at("end_us").get<double>(), 158.0);
    QCOMPARE(cp.at("total_us").get<double>(), 158.0);
    checkCategories(cp.at("by_category"), {86, 30, 22, 2, 18});
    QCOMPARE(cp.at("segments_total").get<int64_t>(), int64_t(14));
    const char* nccl = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
    const char* adam =
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
        "namespace)::TensorListMetadata<4>>";
    checkSegments(cp.at("segments"), {{3, "user_annotation", "ProfilerStep#5", 0, 2.5, "launch_cpu"},
                                      {3, "cpu_op", "aten::linear", 2.5, 0.5, "launch_cpu"},
                                      {3, "cpu_op", "aten::addmm", 3, 2, "launch_cpu"},
                                      {3, "launch_delay", "cudaLaunchKernel", 5, 5, "launch_cpu"},
                                      {3, "kernel", "sm90_xmma_gemm_bf16bf16_bf16f32", 10, 30, "compute"},
                                      {3, "kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_nt", 40, 30, "compute"},
                                      {3, "gap", "(stream waiting on another stream)", 70, 2, "idle"},
                                      {3, "kernel", nccl, 72, 18, "waiting_for_rank", 2},
                                      {3, "kernel", nccl, 90, 30, "communication"},
                                      {3, "sync_wait", "cudaStreamSynchronize", 120, 5, "launch_cpu"},
                                      {3, "user_annotation", "ProfilerStep#5", 125, 1, "launch_cpu"},
                                      {3, "user_annotation", "Optimizer.step#AdamW.step", 126, 2, "launch_cpu"},
                                      {3, "launch_delay", "cudaLaunchKernel", 128, 4, "launch_cpu"},
                                      {3, "kernel", adam, 132, 26, "compute"}});
    QCOMPARE(cp.at("per_rank").size(), size_t(2));
    checkPerRank(cp.at("per_rank")[0], 2, 0, 150, {78, 30, 40, 2, 0});
    checkPerRank(cp.at("per_rank")[1], 3, 0, 158, {86, 30, 22, 2, 18});
    checkGraph(cp.at("graph"), 81, 90, 1, 2, 2);
  }

  // The stream wait as Kineto (PyTorch >= 2.2, CUPTI sync activity) writes it: the cuda_sync
  // "Stream Wait Event" names the stream the awaited event was recorded on (7) and the
  // cudaEventRecord call that recorded it (corr 2, at 9: after gemm_a's launch at 3, before
  // gemm_b's at 13). ProfilerStep#1 [0, 100]; gemm_a [10, 30] and gemm_b [30, 70] on stream 7;
  // cudaStreamWaitEvent at 20, then the elementwise kernel on stream 20 launched at 22 runs
  // [35, 95]; cudaDeviceSynchronize [50, 97]. The wait is for gemm_a (ends 30), so back from 100:
  //   [97,100] step  [95,97] sync_wait  [35,95] elementwise  [30,35] stream waiting on gemm_a
  //   [10,30] gemm_a  [3,10] launch delay  [2,3] aten::mm  [0,2] step
  // compute 80, launch_cpu 2+1+7+2+3 = 15, idle 5. Graph: 9 CPU activities + 3 kernels = 24
  // nodes; 17 CPU edges (7 under the step, 2 under each mm, 6 leaf spans), 3 launch + 3 span +
  // 1 stream-order, 1 sync, 1 stream wait = 26.
  // Without the args (the heuristic: the event last launched onto another stream before the
  // wait) the wait would be for gemm_b, which ends at 70, after the kernel starts: no edge, and
  // the kernel's predecessor is its launch (22): [22,35] launch delay, no idle; compute 60.
  void streamWaitFromTraceArgs() {
    const json cp = criticalPathJson(kData + "event_record.json");
    QCOMPARE(cp.at("total_us").get<double>(), 100.0);
    checkCategories(cp.at("by_category"), {80, 0, 15, 5, 0});
    checkSegments(cp.at("segments"), {{0, "user_annotation", "ProfilerStep#1", 0, 2, "launch_cpu"},
                                      {0, "cpu_op", "aten::mm", 2, 1, "launch_cpu"},
                                      {0, "launch_delay", "cudaLaunchKernel", 3, 7, "launch_cpu"},
                                      {0, "kernel", "gemm_a", 10, 20, "compute"},
                                      {0, "gap", "(stream waiting on another stream)", 30, 5, "idle"},
                                      {0, "kernel", "vectorized_elementwise_kernel", 35, 60, "compute"},
                                      {0, "sync_wait", "cudaDeviceSynchronize", 95, 2, "launch_cpu"},
                                      {0, "user_annotation", "ProfilerStep#1", 97, 3, "launch_cpu"}});
    checkGraph(cp.at("graph"), 24, 26, 0, 1, 1);
    QCOMPARE(cp.at("graph").at("stream_waits_from").get<std::string>(), std::string("trace_args"));
    QCOMPARE(cp.at("graph").at("stream_waits_from_args").get<int64_t>(), int64_t(1));
    QCOMPARE(cp.at("graph").at("stream_waits_inferred").get<int64_t>(), int64_t(0));
    const TraceSet set = loadTraceSet({kData + "event_record.json"});
    QCOMPARE(set.ranks[0].sync_args.size(), size_t(1));
    QCOMPARE(set.ranks[0].sync_args[0].wait_on_stream, 7);
    QCOMPARE(set.ranks[0].sync_args[0].record_correlation, int64_t(2));
    std::ostringstream text;
    printCriticalPathText(analyzeTraceSet(set, HtaOptions{}).critical_path, text);
    QVERIFY2(text.str().find("stream waits: 1 from the trace's cuda_sync args") != std::string::npos, text.str().c_str());

    const json inferred = criticalPathJson(kData + "event_record_no_args.json");
    checkCategories(inferred.at("by_category"), {60, 0, 40, 0, 0});
    checkGraph(inferred.at("graph"), 24, 25, 0, 1, 0);
    QCOMPARE(inferred.at("graph").at("stream_waits_from").get<std::string>(), std::string("heuristic"));
    QCOMPARE(inferred.at("graph").at("stream_waits_inferred").get<int64_t>(), int64_t(1));
  }

  // Every fixture's paths tile their steps; the categories sum to the step time.
  void categoriesSumToTheStep() {
    for (const char* input : {"cpu_bound.json", "gpu_bound.json", "carried_work.json", "late_rank", "real_shaped",
                              "event_record.json", "event_record_no_args.json"}) {
      const TraceSet set = loadTraceSet({kData + input});
      const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
      checkTiling(job.critical_path);
    }
  }

  // Every shipped Kineto trace and job that has steps: each rank's path tiles its step (the
  // categories sum to it), whatever the trace holds (threads, streams, memcpys, floats, clocks).
  void tilesOnEveryShippedTrace() {
    const std::string kineto = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/";
    int with_path = 0;
    for (const char* input :
         {"fsdp_job", "straggler_job", "two_ranks", "hta_analyses", "epoch_float_job", "int_ts_float_dur",
          "mismatch_job", "torch_ddp_gloo_rank0.json", "group_of_four.json", "host_wait.json",
          "rank1_of_2.json", "base_relative.json", "real_shapes/allreduce_fractional_ns.json",
          "real_shapes/group_of_8_in_16.json", "real_shapes/all_to_all_outer_argless.json"}) {
      const TraceSet set = loadTraceSet({kineto + input});
      const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
      if (!job.critical_path.unavailable.empty()) continue;
      ++with_path;
      checkTiling(job.critical_path);
      for (const RankCriticalPath& r : job.critical_path.ranks) {  // each rank's own path, chosen
        const CriticalPath one = computeCriticalPath(set, {-1, r.rank, false});
        QCOMPARE(one.shownPath()->rank, r.rank);
        QCOMPARE(one.shownPath()->by_category, r.by_category);
        checkTiling(one);
      }
      // The last analysed step by default, on every rank that has it.
      QVERIFY2(!job.critical_path.ranks.empty(), input);
    }
    qInfo("%d of the shipped traces have a critical path", with_path);
    QCOMPARE(with_path, 12);
  }

  // A chosen rank and step: rank 1's path of the late-rank job has no waiting;
  // ProfilerStep#2 (the last, left out by default) is one 10 us step op.
  void chosenRankAndStep() {
    HtaOptions o;
    o.critical_path_rank = 1;
    json cp = criticalPathJson(kData + "late_rank", o);
    QCOMPARE(cp.at("rank").get<int>(), 1);
    QCOMPARE(cp.at("rank_chosen").get<bool>(), true);
    checkCategories(cp.at("by_category"), {50, 20, 28, 2, 0});
    QCOMPARE(cp.at("segments")[5].at("name").get<std::string>(), std::string("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
    QCOMPARE(cp.at("segments")[5].at("start_us").get<double>(), 60.0);
    QCOMPARE(cp.at("segments")[5].at("dur_us").get<double>(), 20.0);
    QCOMPARE(cp.at("segments")[5].at("category").get<std::string>(), std::string("communication"));

    o = {};
    o.critical_path_step = 2;
    cp = criticalPathJson(kData + "late_rank", o);
    QCOMPARE(cp.at("step").get<int64_t>(), int64_t(2));
    QCOMPARE(cp.at("step_chosen").get<bool>(), true);
    QCOMPARE(cp.at("start_us").get<double>(), 100.0);
    QCOMPARE(cp.at("total_us").get<double>(), 10.0);
    checkSegments(cp.at("segments"), {{0, "user_annotation", "ProfilerStep#2", 100, 10, "launch_cpu"}});
    checkCategories(cp.at("by_category"), {0, 0, 10, 0, 0});

    // --whole-trace: the last step counts, so the default is ProfilerStep#2.
    o = {};
    o.whole_trace = true;
    QCOMPARE(criticalPathJson(kData + "late_rank", o).at("step").get<int64_t>(), int64_t(2));
  }

  // A long path: the JSON keeps its 200 longest segments, in time order, and says so. One step
  // [0, 1000] of 100 ops (op i [10i+1, 10i+7] around a launch call [10i+2, 10i+5]): 401 segments:
  // [0,1] the step; per op 1 + 3 + 2 us (op, launch, op); 99 gaps of 4 us between ops (the step's
  // own time) and the last 3 us. The 200 longest: the 99 gaps of 4 and the 101 segments of 3.
  void longPathCapped() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("long.json").toStdString();
    {
      std::ofstream f(path);
      f << "{\"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", "
           "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1000}";
      for (int i = 0; i < 100; ++i)
        f << ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 1, \"tid\": 1, \"ts\": "
          << 10 * i + 1 << ", \"dur\": 6},\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
          << "\"pid\": 1, \"tid\": 1, \"ts\": " << 10 * i + 2 << ", \"dur\": 3, \"args\": {\"correlation\": " << i + 1
          << "}}";
      f << "]}\n";
    }
    const json cp = criticalPathJson(path);
    QCOMPARE(cp.at("total_us").get<double>(), 1000.0);
    checkCategories(cp.at("by_category"), {0, 0, 1000, 0, 0});
    QCOMPARE(cp.at("segments_total").get<int64_t>(), int64_t(401));
    QCOMPARE(cp.at("segments_capped").get<bool>(), true);
    const json& segs = cp.at("segments");
    QCOMPARE(segs.size(), kCriticalPathJsonSegments);
    int fours = 0, threes = 0;
    double last_start = -1;
    for (const json& s : segs) {
      const double dur = s.at("dur_us").get<double>();
      QVERIFY(dur == 4.0 || dur == 3.0);
      (dur == 4.0 ? fours : threes)++;
      QVERIFY(s.at("start_us").get<double>() > last_start);  // in time order
      last_start = s.at("start_us").get<double>();
    }
    QCOMPARE(fours, 99);
    QCOMPARE(threes, 101);
    QCOMPARE(segs.back().at("start_us").get<double>(), 997.0);
    QCOMPARE(segs.back().at("name").get<std::string>(), std::string("ProfilerStep#1"));
  }

  // A step or rank the traces do not have: one error naming the flag and what is allowed.
  void badChoicesRefused() {
    const TraceSet set = loadTraceSet({kData + "late_rank"});
    try {
      computeCriticalPath(set, {9, -1, false});
      QFAIL("step 9 accepted");
    } catch (const ConfigError& e) {
      QCOMPARE(std::string(e.what()),
               std::string("--critical-path-step 9: no rank's trace has ProfilerStep#9; choose one of 1, 2"));
    }
    try {
      computeCriticalPath(set, {-1, 5, false});
      QFAIL("rank 5 accepted");
    } catch (const ConfigError& e) {
      QCOMPARE(std::string(e.what()),
               std::string("--critical-path-rank 5: no trace of that rank was loaded; the ranks loaded are 0, 1"));
    }
  }

  // No ProfilerStep at all: no path, and why (text and JSON).
  void noStepsSaysWhy() {
    const TraceSet set = loadTraceSet({std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/no_rank.json"});
    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    if (!set.indexes[0].steps.empty()) QSKIP("the fixture has steps");
    QVERIFY(!job.critical_path.unavailable.empty());
    std::ostringstream text, js;
    printCriticalPathText(job.critical_path, text);
    writeCriticalPathJson(job.critical_path, js);
    QVERIFY2(text.str().find("critical path: none (the traces have no ProfilerStep#N spans") != std::string::npos,
             text.str().c_str());
    const json j = json::parse(js.str());
    QVERIFY(j.at("step").is_null());
    QVERIFY(j.at("unavailable").get<std::string>().find("no ProfilerStep#N") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestCriticalPath)
#include "test_critical_path.moc"
