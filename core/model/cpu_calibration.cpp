#include "model/cpu_calibration.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "comm/communicator.h"
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

struct LoopbackFigures {
  double bandwidth = 0;  // bytes/s per direction per rank
  double latency = 0;    // seconds per ring step
};

// Two ranks as threads on a Gloo loopback group. A 2-rank ring all-reduce of S
// bytes is 2 steps in which each rank sends S/2 while receiving S/2, so it sends
// S per direction in total (busbw = algbw here): bandwidth = S / t. Latency uses
// 2-element buffers, one element per rank, so each of the 2 steps sends a message;
// it is the best of 5 batches of 20, per step.
LoopbackFigures measureLoopback() {
  constexpr int ranks = 2;
  constexpr size_t big = (size_t{16} << 20) / sizeof(float);
  constexpr int small_reps = 100, small_batches = 5;
  auto group = createGlooGroup(ranks, "calibrate-this-cpu", 30000);
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
        auto start = Clock::now();
        comm.allReduce(data.data(), big, DType::F32);
        const double t_big = secondsSince(start);
        // Best batch of the small ones: a thread that was descheduled (a busy
        // machine) inflates one batch, not the figure.
        double t_small = 1e300;
        for (int batch = 0; batch < small_batches; ++batch) {
          comm.barrier();
          start = Clock::now();
          for (int i = 0; i < small_reps / small_batches; ++i) comm.allReduce(tiny, ranks, DType::F32);
          t_small = std::min(t_small, secondsSince(start) / (small_reps / small_batches));
        }
        if (r == 0) {
          fig.bandwidth = static_cast<double>(big * sizeof(float)) / t_big;
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
  const LoopbackFigures link = measureLoopback();
  const double ram = physicalMemoryBytes();

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
  p.sources = {"measured by shardscope calibrateThisCpu() at " + utcNow() +
               ": OpenBLAS sgemm 512^3 single-threaded (best of 5), memcpy 64 MiB (best of 5), "
               "2-rank Gloo loopback all-reduce of 16 MiB f32 and 100 x 2 elements"};
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
      return loadProfile(path);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string(e.what()) +
                        "; this is the this-cpu calibration cache: delete it or run `shardscope-cli profiles --calibrate`");
    }
  }
  HardwareProfile p = calibrateThisCpu();
  try {
    writeThisCpuCache(p);
  } catch (const ConfigError&) {
    // No writable cache: the profile is still good, it is just measured again next time.
  }
  return p;
}

}  // namespace shardscope
