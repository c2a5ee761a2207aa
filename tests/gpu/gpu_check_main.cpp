// The GPU check without Qt, for GPU machines (tests/gpu/check.sh): runs every
// self-test (tests/gpu/cuda_selftest.h) as a table ending in "N passed, N failed",
// then benchmarks: cuBLASLt vs cublasGemmEx TFLOP/s on large bf16 GEMMs, and the
// emulated all-gather / reduce-scatter (P = 4 on one GPU) against a plain
// device-to-device copy, each verified in the same run that times it.
// Exit code: 0 when every check passed (or no GPU: all skipped), 1 otherwise.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda_selftest.h"
#include "cuda/cuda_stream.h"
#include "cuda/device_query.h"
#include "cuda/emulated_communicator.h"
#include "cuda/kernels/internal.h"
#include "engine_check.h"

using namespace shardscope;
using namespace shardscope::gpu;

namespace {

struct Options {
  int device = 0;
  uint64_t seed = 1;
  bool bench = true;
  bool engine = true;
  std::string only;  // run just this self-test
  std::string out;   // where traces go (--out DIR)
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int runSelfTests(const Options& o, int& failed) {
  std::printf("%-26s %-6s %12s %10s  %s\n", "check", "result", "error", "bound", "detail");
  int passed = 0;
  for (const std::string& name : selfTestNames()) {
    if (!o.only.empty() && name != o.only) continue;
    const auto t0 = std::chrono::steady_clock::now();
    const SelfTestResult r = runSelfTest(name, o.device, o.seed);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    (r.passed ? passed : failed) += 1;
    std::printf("%-26s %-6s %12.3g %10.3g  %s (%.2f s)\n", name.c_str(), r.passed ? "ok" : "FAIL",
                r.error, r.bound, r.detail.c_str(), s);
    std::fflush(stdout);
  }
  return passed;
}

// ---- GEMM -------------------------------------------------------------------

struct GemmShape {
  int M, N, K;
  bool transA, transB;
  bool bf16Out;
};

// Median ms of `reps` timed calls after `warmup` untimed ones, each between two events.
template <class F>
double timeMs(CudaStream& stream, int warmup, int reps, F&& run) {
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    CudaEvent start(CudaEvent::Timing::On), end(CudaEvent::Timing::On);
    start.record(stream.handle());
    run();
    end.record(stream.handle());
    ms.push_back(elapsedMs(start, end));
  }
  return median(ms);
}

void benchGemm(const Options& o) {
  std::printf("\nGEMM, bf16 inputs, fp32 accumulation, random data; median of 20 after 3 warm-ups\n");
  std::printf("%-28s %14s %14s %8s %12s\n", "M x N x K op", "cuBLASLt TF/s", "GemmEx TF/s",
              "Lt/Ex", "rel diff");
  const GemmShape shapes[] = {
      {8192, 8192, 8192, false, false, true},   {8192, 8192, 8192, false, true, true},
      {16384, 4096, 4096, false, true, true},   {4096, 4096, 16384, true, false, false},
      {16384, 3072, 768, false, true, true},    {768, 3072, 16384, true, false, false},
  };
  CudaStream stream(o.device, "bench gemm");
  BlasHandle lt(GemmPath::CublasLt), ex(GemmPath::CublasGemmEx);
  for (const GemmShape& g : shapes) {
    const size_t a = static_cast<size_t>(g.M) * g.K, b = static_cast<size_t>(g.K) * g.N,
                 c = static_cast<size_t>(g.M) * g.N;
    bf16 *A = nullptr, *B = nullptr;
    void *C1 = nullptr, *C2 = nullptr;
    const size_t cBytes = c * (g.bf16Out ? 2 : 4);
    CUDA_CHECK(cudaMalloc(&A, a * 2));
    CUDA_CHECK(cudaMalloc(&B, b * 2));
    CUDA_CHECK(cudaMalloc(&C1, cBytes));
    CUDA_CHECK(cudaMalloc(&C2, cBytes));
    detail::fillUniform(A, a, o.seed * 7 + 1, 1.0f, stream.handle());
    detail::fillUniform(B, b, o.seed * 7 + 2, 1.0f, stream.handle());
    auto call = [&](BlasHandle& h, void* C) {
      if (g.bf16Out) {
        gemm(h, g.transA, g.transB, g.M, g.N, g.K, 1.0f, A, B, 0.0f, static_cast<bf16*>(C), stream.handle());
      } else {
        gemm(h, g.transA, g.transB, g.M, g.N, g.K, 1.0f, A, B, 0.0f, static_cast<float*>(C), stream.handle());
      }
    };
    const double flops = 2.0 * g.M * g.N * static_cast<double>(g.K);
    const double msLt = timeMs(stream, 3, 20, [&] { call(lt, C1); });
    const double msEx = timeMs(stream, 3, 20, [&] { call(ex, C2); });
    // Verify in the same run: the two paths on the same inputs agree to bf16 rounding.
    std::vector<float> h1(c), h2(c);
    if (g.bf16Out) {
      std::vector<bf16> t1(c), t2(c);
      CUDA_CHECK(cudaMemcpy(t1.data(), C1, cBytes, cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(t2.data(), C2, cBytes, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < c; ++i) h1[i] = toFloat(t1[i]), h2[i] = toFloat(t2[i]);
    } else {
      CUDA_CHECK(cudaMemcpy(h1.data(), C1, cBytes, cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(h2.data(), C2, cBytes, cudaMemcpyDeviceToHost));
    }
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < c; ++i) {
      const double d = static_cast<double>(h1[i]) - h2[i];
      diff += d * d;
      norm += static_cast<double>(h2[i]) * h2[i];
    }
    char label[64];
    std::snprintf(label, sizeof label, "%dx%dx%d %s%s->%s", g.M, g.N, g.K, g.transA ? "T" : "N",
                  g.transB ? "T" : "N", g.bf16Out ? "bf16" : "f32");
    const double tfLt = flops / (msLt * 1e-3) / 1e12, tfEx = flops / (msEx * 1e-3) / 1e12;
    std::printf("%-28s %14.1f %14.1f %8.3f %12.2e\n", label, tfLt, tfEx, tfLt / tfEx,
                std::sqrt(diff / norm));
    std::fflush(stdout);
    cudaFree(A);
    cudaFree(B);
    cudaFree(C1);
    cudaFree(C2);
  }
}

// ---- collectives --------------------------------------------------------------

double memcpyMs(const Options& o, size_t bytes) {
  CudaStream stream(o.device, "bench memcpy");
  void *src = nullptr, *dst = nullptr;
  CUDA_CHECK(cudaMalloc(&src, bytes));
  CUDA_CHECK(cudaMalloc(&dst, bytes));
  CUDA_CHECK(cudaMemsetAsync(src, 1, bytes, stream.handle()));
  const double ms = timeMs(stream, 3, 10, [&] {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream.handle()));
  });
  cudaFree(src);
  cudaFree(dst);
  return ms;
}

// Mean ms per collective over `reps`, between events on rank 0's stream (its
// stream waits for every collective's done event). Returns the wrong-element count
// of a sampled verification.
struct CollectiveTiming {
  double ms = 0.0;
  size_t wrong = 0;
};

CollectiveTiming benchEmulated(const Options& o, bool gather, int P, size_t count) {
  auto comms = createEmulatedGroup(P, o.device);
  std::vector<float*> in(P), out(P);
  const size_t inCount = gather ? count : count * P, outCount = gather ? count * P : count;
  for (int r = 0; r < P; ++r) {
    CUDA_CHECK(cudaMalloc(&in[r], inCount * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&out[r], outCount * sizeof(float)));
    detail::delayedFill(in[r], inCount, static_cast<float>(r + 1), 0, comms[r]->stream());
    CUDA_CHECK(cudaMemsetAsync(out[r], 0xff, outCount * sizeof(float), comms[r]->stream()));
  }
  const int warmup = 3, reps = 10;
  CudaEvent start(CudaEvent::Timing::On, o.device), end(CudaEvent::Timing::On, o.device);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(P);
  for (int r = 0; r < P; ++r) {
    threads.emplace_back([&, r] {
      try {
        DeviceGuard guard(o.device);
        GpuCommunicator& c = *comms[r];
        auto once = [&] {
          if (gather) {
            c.allGather(in[r], out[r], count, DType::F32);
          } else {
            c.reduceScatter(in[r], out[r], count, DType::F32);
          }
        };
        for (int i = 0; i < warmup; ++i) once();
        c.barrier();
        CUDA_CHECK(cudaStreamSynchronize(c.stream()));
        c.barrier();  // everyone idle before rank 0 starts the clock
        if (r == 0) start.record(c.stream());
        for (int i = 0; i < reps; ++i) once();
        if (r == 0) end.record(c.stream());
        CUDA_CHECK(cudaStreamSynchronize(c.stream()));
      } catch (const std::exception& e) {
        errors[r] = e.what();
        comms[r]->abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < P; ++r) {
    if (!errors[r].empty()) throw std::runtime_error("rank " + std::to_string(r) + ": " + errors[r]);
  }
  CollectiveTiming t;
  t.ms = elapsedMs(start, end) / reps;
  const float sum = static_cast<float>(P * (P + 1) / 2);
  for (int r = 0; r < P; ++r) {
    std::vector<float> host(outCount);
    CUDA_CHECK(cudaMemcpy(host.data(), out[r], outCount * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < outCount; i += 4097) {
      const float want = gather ? static_cast<float>(i / count + 1) : sum;
      t.wrong += host[i] != want;
    }
    cudaFree(in[r]);
    cudaFree(out[r]);
  }
  return t;
}

void benchCollectives(const Options& o) {
  const int P = 4;
  const size_t S = size_t{1} << 30;  // bytes of the full tensor (nccl-tests' S)
  const size_t count = S / sizeof(float) / P;
  const double copyMs = memcpyMs(o, S);
  const double copyRW = 2.0 * S / (copyMs * 1e-3) / 1e9;
  std::printf("\nCollectives, f32, S = %zu MiB, cuda-emulated P = %d on one GPU; mean of 10 after 3 warm-ups\n",
              S >> 20, P);
  std::printf("%-22s %10s %10s %10s %14s %9s %7s\n", "op", "time ms", "algbw GB/s", "busbw GB/s",
              "moved GB/s r+w", "vs copy", "#wrong");
  std::printf("%-22s %10.3f %10.1f %10s %14.1f %9s %7s\n", "cudaMemcpy D2D (S)", copyMs,
              S / (copyMs * 1e-3) / 1e9, "-", copyRW, "1.00", "-");
  for (bool gather : {true, false}) {
    const CollectiveTiming t = benchEmulated(o, gather, P, count);
    const double algbw = S / (t.ms * 1e-3) / 1e9;
    const double busbw = algbw * (P - 1) / P;
    // Device bytes: all-gather reads and writes P chunks into each of P outputs;
    // reduce-scatter reads P full inputs and writes S.
    const double moved = gather ? 2.0 * P * S : (P + 1.0) * S;
    const double movedGBs = moved / (t.ms * 1e-3) / 1e9;
    std::printf("%-22s %10.3f %10.1f %10.1f %14.1f %9.2f %7zu\n",
                gather ? "allGather (emulated)" : "reduceScatter (emul.)", t.ms, algbw, busbw,
                movedGBs, movedGBs / copyRW, t.wrong);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--device") o.device = std::stoi(value());
    else if (arg == "--seed") o.seed = std::stoull(value());
    else if (arg == "--no-bench") o.bench = false;
    else if (arg == "--no-engine") o.engine = false;
    else if (arg == "--out") o.out = value();
    else if (arg == "--only") o.only = value();
    else if (arg == "--list") {
      for (const auto& n : selfTestNames()) std::printf("%s\n", n.c_str());
      return 0;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--device N] [--seed S] [--no-bench] [--no-engine] [--out DIR] [--only CHECK] [--list]\n",
                   argv[0]);
      return 2;
    }
  }
  const std::string reason = gpuUnavailableReason();
  if (!reason.empty()) {
    std::printf("GPU check skipped: %s\n0 passed, 0 failed, %zu skipped\n", reason.c_str(),
                selfTestNames().size());
    return 0;
  }
  const CudaInventory inv = queryCudaDevices();
  std::printf("CUDA runtime %s, driver %s, NCCL %s (compiled %s), %zu GPU(s)\n",
              cudaVersionString(inv.runtime_version).c_str(),
              cudaVersionString(inv.driver_version).c_str(), inv.nccl_version.c_str(),
              compiledNcclVersion().c_str(), inv.devices.size());
  for (const auto& d : inv.devices) {
    std::printf("  GPU %d: %s, cc %d.%d, %d SMs, %.1f GiB\n", d.index, d.name.c_str(), d.cc_major,
                d.cc_minor, d.sm_count, d.total_bytes / 1073741824.0);
  }
  std::printf("\n");
  int failed = 0;
  const int passed = runSelfTests(o, failed);
  if (o.bench && o.only.empty()) {
    try {
      CUDA_CHECK(cudaSetDevice(o.device));
      benchGemm(o);
      benchCollectives(o);
    } catch (const std::exception& e) {
      std::printf("benchmark failed: %s\n", e.what());
      ++failed;
    }
  }
  int engine_passed = 0;
  if (o.engine && o.only.empty()) {
    EngineCheckOptions e;
    e.bench = o.bench;
    e.out_dir = o.out;
    try {
      engine_passed = runEngineChecks(e, failed);
    } catch (const std::exception& ex) {
      std::printf("engine check failed: %s\n", ex.what());
      ++failed;
    }
  }
  std::printf("\n%d passed, %d failed\n", passed + engine_passed, failed);
  return failed == 0 ? 0 : 1;
}
