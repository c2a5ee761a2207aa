// How much memory a run will take, known before anything is allocated, and
// whether this machine has it. A CPU run's host bytes per rank are the model
// state its strategy keeps (the ZeRO paper's bytes/param, over ceil(N / P)
// shards; under --tp T of the rank's 1/T slice), the communication buffers
// (DDP buckets, ZeRO-3's gathered units and full gradients), the activations
// the model saves (as the meta backend books them) and the backward pass's
// workspace, all of the slice a rank holds; the run adds one fp32 copy of the
// weights for its result. A run that needs more than the machine has is
// refused up front with what drives it (exit 2) instead of ending in
// std::bad_alloc or the kernel's OOM killer after minutes.
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.h"

namespace shardscope {

struct RunMemoryEstimate {
  int64_t model_bytes_per_rank = 0;       // model state, communication buffers, weight workspace
  int64_t activation_bytes_per_rank = 0;  // saved activations and their gradients' workspace
  int64_t run_bytes = 0;                  // beyond the ranks: the result's fp32 weights
  int threads = 0;                        // threads the run starts (ranks, streams, transports)
  int blas_threads = 0;                   // of them, threads that call BLAS (the compute streams)
  int64_t perRank() const { return model_bytes_per_rank + activation_bytes_per_rank; }
  int64_t total(int ranks) const { return perRank() * ranks + run_bytes; }
};

// Host memory of a run of this (validated) config. The meta backend books
// bytes it never allocates and GPU backends keep the ledger in device memory,
// so for those only the threads count.
RunMemoryEstimate estimateRunMemory(const RunConfig& config);

// What this process may use: /proc/meminfo's MemAvailable and the
// address-space limit (RLIMIT_AS, ulimit -v) less what the process maps now.
struct MachineMemory {
  int64_t available_bytes = -1;      // -1: unknown
  int64_t address_limit_bytes = -1;  // -1: no limit
  int64_t address_used_bytes = 0;    // this process's virtual size now
  int64_t thread_stack_bytes = 8 << 20;  // address space each thread reserves for its stack
  // Address space OpenBLAS maps for each thread that calls it (its BUFFER_SIZE);
  // when it cannot, it retries forever instead of failing.
  int64_t blas_buffer_bytes = int64_t(128) << 20;
  // glibc's malloc reserves an arena per thread up to 8 per core, 64 MiB each.
  int malloc_arenas = 16;
  int64_t malloc_arena_bytes = int64_t(64) << 20;
};
MachineMemory machineMemory();

// Throws ConfigError "this run needs about X GiB per rank, Y GiB in all; the
// machine has Z GiB available …", naming the flags that drive it and what to
// change, when the run does not fit; force_hint ends the message (the CLI's
// "--force tries anyway").
void checkRunFitsMachine(const RunConfig& config, const MachineMemory& machine, const std::string& force_hint = "");

}  // namespace shardscope
