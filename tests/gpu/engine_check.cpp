// The engine on the GPU (part of shardscope_gpu_check): real training steps of
// every strategy on cuda-emulated P = 4, checked for equivalence (losses and
// final fp32 master weights against DDP on the GPU and against the CPU
// backend), ledger = the seed's formulas, device memory allocated <= reserved
// <= used, and device timestamps (per stream, inside their step, no overlap on
// a stream). Then the step-time table per strategy and the world-size-1 run
// that tests/gpu/torch_mlp_step.py repeats in PyTorch.
#include "engine_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analysis/formulas.h"
#include "trace/step_metrics.h"
#include "cuda/cuda_runtime.h"
#include "model/model.h"
#include "engine/run.h"
#include "trace/chrome_trace_writer.h"

namespace shardscope {

namespace {

struct Check {
  int passed = 0, failed = 0;
  void report(const std::string& name, bool ok, double error, double bound, const std::string& detail) {
    (ok ? passed : failed) += 1;
    std::printf("%-34s %-6s %12.3g %10.3g  %s\n", name.c_str(), ok ? "ok" : "FAIL", error, bound, detail.c_str());
    std::fflush(stdout);
  }
};

RunConfig baseConfig(const std::string& strategy, Backend backend) {
  RunConfig c;
  c.strategy = *parseStrategy(strategy);
  c.backend = backend;
  c.ranks = 4;
  c.model.layers = 4;
  c.model.hidden = 256;
  c.batch = 64;
  c.steps = 3;
  c.lr = 1e-3;
  c.bucket_mb = 0.25;  // several buckets, so overlap and firing order are real
  c.first_bucket_mb = 0.0625;
  c.timeout_ms = 20000;
  if (strategy == "hsdp") c.shard_group = 2;
  return c;
}

double maxRelDiff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1e-12, std::abs(b[i])));
  return worst;
}

// max |a - b| / (max |b| + tiny), over the whole weight vector.
double weightDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double diff = 0, scale = 1e-12;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::abs(b[i])));
  }
  return diff / scale;
}

// Device spans: each inside its step's host StepBegin..StepEnd (50 µs slack for
// the origin's sync), begin <= end, and no two ops of one lane overlapping.
std::string timestampProblem(const RunTrace& t) {
  constexpr int64_t kSlack = 50'000;
  for (const auto& events : t.events) {
    std::map<int, std::pair<int64_t, int64_t>> steps;  // step -> (begin, end)
    for (const Event& e : events) {
      if (e.kind == EventKind::StepBegin) steps[e.step].first = e.begin_ns;
      if (e.kind == EventKind::StepEnd) steps[e.step].second = e.begin_ns;
    }
    std::map<Lane, std::vector<const Event*>> lanes;
    for (const Event& e : events) {
      if (e.lane == Lane::Host || e.begin_ns == e.end_ns) continue;
      if (e.end_ns < e.begin_ns) return "an op ends before it begins (" + std::string(eventKindName(e.kind)) + ")";
      const auto it = steps.find(e.step);
      if (it != steps.end() && e.step >= 0 &&
          (e.begin_ns + kSlack < it->second.first || e.end_ns > it->second.second + kSlack))
        return std::string(eventKindName(e.kind)) + " of step " + std::to_string(e.step) + " on rank " +
               std::to_string(e.rank) + " lies outside its step";
      lanes[e.lane].push_back(&e);
    }
    for (auto& [lane, ops] : lanes) {
      std::sort(ops.begin(), ops.end(), [](const Event* a, const Event* b) { return a->begin_ns < b->begin_ns; });
      for (size_t i = 1; i < ops.size(); ++i)
        if (ops[i]->begin_ns + 1000 < ops[i - 1]->end_ns && ops[i]->kind != EventKind::Wait &&
            ops[i - 1]->kind != EventKind::Wait)
          return std::string(eventKindName(ops[i]->kind)) + " overlaps " + std::string(eventKindName(ops[i - 1]->kind)) +
                 " on one stream of rank " + std::to_string(ops[i]->rank);
    }
  }
  return "";
}

// Cosine of the two runs' weight updates (final - initial): Adam turns tiny
// gradient differences near zero into lr-sized steps, so elementwise bounds say
// little across precisions; the direction of the whole update does.
double updateCosine(const RunConfig& c, const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return 0.0;
  std::vector<float> init(a.size());
  initModelParams(ModelSpec(c.model), c.seed, init.data());
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double da = a[i] - init[i], db = b[i] - init[i];
    dot += da * db;
    na += da * da;
    nb += db * db;
  }
  return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0.0;
}

double medianStepMs(const RunTrace& t, int skip) {
  std::vector<double> ms;
  for (const StepMetrics& m : computeStepMetrics(t.events))
    if (m.step >= skip) ms.push_back(m.wall_ns * 1e-6);
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0 : ms[ms.size() / 2];
}

}  // namespace

int runEngineChecks(const EngineCheckOptions& o, int& failed) {
  gpu::registerCudaRuntime();
  Check check;
  std::printf("\n%-34s %-6s %12s %10s  %s\n", "engine check (cuda-emulated P=4)", "result", "error", "bound",
              "detail");

  const RunResult cpu = Run(baseConfig("ddp", Backend::Cpu)).execute();
  std::map<std::string, RunResult> gpu;
  for (const char* strategy : {"ddp", "zero1", "zero2", "zero3", "hsdp"}) {
    try {
      Run run(baseConfig(strategy, Backend::CudaEmulated));
      RunResult r = run.execute();
      const RunTrace t = run.trace();
      const std::string problem = timestampProblem(t);
      check.report(std::string(strategy) + " device timestamps", problem.empty(), 0, 0,
                   problem.empty() ? "per stream, inside their step, no overlap" : problem);
      if (std::string(strategy) == "zero3" && !o.out_dir.empty()) {
        writeChromeTraceFile(t, o.out_dir + "/zero3_cuda_emulated.json");
      }
      gpu.emplace(strategy, std::move(r));
    } catch (const std::exception& e) {
      check.report(std::string(strategy) + " run", false, 0, 0, e.what());
    }
  }
  if (gpu.count("ddp")) {
    const RunResult& ddp = gpu.at("ddp");
    // bf16 activations on the GPU vs fp32 on the CPU: the losses agree to a few bf16 ulps.
    const double loss_err = maxRelDiff(ddp.losses, cpu.losses);
    check.report("ddp gpu vs cpu loss", loss_err < 2e-2, loss_err, 2e-2, "bf16 activations vs fp32 (relative)");
    const double cosine = updateCosine(ddp.config, ddp.final_master, cpu.final_master);
    check.report("ddp gpu vs cpu update", cosine > 0.95, 1.0 - cosine, 0.05,
                 "1 - cosine of the weight updates after 3 steps");
    for (auto& [name, r] : gpu) {
      if (name == "ddp") continue;
      // The emulated reduction sums in fp32 in rank order and rounds once, so an
      // all-reduce and a reduce-scatter give the same bits; GEMM algorithms may
      // still differ with buffer alignment, hence a bound instead of equality.
      const double le = maxRelDiff(r.losses, ddp.losses);
      const double we = weightDiff(r.final_master, ddp.final_master);
      check.report(name + " vs ddp (gpu)", le < 1e-3 && we < 1e-3, std::max(le, we), 1e-3,
                   we == 0 && le == 0 ? "bit-identical" : "losses and fp32 master");
    }
  }
  for (auto& [name, r] : gpu) {
    const RunConfig& c = r.config;
    const double expected = expectedBytesPerParam(c);
    double worst = 0;
    bool memory_ok = true;
    for (const RankResult& rank : r.ranks) {
      const double measured = static_cast<double>(rank.ledger.model_state_peak - rank.padding_state_bytes) /
                              static_cast<double>(r.params);
      worst = std::max(worst, std::abs(measured - expected));
      if (rank.device_memory) {
        const auto& d = *rank.device_memory;
        memory_ok &= d.allocated_peak <= d.reserved_peak && d.reserved_peak <= d.device_used_bytes + (64 << 20);
      } else {
        memory_ok = false;
      }
    }
    check.report(name + " ledger = formula", worst < 1e-6, worst, 1e-6, "model-state bytes/param vs the formula");
    check.report(name + " allocated<=reserved", memory_ok, 0, 0, "caching allocator vs cudaMemGetInfo");
  }

  if (o.bench) {
    std::printf("\nstep time per strategy, cuda-emulated P=4 on one GPU (MLP, 8 blocks, hidden 2048, batch 256)\n");
    std::printf("%-8s %10s %12s %12s\n", "strategy", "step ms", "comm ms", "exposed ms");
    for (const char* strategy : {"ddp", "zero1", "zero2", "zero3", "hsdp"}) {
      RunConfig c = baseConfig(strategy, Backend::CudaEmulated);
      c.model.layers = 8;
      c.model.hidden = 2048;
      c.model.io_dim = 512;
      c.batch = 256;
      c.steps = 8;
      c.bucket_mb = 25;
      c.first_bucket_mb = 1;
      try {
        Run run(c);
        const RunResult r = run.execute();
        double comm = 0, exposed = 0;
        for (const StepMetrics& m : r.last_step) {
          comm = std::max(comm, m.comm_ns * 1e-6);
          exposed = std::max(exposed, m.exposed_comm_ns * 1e-6);
        }
        std::printf("%-8s %10.2f %12.2f %12.2f\n", strategy, medianStepMs(run.trace(), 3), comm, exposed);
      } catch (const std::exception& e) {
        std::printf("%-8s failed: %s\n", strategy, e.what());
        ++check.failed;
      }
    }
    // World size 1, the shape tests/gpu/torch_mlp_step.py times in PyTorch.
    RunConfig c = baseConfig("ddp", Backend::Cuda);
    c.ranks = 1;
    c.model.layers = o.torch_layers;
    c.model.hidden = o.torch_hidden;
    c.model.io_dim = o.torch_io;
    c.batch = o.torch_batch;
    c.steps = 23;
    c.bucket_mb = 25;
    c.first_bucket_mb = 1;
    try {
      Run run(c);
      run.execute();
      std::printf("\nworld size 1 (cuda, ddp): MLP %d blocks, hidden %d, io %d, batch %d: step %.3f ms (median of 20)\n",
                  c.model.layers, c.model.hidden, c.model.io_dim, c.batch, medianStepMs(run.trace(), 3));
      std::printf("SHARDSCOPE_WS1_STEP_MS %.4f\n", medianStepMs(run.trace(), 3));
    } catch (const std::exception& e) {
      std::printf("world size 1 run failed: %s\n", e.what());
      ++check.failed;
    }
  }
  std::printf("engine: %d passed, %d failed\n", check.passed, check.failed);
  failed += check.failed;
  return check.passed;
}

}  // namespace shardscope
