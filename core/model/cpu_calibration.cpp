#include "model/cpu_calibration.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "comm/collective_monitor.h"
#include "comm/communicator.h"
#include "common/run_control.h"
#include "rank/rank_status_board.h"
#include "common/errors.h"
#include "kernels/cpu_kernels.h"

namespace shardscope {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Best of `reps` timed calls of `body` after one untimed warm-up, in seconds.
template <typename Body>
double bestSeconds(int reps, Body&& body) {
  body();
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    const auto start = Clock::now();
    body();
    best = std::min(best, secondsSince(start));
  }
  return best;
}

double measureSgemmFlops() {  // FLOP/s
  constexpr int n = 512;
  std::vector<float> a(n * n), b(n * n), c(n * n, 0.0f);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 7) * 0.25f;
    b[i] = static_cast<float>(i % 5) * 0.5f;
  }
  cpu::initBlasSingleThreaded();
  const double t = bestSeconds(5, [&] { cpu::gemm(false, false, n, n, n, 1.0f, a.data(), b.data(), 0.0f, c.data()); });
  return 2.0 * n * n * n / t;
}

double measureMemcpyBandwidth() {  // bytes/s, read + written
  constexpr size_t bytes = size_t{64} << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);  // touched, so no page faults are timed
  const double t = bestSeconds(5, [&] {
    std::memcpy(dst.data(), src.data(), bytes);
    src[0] = static_cast<char>(dst[bytes - 1] + 1);  // keeps the copies observable
  });
  return 2.0 * bytes / t;
}

// Runs `body` on `threads` threads at once (every core busy, as when each
// core runs a rank), each repeating it for kCalWindowSeconds after one
// untimed warm-up, and returns the mean seconds per call over all threads:
// what one rank's thread gets while the others compute, on this machine as it
// is. A window longer than a scheduler slice, and a mean rather than the best
// call, so a busy machine's preemptions count at the share they take.
constexpr double kCalWindowSeconds = 0.25;

template <typename Body>
double meanSecondsOnAllCores(int threads, Body&& body) {
  std::vector<double> per_call(static_cast<size_t>(threads));
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      body(t);
      start.arrive_and_wait();
      const auto begin = Clock::now();
      int calls = 0;
      do {
        body(t);
        ++calls;
      } while (secondsSince(begin) < kCalWindowSeconds);
      per_call[static_cast<size_t>(t)] = secondsSince(begin) / calls;
    });
  }
  for (std::thread& th : pool) th.join();
  double sum = 0;
  for (const double x : per_call) sum += x;
  return sum / threads;
}

// The reference block the CPU calibration times with the engine's own kernels
// (model/mlp_model.cpp's residual MLP block, forward and backward), one per thread.
constexpr int kCalRows = 64, kCalHidden = 256, kCalInner = 4 * kCalHidden;

struct CalBlock {
  std::vector<float> x, ln, h, a, out, dy, dh, da, dx, w1, w2, b1, b2, g, beta, dw1, dw2, db1, db2, dg, dbeta, mean, rstd;
  std::vector<bf16> wbf, gbf;
  CalBlock()
      : x(kCalRows * kCalHidden, 0.5f), ln(x.size()), h(kCalRows * kCalInner), a(h.size()), out(x.size()),
        dy(x.size(), 0.01f), dh(h.size()), da(h.size()), dx(x.size()), w1(kCalInner * kCalHidden, 0.02f),
        w2(w1.size(), 0.02f), b1(kCalInner, 0.1f), b2(kCalHidden, 0.1f), g(kCalHidden, 1.0f), beta(kCalHidden),
        dw1(w1.size()), dw2(w1.size()), db1(kCalInner), db2(kCalHidden), dg(kCalHidden), dbeta(kCalHidden),
        mean(kCalRows), rstd(kCalRows), wbf(2 * w1.size()), gbf(wbf.size()) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  }
  double gemmFlops() const { return 6.0 * 2.0 * kCalRows * kCalHidden * double(kCalInner); }
  // Forward and backward GEMMs as the engine issues them (y = x W^T; dx = dy W; dW = dy^T x).
  void gemms() {
    const int B = kCalRows, D = kCalHidden, F = kCalInner;
    cpu::gemm(false, true, B, F, D, 1.0f, ln.data(), w1.data(), 0.0f, h.data());
    cpu::gemm(false, true, B, D, F, 1.0f, a.data(), w2.data(), 1.0f, out.data());
    cpu::gemm(false, false, B, F, D, 1.0f, dy.data(), w2.data(), 0.0f, da.data());
    cpu::gemm(true, false, D, F, B, 1.0f, dy.data(), a.data(), 0.0f, dw2.data());
    cpu::gemm(false, false, B, D, F, 1.0f, dh.data(), w1.data(), 0.0f, dx.data());
    cpu::gemm(true, false, F, D, B, 1.0f, dh.data(), ln.data(), 0.0f, dw1.data());
  }
  // Bytes model/block_work.cpp counts for the block's memory-bound ops, forward and backward.
  static double elementwiseBytes() { return 3.0 * (4.0 * kCalHidden + 6.0 * kCalHidden + 4.0 * kCalInner) * kCalRows; }
  // The block's memory-bound ops as the engine runs them, forward and backward.
  void elementwise() {
    const int B = kCalRows, D = kCalHidden, F = kCalInner;
    cpu::layerNormForward(x.data(), g.data(), beta.data(), ln.data(), mean.data(), rstd.data(), B, D);
    cpu::addBias(h.data(), b1.data(), B, F);
    cpu::geluForward(h.data(), a.data(), h.size());
    std::memcpy(out.data(), x.data(), sizeof(float) * x.size());
    cpu::addBias(out.data(), b2.data(), B, D);
    cpu::biasGrad(dy.data(), db2.data(), B, D);
    cpu::geluBackward(h.data(), da.data(), dh.data(), h.size());
    cpu::biasGrad(dh.data(), db1.data(), B, F);
    cpu::layerNormBackward(dx.data(), x.data(), g.data(), mean.data(), rstd.data(), ln.data(), dg.data(), dbeta.data(), B, D);
    cpu::addInPlace(ln.data(), dy.data(), ln.size());
  }
  size_t params() const { return 2 * w1.size(); }
  // Widen the block's weights in forward and in backward, narrow its gradients.
  void convert() {
    const size_t n = w1.size();
    cpu::bf16ToF32(wbf.data(), dw1.data(), n);
    cpu::bf16ToF32(wbf.data() + n, dw2.data(), n);
    cpu::bf16ToF32(wbf.data(), dw1.data(), n);
    cpu::bf16ToF32(wbf.data() + n, dw2.data(), n);
    cpu::f32ToBf16(dw1.data(), gbf.data(), n);
    cpu::f32ToBf16(dw2.data(), gbf.data() + n, n);
  }
};

struct BlockFigures {
  double gemm_flops = 0;             // FLOP/s of the block's GEMMs per thread, every core busy
  double elementwise_bandwidth = 0;  // bytes (as block_work counts them) / s
  double weight_convert = 0;         // s per parameter per step
  double mem_bandwidth = 0;          // the optimizer's bytes / s per thread, every core busy
};

// Bytes per element the modeled clock charges an AdamW step (fp32 master, m, v
// read and written, bf16 gradient read, bf16 parameter written), as
// parallel/strategy.h's kAdamBytesPerElement: the layer above owns it.
constexpr double kCalAdamBytesPerElement = 4 * 3 + 2 + 4 * 3 + 2;

BlockFigures measureBlockOnAllCores(int threads) {
  std::vector<CalBlock> blocks(static_cast<size_t>(threads));
  BlockFigures f;
  f.gemm_flops = blocks[0].gemmFlops() / meanSecondsOnAllCores(threads, [&](int t) { blocks[size_t(t)].gemms(); });
  f.elementwise_bandwidth =
      CalBlock::elementwiseBytes() / meanSecondsOnAllCores(threads, [&](int t) { blocks[size_t(t)].elementwise(); });
  f.weight_convert =
      meanSecondsOnAllCores(threads, [&](int t) { blocks[size_t(t)].convert(); }) / double(blocks[0].params());
  // The optimizer: the engine's AdamW over 1 Mi elements per thread.
  constexpr size_t n = size_t{1} << 20;
  struct AdamState {
    std::vector<float> master = std::vector<float>(n, 0.1f), m = std::vector<float>(n), v = std::vector<float>(n);
    std::vector<bf16> grad = std::vector<bf16>(n), param = std::vector<bf16>(n);
    int step = 1;
  };
  std::vector<AdamState> adam(static_cast<size_t>(threads));
  const cpu::AdamConfig config;
  f.mem_bandwidth = kCalAdamBytesPerElement * double(n) / meanSecondsOnAllCores(threads, [&](int t) {
                      AdamState& a = adam[size_t(t)];
                      cpu::adamStep(a.master.data(), a.m.data(), a.v.data(), a.grad.data(), a.param.data(), n, config,
                                    a.step++);
                    });
  return f;
}

struct LoopbackFigures {
  double bandwidth = 0;  // bytes/s per direction per rank
  double latency = 0;    // seconds per ring step
};

// Two ranks as threads on a Gloo loopback group. A 2-rank ring all-reduce of S
// bytes is 2 steps in which each rank sends S/2 while receiving S/2, so it sends
// S per direction in total (busbw = algbw here): bandwidth = S / t, the mean
// of 5 all-reduces of 4 MiB (the size of a CPU lesson's DDP buckets). Latency uses
// 2-element buffers, one element per rank, so each of the 2 steps sends a message;
// it is the mean of 5 batches of 20, per step.
// A rank's comm stream as the engine runs one (one worker thread, FIFO): the
// rank's thread hands it a collective and waits for it, so the latency the
// calibration times includes the two thread wake-ups each collective pays
// (and, in measureLoopback, the fingerprint check's rendezvous).
class CalStream {
 public:
  CalStream() : m_worker([this] { loop(); }) {}
  ~CalStream() {
    {
      std::lock_guard lock(m_mutex);
      m_quit = true;
    }
    m_cv.notify_all();
    m_worker.join();
  }
  void runAndWait(std::function<void()> task) {
    std::unique_lock lock(m_mutex);
    m_task = std::move(task);
    m_done = false;
    m_cv.notify_all();
    m_cv.wait(lock, [this] { return m_done; });
    if (m_error) std::rethrow_exception(std::exchange(m_error, nullptr));
  }

 private:
  void loop() {
    std::unique_lock lock(m_mutex);
    for (;;) {
      m_cv.wait(lock, [this] { return m_quit || m_task; });
      if (m_quit) return;
      std::function<void()> task = std::exchange(m_task, nullptr);
      lock.unlock();
      std::exception_ptr error;
      try {
        task();
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      m_error = error;
      m_done = true;
      m_cv.notify_all();
    }
  }
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::function<void()> m_task;
  std::exception_ptr m_error;
  bool m_done = false, m_quit = false;
  std::thread m_worker;
};

// Timed while `busy` threads run the reference block's GEMMs: a CPU run's
// all-reduces overlap its backward on the same cores (bucket by bucket), so
// the rate an all-reduce gets is the one it gets beside the ranks' compute.
LoopbackFigures measureLoopback(int busy) {
  constexpr int ranks = 2;
  std::atomic<bool> stop{false};
  std::vector<std::thread> background;
  for (int t = 0; t < busy; ++t)
    background.emplace_back([&stop] {
      CalBlock block;
      while (!stop.load(std::memory_order_relaxed)) block.gemms();
    });
  struct Joiner {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~Joiner() {
      stop = true;
      for (std::thread& t : threads) t.join();
    }
  } joiner{stop, background};
  constexpr size_t big = (size_t{4} << 20) / sizeof(float);
  constexpr int big_reps = 5;
  constexpr int small_reps = 100, small_batches = 5;
  auto group = createGlooGroup(ranks, "calibrate-this-cpu", 30000);
  // The fingerprint check every collective of an in-process run passes first.
  RankStatusBoard board(ranks);
  RunControl control;
  CollectiveMonitor monitor("calibrate-this-cpu", {0, 1}, board, control, std::chrono::milliseconds(30000));
  LoopbackFigures fig;
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        Communicator& comm = *group[static_cast<size_t>(r)];
        std::vector<float> data(big, 1.0f);
        float tiny[ranks] = {1.0f, 1.0f};
        comm.allReduce(tiny, ranks, DType::F32);  // warm-up: connections and scratch
        comm.allReduce(data.data(), big, DType::F32);
        comm.barrier();
        std::vector<double> t_bigs;
        Clock::time_point start;
        for (int i = 0; i < big_reps; ++i) {
          comm.barrier();
          start = Clock::now();
          comm.allReduce(data.data(), big, DType::F32);
          t_bigs.push_back(secondsSince(start));
        }
        double t_big = 0;  // the mean: a busy machine's preemptions count at their share
        for (const double t : t_bigs) t_big += t / big_reps;
        // The mean of the small ones, each issued on a comm stream
        // thread as the engine issues it: every collective of a run on a busy
        // machine pays the wake-ups of the threads it hands over to.
        std::vector<double> t_smalls;
        CalStream stream;
        int seq = 0;
        for (int batch = 0; batch < small_batches; ++batch) {
          comm.barrier();
          start = Clock::now();
          for (int i = 0; i < small_reps / small_batches; ++i)
            stream.runAndWait([&] {
              Fingerprint fp;
              fp.bytes = static_cast<int64_t>(sizeof tiny);
              fp.seq = seq++;
              monitor.check(r, fp);
              comm.allReduce(tiny, ranks, DType::F32);
            });
          t_smalls.push_back(secondsSince(start) / (small_reps / small_batches));
        }
        double t_small = 0;
        for (const double t : t_smalls) t_small += t / small_batches;
        if (r == 0) {
          fig.bandwidth = static_cast<double>(big * sizeof(float)) / t_big;
          // Per ring step (2(P-1) of them): the cost model charges latency by steps.
          fig.latency = t_small / (2.0 * (ranks - 1));
        }
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        for (auto& c : group) c->abort();  // wake the peer instead of waiting out the timeout
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return fig;
}

std::string cpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      const size_t first = line.find_first_not_of(' ', colon + 1);
      return first == std::string::npos ? "" : line.substr(first);
    }
  }
  return "";
}

double physicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

HardwareProfile calibrateThisCpu() {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const double flops = measureSgemmFlops();
  const double mem_bw = measureMemcpyBandwidth();
  const BlockFigures block = measureBlockOnAllCores(cores);
  const LoopbackFigures link = measureLoopback(cores);
  const double ram = physicalMemoryBytes();
  double load = -1;
  if (std::ifstream in("/proc/loadavg"); in) in >> load;

  HardwareProfile p;
  p.name = kThisCpuProfile;
  const std::string model = cpuModelName();
  p.description = "This machine" + (model.empty() ? std::string() : " (" + model + ")") +
                  ", measured: one rank = one CPU thread. bf16_tflops is single-thread fp32 sgemm "
                  "(CPU ranks compute in fp32), already achieved, so compute_efficiency is 1. "
                  "Memory bandwidth counts bytes read + written by memcpy. Both links are TCP "
                  "loopback (Gloo), the transport CPU ranks use. mem_capacity_gb is RAM / cores.";
  p.device.bf16_flops = flops;
  p.device.mem_bandwidth = mem_bw;
  p.device.mem_capacity = ram > 0 ? ram / cores : 1e9;
  p.device.compute_efficiency = 1.0;
  p.intra_node = {link.bandwidth, link.latency};
  p.inter_node = p.intra_node;
  p.gpus_per_node = cores;
  // The cost model's CPU pricing (rank/cost_model.h): a rank's one thread runs
  // its GEMMs, its element-wise ops and its weight conversions one after
  // another, so their times add; each rate is what a thread reached while every
  // core ran the same work (ranks share the cores). No tiles nor waves on a CPU
  // thread (OpenBLAS's micro-kernel tiles are a few rows): tile 1 x 1, 1 "SM".
  HardwareProfile::Calibration c;
  const auto fraction = [](double x) { return std::clamp(x, 0.01, 1.0); };
  c.gemm_efficiency = fraction(block.gemm_flops / flops);
  c.gemm_tile_m = c.gemm_tile_n = c.sms = 1;
  c.hbm_efficiency = fraction(block.mem_bandwidth / mem_bw);
  c.intra_node_busbw = c.inter_node_busbw = link.bandwidth;
  c.elementwise_bandwidth = block.elementwise_bandwidth;
  c.weight_convert = block.weight_convert;
  p.calibration = c;
  char load_text[32];
  std::snprintf(load_text, sizeof load_text, "%.2f", load);
  p.sources = {
      "measured by shardscope calibrateThisCpu() at " + utcNow() + " on " + std::to_string(cores) +
          " cores, load average " + load_text + " before it",
      "bf16_tflops, mem_bandwidth_gb_per_s: OpenBLAS sgemm 512^3 single-threaded (best of 5), memcpy 64 MiB "
      "(best of 5): one thread on a quiet core",
      "calibration.gemm_efficiency: the residual MLP block's six GEMMs (64 rows, hidden 256, inner 1024; forward, "
      "dgrad, wgrad as the engine issues them) on every core at once, mean over 0.25 s, over bf16_tflops",
      "calibration.elementwise_gb_per_s: the same block's norm, biases, GeLU, residual and their backward (the "
      "engine's kernels) on every core at once, mean over 0.25 s: the bytes model/block_work.cpp counts for them over "
      "that time",
      "calibration.weight_convert_ns_per_param: the block's weights widened bf16 -> fp32 twice and its gradients "
      "narrowed once, on every core at once, mean over 0.25 s, per parameter",
      "calibration.hbm_efficiency: the engine's AdamW step over 1 Mi elements per thread on every core at once "
      "(mean over 0.25 s), at the 28 bytes per element the modeled clock charges it, over mem_bandwidth_gb_per_s",
      "intra/inter node: 2-rank Gloo loopback all-reduce, 4 MiB f32 (mean of 5, busbw = algbw for 2 ranks) "
      "and 100 x 2 elements each handed to a comm stream thread, fingerprint-checked (comm/collective_monitor.h) and waited for as a run's are (mean of 100, per ring step), while every core also runs the block's GEMMs "
      "(a run's all-reduces overlap its backward)"};
  return p;
}

std::string thisCpuCachePath() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  fs::path base;
  if (xdg && *xdg) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = fs::path(home) / ".cache";
  } else {
    return "";
  }
  return (base / "shardscope" / (std::string(kThisCpuProfile) + ".json")).string();
}

std::string writeThisCpuCache(const HardwareProfile& profile) {
  const std::string path = thisCpuCachePath();
  if (path.empty()) throw ConfigError("cannot cache the this-cpu profile: neither XDG_CACHE_HOME nor HOME is set");
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  // Unique per process, so concurrent calibrations never write into one file.
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw ConfigError("cannot write the this-cpu profile cache " + tmp + " (is the folder writable?)");
    writeProfileJson(profile, out);
    if (!out.flush()) throw ConfigError("cannot write the this-cpu profile cache " + tmp + " (disk full?)");
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw ConfigError("cannot replace the this-cpu profile cache " + path);
  }
  return path;
}

HardwareProfile loadOrCalibrateThisCpu() {
  const std::string path = thisCpuCachePath();
  std::error_code ec;
  if (!path.empty() && fs::is_regular_file(path, ec)) {
    try {
      HardwareProfile cached = loadProfile(path);
      // A cache an older ShardScope wrote, without the CPU pricing: measured again.
      if (cached.calibration && cached.calibration->elementwise_bandwidth > 0) return cached;
    } catch (const ConfigError& e) {
      throw ConfigError(std::string(e.what()) +
                        "; this is the this-cpu calibration cache: delete it or run `shardscope-cli profiles --calibrate`");
    }
  }
  return calibrateAndCacheThisCpu();
}

HardwareProfile calibrateAndCacheThisCpu() {
  HardwareProfile p = calibrateThisCpu();
  try {
    writeThisCpuCache(p);
  } catch (const ConfigError&) {
    // No writable cache: the profile is still good, it is just measured again next time.
  }
  return p;
}

}  // namespace shardscope
