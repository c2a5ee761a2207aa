// HTA's idle-time breakdown, launch queue length, kernel breakdown and launch
// statistics on a hand-written two-rank job (tests/data/kineto/hta_analyses,
// Kineto's JSON format, integer µs, no ProfilerStep so every event is kept).
// Debian's torch is CPU-only and writes no cudaLaunchKernel, so the fixture is
// written by hand. Rank 0:
//   host tid 100: cudaLaunchKernel L1 [0,10] c1, L2 [12,20] c2, L3 [90,95] c3,
//     L4 [96,156] c4; cudaMemcpyAsync [200,220] c6; cudaLaunchKernel [240,245]
//     c9 (no GPU event); cudaLaunchKernel [250,252] without a correlation.
//   host tid 101: cudaLaunchKernelExC [30,40] c7, [150,160] c8.
//   stream 7: gemm_a [20,50] c1, elementwise_b [60,80] c2, gemm_a [100,110] c3,
//     gemm_a [150,200] c4, elementwise_b [205,210] (no correlation),
//     Memcpy HtoD [230,240] c6.
//   stream 20: ncclDevKernel_AllReduce [45,145] c7, [170,230] c8.
//   stream 9: reduce_c [300,310] c10 (its launch is not in the trace).
// Rank 1: twelve kernel names k01..k12 back to back on stream 7, no launches.
// Every number below is worked out in the comments.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <sstream>

#include "kineto/hta_analyses.h"
#include "kineto/hta_describe.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"

using namespace shardscope::kineto;

namespace {

const std::string kDir = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/hta_analyses";

double r4(double v) { return std::round(v * 1e4) / 1e4; }

const HtaStreamIdleTime* idleOf(const HtaIdleTimeBreakdown& b, int stream) {
  for (const auto& s : b.streams)
    if (s.stream == stream) return &s;
  return nullptr;
}

const HtaStreamQueueLength* queueOf(const HtaQueueLength& q, int stream) {
  for (const auto& s : q.streams)
    if (s.stream == stream) return &s;
  return nullptr;
}

const HtaKernelTypeBreakdown* typeOf(const HtaKernelBreakdown& b, HtaKernelType type) {
  for (const auto& t : b.types)
    if (t.type == type) return &t;
  return nullptr;
}

// count, mean, std, min, 25/50/75 %, max, times scale, to 4 decimals.
void compareStats(const HtaStats& s, int64_t count, std::vector<double> expected, double scale = 1.0) {
  QCOMPARE(s.count, count);
  const double got[] = {s.mean, s.stddev, s.min, s.p25, s.p50, s.p75, s.max};
  for (size_t i = 0; i < expected.size(); ++i) QCOMPARE(r4(got[i] * scale), expected[i]);
}

}  // namespace

class TestKinetoHtaAnalyses : public QObject {
  Q_OBJECT

  JobAnalysis m_job;

 private slots:
  void initTestCase() {
    const TraceSet set = loadTraceSet({kDir});
    QCOMPARE(set.ranks.size(), size_t(2));
    m_job = analyzeTraceSet(set, {});
    QVERIFY(!m_job.multi_step);
  }

  void describeIsPandas() {
    // [0,0,0,1,1,1,1,1,2,2]: 25 % at position 2.25 -> 0 + 0.25 x (1 - 0).
    const HtaStats s = describeValues({1, 2, 1, 0, 1, 2, 1, 0, 1, 0});
    compareStats(s, 10, {0.9, 0.7379, 0, 0.25, 1, 1, 2});
    QVERIFY(std::isnan(describeValues({3}).stddev));  // ddof 1: no spread from one value
    QCOMPARE(describeValues({}).count, 0);
  }

  void idleTimeByStream() {
    const HtaIdleTimeBreakdown& b = m_job.ranks[0].hta_analyses.idle_time;
    QCOMPARE(b.consecutive_kernel_delay_ns, 30000);
    QCOMPARE(b.streams.size(), size_t(3));
    QCOMPARE(b.streams[0].stream, 7);  // by stream number
    // Stream 7, by start: gemm_a [20,50]; elementwise_b [60,80]: gap 10, its
    // launch (12) before 50 -> kernel wait 10; gemm_a [100,110]: gap 20, launch
    // 90 after 80 -> host wait 20; gemm_a [150,200]: gap 40, launch 96 before
    // 110, 40 >= 30 -> other 40; elementwise_b [205,210] without a correlation:
    // gap 5 -> kernel wait 5 (no launch: never host wait); Memcpy [230,240]:
    // gap 20, launch 200 before 210 -> kernel wait 20.
    const HtaStreamIdleTime* s7 = idleOf(b, 7);
    QVERIFY(s7);
    QCOMPARE(s7->kernels, 6);
    QCOMPARE(s7->host_wait_ns, 20000);
    QCOMPARE(s7->kernel_wait_ns, 35000);
    QCOMPARE(s7->other_ns, 40000);
    QCOMPARE(s7->idleNs(), 95000);
    QCOMPARE(s7->without_launch, 1);
    QCOMPARE(r4(s7->ratio(s7->host_wait_ns)), 0.2105);    // 20 / 95
    QCOMPARE(r4(s7->ratio(s7->kernel_wait_ns)), 0.3684);  // 35 / 95
    QCOMPARE(r4(s7->ratio(s7->other_ns)), 0.4211);        // 40 / 95
    // Stream 20: [45,145] then [170,230], launched at 150 > 145 -> host wait 25.
    const HtaStreamIdleTime* s20 = idleOf(b, 20);
    QVERIFY(s20);
    QCOMPARE(s20->host_wait_ns, 25000);
    QCOMPARE(s20->kernel_wait_ns, 0);
    QCOMPARE(s20->other_ns, 0);
    QCOMPARE(s20->ratio(s20->host_wait_ns), 1.0);
    // Stream 9: one event, no gap: idle 0, ratios 0 / 0 (NaN, null in JSON).
    const HtaStreamIdleTime* s9 = idleOf(b, 9);
    QVERIFY(s9);
    QCOMPARE(s9->idleNs(), 0);
    QVERIFY(std::isnan(s9->ratio(0)));
    // Rank 1: back to back (gaps 0 < 30: kernel wait 0), none launched.
    const HtaStreamIdleTime* r1 = idleOf(m_job.ranks[1].hta_analyses.idle_time, 7);
    QVERIFY(r1);
    QCOMPARE(r1->kernels, 13);
    QCOMPARE(r1->idleNs(), 0);
    QCOMPARE(r1->without_launch, 12);
  }

  void queueLengthByStream() {
    const HtaQueueLength& q = m_job.ranks[0].hta_analyses.queue_length;
    // Counted launches: L1-L4, the memcpy, the two ExC (c9 has no GPU event,
    // the last has no correlation; reduce_c's c10 has no launch).
    QCOMPARE(q.launches, 7);
    QCOMPARE(q.streams.size(), size_t(2));
    // Stream 7 by time: +0 +12 -20 -60 +90 +96 -100 -150 +200 -230:
    // 1 2 1 0 1 2 1 0 1 0 -> sorted 0 0 0 1 1 1 1 1 2 2; mean 0.9, std
    // sqrt(4.9 / 9) = 0.7379; 25 % at 2.25 -> 0.25, 50 % at 4.5 -> 1, 75 % at 6.75 -> 1.
    const HtaStreamQueueLength* s7 = queueOf(q, 7);
    QVERIFY(s7);
    compareStats(s7->length, 10, {0.9, 0.7379, 0, 0.25, 1, 1, 2});
    // Stream 20: +30 -45 +150 -170: 1 0 1 0 -> mean 0.5, std sqrt(1/3) = 0.5774,
    // 25 % at 0.75 -> 0, 50 % at 1.5 -> 0.5, 75 % at 2.25 -> 1.
    const HtaStreamQueueLength* s20 = queueOf(q, 20);
    QVERIFY(s20);
    compareStats(s20->length, 4, {0.5, 0.5774, 0, 0, 0.5, 1, 1});
    QVERIFY(!queueOf(q, 9));  // reduce_c was never launched in the trace
    QVERIFY(m_job.ranks[1].hta_analyses.queue_length.streams.empty());
  }

  void kernelBreakdownUnderTenNames() {
    const HtaKernelBreakdown& b = m_job.ranks[0].hta_analyses.kernel_breakdown;
    QCOMPARE(b.types.size(), size_t(3));
    const HtaKernelTypeBreakdown* comp = typeOf(b, HtaKernelType::Computation);
    QVERIFY(comp);
    QVERIFY(!comp->grouped);
    QCOMPARE(comp->rows.size(), size_t(3));
    // gemm_a 30, 10, 50: sum 90, max 50, min 10, mean 30, std sqrt(800 / 2) = 20.
    QCOMPARE(comp->rows[0].name, std::string("gemm_a"));
    QCOMPARE(comp->rows[0].kernels, 3);
    QCOMPARE(comp->rows[0].sum_ns, 90000.0);
    QCOMPARE(comp->rows[0].max_ns, 50000.0);
    QCOMPARE(comp->rows[0].min_ns, 10000.0);
    QCOMPARE(comp->rows[0].mean_ns, 30000.0);
    QCOMPARE(comp->rows[0].std_ns, 20000.0);
    // elementwise_b 20, 5: sum 25, mean 12.5, std sqrt(112.5) = 10.6066.
    QCOMPARE(comp->rows[1].name, std::string("elementwise_b"));
    QCOMPARE(comp->rows[1].sum_ns, 25000.0);
    QCOMPARE(comp->rows[1].mean_ns, 12500.0);
    QCOMPARE(r4(comp->rows[1].std_ns / 1000), 10.6066);
    // reduce_c: one of 10, std 0 (HTA's fillna(0)).
    QCOMPARE(comp->rows[2].name, std::string("reduce_c"));
    QCOMPARE(comp->rows[2].std_ns, 0.0);
    // The all-reduce 100, 60: sum 160, mean 80, std sqrt(800) = 28.2843.
    const HtaKernelTypeBreakdown* comm = typeOf(b, HtaKernelType::Communication);
    QVERIFY(comm);
    QCOMPARE(comm->rows.size(), size_t(1));
    QCOMPARE(comm->rows[0].sum_ns, 160000.0);
    QCOMPARE(comm->rows[0].mean_ns, 80000.0);
    QCOMPARE(r4(comm->rows[0].std_ns / 1000), 28.2843);
    const HtaKernelTypeBreakdown* mem = typeOf(b, HtaKernelType::Memory);
    QVERIFY(mem);
    QCOMPARE(mem->rows[0].sum_ns, 10000.0);
  }

  void kernelBreakdownGroupsTheRestAsOthers() {
    const HtaKernelBreakdown& b = m_job.ranks[1].hta_analyses.kernel_breakdown;
    QCOMPARE(b.types.size(), size_t(1));
    const HtaKernelTypeBreakdown& comp = b.types[0];
    // 12 names > 10: sums 100 (k01: 60 + 40) 90 80 70 60 50 40 30 20 10 5 5;
    // running totals 100 190 270 340 400 450 490 520 540 550 555 560; their
    // 80 % quantile at 0.8 x 11 = 8.8 -> 540 + 0.8 x 10 = 548. Over it: k10
    // (550), k11, k12; index >= 10: k11, k12. Others: sums 10 5 5.
    QVERIFY(comp.grouped);
    QCOMPARE(comp.rows.size(), size_t(10));
    QCOMPARE(comp.rows[0].name, std::string("k01"));
    QCOMPARE(comp.rows[0].kernels, 2);
    // HTA regroups on the sums: k01's max = min = mean = its sum 100, std 0.
    QCOMPARE(comp.rows[0].sum_ns, 100000.0);
    QCOMPARE(comp.rows[0].max_ns, 100000.0);
    QCOMPARE(comp.rows[0].min_ns, 100000.0);
    QCOMPARE(comp.rows[0].mean_ns, 100000.0);
    QCOMPARE(comp.rows[0].std_ns, 0.0);
    QCOMPARE(comp.rows[8].name, std::string("k09"));
    const HtaKernelRow& others = comp.rows[9];
    QCOMPARE(others.name, std::string("others"));
    QCOMPARE(others.names, 3);
    QCOMPARE(others.kernels, 3);
    // Over 10, 5, 5: sum 20, max 10, min 5, mean 6.6667, std sqrt(16.667 / 2) = 2.8868.
    QCOMPARE(others.sum_ns, 20000.0);
    QCOMPARE(others.max_ns, 10000.0);
    QCOMPARE(others.min_ns, 5000.0);
    QCOMPARE(r4(others.mean_ns / 1000), 6.6667);
    QCOMPARE(r4(others.std_ns / 1000), 2.8868);
  }

  void launchStatistics() {
    const HtaLaunchStats& l = m_job.ranks[0].hta_analyses.launch;
    // Pairs (every launch call HTA knows, the two cudaLaunchKernelExC
    // included): cpu dur, gpu dur, start delay gpu ts - (cpu ts + cpu dur)
    // and HTA's launch delay max(0, start delay):
    //   c1: 10, 30, 20 - 10 = 10, 10        c2: 8, 20, 60 - 20 = 40, 40
    //   c7: 10, 100, 45 - 40 = 5, 5 (ExC)   c3: 5, 10, 100 - 95 = 5, 5
    //   c4: 60, 50, 150 - 156 = -6, 0       c8: 10, 60, 170 - 160 = 10, 10 (ExC)
    //   c6: 20, 10, 230 - 220 = 10, 10
    QCOMPARE(l.pairs, 7);
    // cpu 5 8 10 10 10 20 60: mean 17.5714, std 19.2688, quartiles at 1.5, 3, 4.5.
    compareStats(l.cpu_duration, 7, {17.5714, 19.2688, 5, 9, 10, 15, 60}, 1e-3);
    // gpu 10 10 20 30 50 60 100: mean 40, std 32.6599.
    compareStats(l.gpu_duration, 7, {40, 32.6599, 10, 15, 30, 55, 100}, 1e-3);
    // launch delay 0 5 5 10 10 10 40: mean 11.4286, std 13.1385 (the old formula's gpu ts - cpu ts + cpu dur gave mean 53).
    compareStats(l.launch_delay, 7, {11.4286, 13.1385, 0, 5, 10, 10, 40}, 1e-3);
    // start delay -6 5 5 10 10 10 40: mean 10.5714, std 14.1640.
    compareStats(l.start_delay, 7, {10.5714, 14.1640, -6, 5, 10, 10, 40}, 1e-3);
    QCOMPARE(l.runtime_outliers, 1);       // c4's 60 > 50
    QCOMPARE(l.launch_delay_outliers, 0);  // none over 100
    QCOMPARE(l.short_kernels, 1);          // c6: 20 <= 50 and 10 < 20
  }

  void unpairedEventsAreCountedNotGuessed() {
    const HtaCorrelationCheck& c = m_job.ranks[0].hta_analyses.launch.check;
    QCOMPARE(c.kernels, 9);
    QCOMPARE(c.kernels_without_correlation, 1);   // elementwise_b at 205
    QCOMPARE(c.kernels_without_launch, 1);        // reduce_c, c10
    QCOMPARE(c.launches, 9);                      // 6 cudaLaunchKernel, 2 ExC, 1 cudaMemcpyAsync
    QCOMPARE(c.launches_without_correlation, 1);  // at 250
    QCOMPARE(c.launches_without_kernel, 1);       // c9
    QCOMPARE(m_job.ranks[1].hta_analyses.launch.check.kernels_without_correlation, 13);
    QCOMPARE(m_job.ranks[1].hta_analyses.launch.pairs, 0);
  }

  void lastStepLeftOutAsHtaDoes() {
    // tests/data/kineto/two_ranks rank 0 (three ProfilerSteps): the third
    // step's launch (c5, [210,215]) and its reduce_kernel are left out.
    const TraceSet set = loadTraceSet({std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/two_ranks"});
    const JobAnalysis job = analyzeTraceSet(set, {});
    QVERIFY(job.ranks[0].selection.last_step_dropped);
    const HtaRankAnalyses& a = job.ranks[0].hta_analyses;
    // Stream 7: sgemm [50,150], fill [200,230] (gap 50, launched at 110 < 150:
    // other), memcpy [240,250] (gap 10, launched at 130 < 230: kernel wait).
    const HtaStreamIdleTime* s7 = idleOf(a.idle_time, 7);
    QVERIFY(s7);
    QCOMPARE(s7->other_ns, 50000);
    QCOMPARE(s7->kernel_wait_ns, 10000);
    QCOMPARE(s7->host_wait_ns, 0);
    // Stream 7's queue: +10 -50 +110 +130 -200 -240: 1 0 1 2 1 0, mean 5/6.
    const HtaStreamQueueLength* q7 = queueOf(a.queue_length, 7);
    QVERIFY(q7);
    QCOMPARE(q7->length.count, 6);
    QCOMPARE(r4(q7->length.mean), 0.8333);
    QCOMPARE(a.queue_length.launches, 5);
    // Launch delays max(0, gpu ts - (cpu ts + cpu dur)): 50-15 = 35, 100-30 = 70,
    // 200-114 = 86, 220-125 = 95, 240-136 = 104: mean 78, one over 100.
    QCOMPARE(a.launch.pairs, 5);
    QCOMPARE(r4(a.launch.launch_delay.mean / 1000), 78.0);
    QCOMPARE(a.launch.launch_delay_outliers, 1);
  }

  void crowdedCorrelationIsCountedNotPaired() {
    // Nine launches and eight kernels of one correlation: 72 pairs > 64, a
    // corrupt trace HTA would pair quadratically. Left out and counted.
    QTemporaryDir dir;
    const std::string path = dir.filePath("crowded.json").toStdString();
    std::ofstream f(path);
    f << "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [\n";
    for (int i = 0; i < 9; ++i)
      f << "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, "
        << "\"ts\": " << i * 10 << ", \"dur\": 2, \"args\": {\"correlation\": 1}},\n";
    for (int i = 0; i < 8; ++i)
      f << (i ? ",\n" : "") << "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
        << "\"ts\": " << 100 + i * 10 << ", \"dur\": 5, \"args\": {\"stream\": 7, \"correlation\": 1}}";
    f << "]}\n";
    f.close();
    const TraceSet set = loadTraceSet({path});
    const JobAnalysis job = analyzeTraceSet(set, {});
    const HtaRankAnalyses& a = job.ranks[0].hta_analyses;
    QCOMPARE(a.launch.check.crowded_correlations, 1);
    QCOMPARE(a.launch.pairs, 0);
    QCOMPARE(a.queue_length.launches, 0);
    QVERIFY(a.queue_length.streams.empty());
    // Idle time needs no pairing: 8 kernels, gaps of 5 µs, each launched (at 80, the
    // last launch written) before the previous kernel ended -> kernel wait 7 x 5.
    const HtaStreamIdleTime* s7 = idleOf(a.idle_time, 7);
    QVERIFY(s7);
    QCOMPARE(s7->kernel_wait_ns, 35000);
  }

  void textAndJsonCarryTheFour() {
    const TraceSet set = loadTraceSet({kDir});
    std::ostringstream text, json;
    printAnalysisText(m_job, set, text);
    writeAnalysisJson(m_job, set, json);
    QVERIFY2(text.str().find("idle time by stream") != std::string::npos, text.str().c_str());
    QVERIFY(text.str().find("launch queue length by stream") != std::string::npos);
    QVERIFY(text.str().find("kernel breakdown") != std::string::npos);
    QVERIFY(text.str().find("launch statistics") != std::string::npos);
    QVERIFY(text.str().find("1 launches without a correlation, 1 launches without a GPU event") != std::string::npos);
    for (const char* key : {"\"idle_time_breakdown\"", "\"queue_length\"", "\"kernel_breakdown\"", "\"launch_delay\""})
      QVERIFY2(json.str().find(key) != std::string::npos, key);
  }
};

QTEST_GUILESS_MAIN(TestKinetoHtaAnalyses)
#include "test_kineto_hta_analyses.moc"
