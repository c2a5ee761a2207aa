// A job shaped like a real PyTorch FSDP trace, for the step-times, annotation
// and diff tests: ranks 1 and 3 of 4 (no rank 0), every event with the args
// Kineto writes, epoch timestamps with fractional µs (HTA's float rule applies
// to its own tables), a forward on the main thread and a backward on the
// autograd thread (tid 1001). Per step s (its start), in µs:
//   "## forward ##" [s+10.5, s+400.5] > "FullyShardedDataParallel.forward" [s+20, s+300]
//     > aten::linear [s+30, s+100] > aten::addmm [s+31.5, s+90]
//       > cudaLaunchKernel [s+40.25, s+45.5] -> sm90_xmma_gemm_bf16 [s+50.75, +11.5]: launch delay 5.25
//   gpu_user_annotation "## forward ##" [s+50.75, +11.5] on stream 7
//   tid 1001: "## backward ##" [s+500, s+900] > aten::mm [s+510, s+600]
//       > cudaLaunchKernel [s+520, s+523.125] -> sm90_xmma_gemm_bf16 [s+700, +bwd_gemm]: delay 176.875
//     cudaMemcpyAsync [s+800, s+802] (no op around) -> Memcpy DtoH [s+850, s+851.5]: delay 48
// Step durations (µs): rank 1: 1000.25, 1100.5, 950.125; rank 3: 1200.75, 1000, 950.125
// (ProfilerStep#10..#12; `steps` keeps the first ones); rank 3 starts 5 µs later.
#pragma once

#include <QDir>

#include "kineto_trace_writer.h"

inline std::string writeRealShapedJob(const QTemporaryDir& dir, const std::string& folder, int steps = 3,
                                      int64_t bwd_gemm_ns = 20'500) {
  constexpr int64_t kUs = KinetoTraceWriter::kUs;
  constexpr int64_t kEpoch = int64_t(1'733'500'000'000'000) * kUs + 123'456;  // ns: an epoch µs with fractions
  const int64_t durations[2][3] = {{1'000'250, 1'100'500, 950'125}, {1'200'750, 1'000'000, 950'125}};
  QDir(dir.path()).mkpath(QString::fromStdString(folder));
  int64_t correlation = 0;
  for (int r = 0; r < 2; ++r) {
    const int rank = r == 0 ? 1 : 3;
    KinetoTraceWriter w(rank, 4, true);
    int64_t s = kEpoch + (r == 0 ? 0 : 5 * kUs);
    for (int k = 0; k < steps; ++k) {
      w.step(10 + k, s, durations[r][k]);
      w.python("nn.Module: FullyShardedDataParallel_0", s + 5 * kUs, 396 * kUs);
      w.annotation("## forward ##", s + 10'500, 390 * kUs);
      w.annotation("FullyShardedDataParallel.forward", s + 20 * kUs, 280 * kUs);
      w.op("aten::linear", s + 30 * kUs, 70 * kUs);
      w.op("aten::addmm", s + 31'500, 58'500);
      w.launch("cudaLaunchKernel", s + 40'250, 5'250, ++correlation);
      w.kernel("sm90_xmma_gemm_bf16", s + 50'750, 11'500, correlation);
      w.gpuAnnotation("## forward ##", s + 50'750, 11'500);
      w.annotation("## backward ##", s + 500 * kUs, 400 * kUs, 1001);
      w.op("aten::mm", s + 510 * kUs, 90 * kUs, 1001);
      w.launch("cudaLaunchKernel", s + 520 * kUs, 3'125, ++correlation, 1001);
      w.kernel("sm90_xmma_gemm_bf16", s + 700 * kUs, bwd_gemm_ns, correlation);
      w.launch("cudaMemcpyAsync", s + 800 * kUs, 2 * kUs, ++correlation, 1001);
      w.gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", s + 850 * kUs, 1'500, correlation);
      s += durations[r][k];
    }
    w.write(dir, folder + "/rank" + std::to_string(rank) + ".pt.trace.json");
  }
  return dir.filePath(QString::fromStdString(folder)).toStdString();
}
