// nccl-tests style bandwidth table for the Gloo ring collectives, 4 ranks as
// threads: through the shared-memory exchange thread ranks use (local_transport.h)
// and, in the same run and interleaved row by row, through Gloo's TCP loopback
// (SHARDSCOPE_THREAD_TRANSPORT=tcp), beside a memcpy of the same bytes. Every
// row is verified in the same run (#wrong).
// algbw = S / t (1e9 B/s); busbw = algbw * 2(n-1)/n for all-reduce and
// algbw * (n-1)/n for reduce-scatter / all-gather, S being the full tensor.
// Usage: bench_allreduce [max MiB, default 64] [ranks, default 4] [shm]
// ("shm" leaves out the TCP rows, for profiling the shared-memory rings alone)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/gloo_communicator.h"
#include "tensor/bf16.h"
#include "bench_figures.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {

enum class Op { AllReduce, ReduceScatter, AllGather };

const char* opName(Op op) {
  switch (op) {
    case Op::AllReduce: return "all_reduce";
    case Op::ReduceScatter: return "reduce_scatter";
    case Op::AllGather: return "all_gather";
  }
  return "?";
}

void store(char* p, size_t i, float v, DType t) {
  if (t == DType::F32) {
    std::memcpy(p + i * 4, &v, 4);
  } else {
    const bf16 b = toBf16(v);
    std::memcpy(p + i * 2, &b, 2);
  }
}

float load(const char* p, size_t i, DType t) {
  if (t == DType::F32) {
    float v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  bf16 b;
  std::memcpy(&b, p + i * 2, 2);
  return toFloat(b);
}

// Small integers: every partial sum is exact in bf16, so a check is exact.
float pattern(int rank, size_t i) { return float((rank + 1) * int(i % 7 + 1)); }

// Iterations for S bytes: about 256 MiB of payload per row, at least 3.
int iterationsFor(size_t bytes) { return std::clamp(int((size_t(256) << 20) / bytes), 3, 20); }

struct Row {
  double us = 0;       // mean per-iteration time, slowest rank
  size_t wrong = 0;    // elements that differ from the expected result, all ranks
};

// Runs one row: every rank checks one call against the expected result, warms up,
// then times `iters` calls; the slowest rank's mean time is the row's time.
Row runRow(std::vector<std::unique_ptr<Communicator>>& group, Op op, DType dtype, size_t bytes) {
  const int P = int(group.size());
  const size_t e = dtypeSize(dtype);
  const size_t full = bytes / e;              // elements of the full tensor S
  const size_t part = full / size_t(P);       // elements of one rank's chunk
  const int iters = iterationsFor(bytes);
  const int warmup = 2;
  std::vector<double> seconds(static_cast<size_t>(P));
  std::vector<size_t> wrong(static_cast<size_t>(P));
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r) {
    threads.emplace_back([&, r] {
      Communicator& comm = *group[size_t(r)];
      const size_t inElems = op == Op::AllGather ? part : full;
      const size_t outElems = op == Op::ReduceScatter ? part : full;
      std::vector<char> in(inElems * e), out(op == Op::AllReduce ? 0 : outElems * e);
      for (size_t i = 0; i < inElems; ++i) store(in.data(), i, pattern(r, i), dtype);
      auto call = [&] {
        switch (op) {
          case Op::AllReduce: comm.allReduce(in.data(), full, dtype); break;
          case Op::ReduceScatter: comm.reduceScatter(in.data(), out.data(), part, dtype); break;
          case Op::AllGather: comm.allGather(in.data(), out.data(), part, dtype); break;
        }
      };
      call();
      size_t bad = 0;
      const int sumRanks = P * (P + 1) / 2;
      if (op == Op::AllReduce) {
        for (size_t i = 0; i < full; ++i) {
          bad += load(in.data(), i, dtype) != float(sumRanks * int(i % 7 + 1));
        }
      }
      for (int k = 0; k < warmup; ++k) call();
      comm.barrier();
      const auto t0 = Clock::now();
      for (int k = 0; k < iters; ++k) call();
      seconds[size_t(r)] = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
      // Reduce-scatter and all-gather do not change their input: check the last timed call.
      if (op == Op::ReduceScatter) {
        for (size_t i = 0; i < part; ++i) {
          const size_t global = size_t(r) * part + i;
          bad += load(out.data(), i, dtype) != float(sumRanks * int(global % 7 + 1));
        }
      } else if (op == Op::AllGather) {
        for (size_t i = 0; i < full; ++i) {
          bad += load(out.data(), i, dtype) != pattern(int(i / part), i % part);
        }
      }
      wrong[size_t(r)] = bad;
    });
  }
  for (std::thread& t : threads) t.join();
  Row row;
  row.us = *std::max_element(seconds.begin(), seconds.end()) * 1e6;
  for (size_t w : wrong) row.wrong += w;
  return row;
}

// Single-thread memcpy, best of a few, over `buffers` source and destination
// buffers of `bytes` each, one after another. One buffer: the physical
// reference of the same bytes. As many as ranks: the working set the ranks'
// buffers make together, which shows how much of the one-buffer figure is the
// cache (a 1 MiB memcpy repeated runs in L2; the ranks' 4 MiB and more do not).
double memcpyGBps(size_t bytes, int buffers = 1) {
  std::vector<std::vector<char>> a(size_t(buffers), std::vector<char>(bytes, 1));
  std::vector<std::vector<char>> b(size_t(buffers), std::vector<char>(bytes, 0));
  double best = 1e30;
  for (int k = 0; k < 5; ++k) {
    const auto t0 = Clock::now();
    for (int r = 0; r < buffers; ++r) std::memcpy(b[size_t(r)].data(), a[size_t(r)].data(), bytes);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  volatile char sink = b[0][bytes / 2];
  (void)sink;
  return double(bytes) * buffers / best / 1e9;
}

using Group = std::vector<std::unique_ptr<Communicator>>;

// One op's table: each row on the shared-memory group, then on the TCP group
// (interleaved, so a change of the machine's load falls on both), and the
// shared-memory bus bandwidth as a share of memcpy's for the same bytes.
void printTable(Group& shm, Group* tcp, Op op, const std::vector<DType>& dtypes, const std::vector<size_t>& sizes,
                const std::vector<double>& memcpy_gbps, const bench::BenchFigures& figures) {
  const int P = int(shm.size());
  const double factor = op == Op::AllReduce ? 2.0 * (P - 1) / P : double(P - 1) / P;
  std::printf("\n# %s, %d ranks (threads), ring; busbw = algbw * %s\n", opName(op), P,
              op == Op::AllReduce ? "2(n-1)/n" : "(n-1)/n");
  std::printf("# %12s %6s %16s %12s %12s %12s %10s %8s\n", "size(B)", "type", "transport", "time(us)", "algbw(GB/s)",
              "busbw(GB/s)", "of memcpy", "#wrong");
  for (DType dtype : dtypes) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const size_t bytes = sizes[i];
      for (Group* group : {&shm, tcp}) {
        if (!group) continue;
        const bool is_shm = group == &shm;
        const Row row = runRow(*group, op, dtype, bytes);
        const double algbw = double(bytes) / (row.us * 1e-6) / 1e9;
        const double share = algbw * factor / memcpy_gbps[i];
        std::printf("  %12zu %6s %16s %12.1f %12.3f %12.3f %9.1f%% %8zu\n", bytes, dtype == DType::F32 ? "f32" : "bf16",
                    is_shm ? "shared memory" : "tcp loopback", row.us, algbw, algbw * factor, 100 * share, row.wrong);
        const std::string key = std::string(opName(op)) + (dtype == DType::F32 ? "_f32_" : "_bf16_") +
                                std::to_string(bytes >> 20) + "MiB_busbw" + (is_shm ? "" : "_tcp");
        // A row whose result is wrong has no figure: scripts/bench reports it as failed.
        if (row.wrong == 0) {
          figures.add(key.c_str(), algbw * factor, "GB/s");
          if (is_shm) figures.add((key + "_of_memcpy").c_str(), 100 * share, "%");
        }
        std::fflush(stdout);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bench::BenchFigures figures(argc, argv);
  const size_t maxMiB = argc > 1 ? size_t(std::atoi(argv[1])) : 64;
  const int ranks = argc > 2 ? std::atoi(argv[2]) : 4;
  const bool shm_only = argc > 3 && std::string(argv[3]) == "shm";
  if (maxMiB < 1 || ranks < 2 || (argc > 3 && !shm_only)) {
    std::fprintf(stderr, "usage: %s [max MiB >= 1] [ranks >= 2] [shm]\n", argv[0]);
    return 2;
  }
  std::vector<size_t> sizes;
  for (size_t s = size_t(1) << 20; s <= (maxMiB << 20); s *= 2) sizes.push_back(s);

  // The physical reference first: the tables print each row's share of it.
  std::vector<double> gbps, working_set_gbps;
  for (size_t bytes : sizes) {
    gbps.push_back(memcpyGBps(bytes));
    working_set_gbps.push_back(memcpyGBps(bytes, ranks));
  }
  setenv("SHARDSCOPE_THREAD_TRANSPORT", "shm", 1);
  Group shm = createGlooGroup(ranks, "bench-shm", 60000);
  Group tcp;
  if (!shm_only) {
    setenv("SHARDSCOPE_THREAD_TRANSPORT", "tcp", 1);
    tcp = createGlooGroup(ranks, "bench-tcp", 60000);
  }
  unsetenv("SHARDSCOPE_THREAD_TRANSPORT");
  std::printf("# bench_allreduce: %d ranks, %u hardware threads; transports: %s%s\n", ranks,
              std::thread::hardware_concurrency(), static_cast<GlooCommunicator&>(*shm[0]).transportName(),
              shm_only ? "" : " and tcp");
  std::printf("# single-thread memcpy of the same bytes (physical reference):\n#");
  for (size_t i = 0; i < sizes.size(); ++i) std::printf(" %zuMiB %.2f GB/s |", sizes[i] >> 20, gbps[i]);
  std::printf("\n# the same over %d buffers of each size in turn (the ranks' working set):\n#", ranks);
  for (size_t i = 0; i < sizes.size(); ++i) std::printf(" %zuMiB %.2f GB/s |", sizes[i] >> 20, working_set_gbps[i]);
  std::printf("\n");
  printTable(shm, shm_only ? nullptr : &tcp, Op::AllReduce, {DType::F32, DType::BF16}, sizes, gbps, figures);
  printTable(shm, shm_only ? nullptr : &tcp, Op::ReduceScatter, {DType::F32, DType::BF16}, sizes, gbps, figures);
  printTable(shm, shm_only ? nullptr : &tcp, Op::AllGather, {DType::F32}, sizes, gbps, figures);
  for (size_t i = 0; i < sizes.size(); ++i) {
    figures.add(("memcpy_" + std::to_string(sizes[i] >> 20) + "MiB").c_str(), gbps[i], "GB/s");
    figures.add(("memcpy_" + std::to_string(ranks) + "x" + std::to_string(sizes[i] >> 20) + "MiB").c_str(),
                working_set_gbps[i], "GB/s");
  }
  return 0;
}
