// A Kineto trace shaped like one rank's export of a real FSDP job (PyTorch
// 2.x, record_shapes, profile_memory and with_stack on): Kineto's own layout
// and arg mix, and every trace shape issue 50 names (a shard group smaller
// than the world, sizes only in record_param_comms or only in Input Dims,
// "allreduce" without the underscore, arg-less nccl:* annotations,
// cudaLaunchKernelExC launches, a rank that is not 0, integer or ns-digit
// timestamps). Used by bench_kineto_parse (throughput) and by
// core_test_kineto_generated_trace (what analyze reads back equals what was
// written: the tally below, counted as the events are written).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardscope::bench {

struct RealShapedOptions {
  size_t bytes = 200'000'000;  // the file grows to at least this, whole steps
  int rank = 0;
  int world = 8;
  int shard_group = 8;        // FSDP's shard group (a node's ranks); must divide world; 0: min(world, 8)
  bool integer_ts = false;    // whole µs, as Kineto wrote before PyTorch 2.3; else ns digits
  bool python_stack = true;   // with_stack: python_function events around each module's forward
};

// "" when the options make a trace; else what is wrong, naming the option.
std::string realShapedOptionsError(const RealShapedOptions& o);

struct GeneratedCollective {
  std::string kind;     // collectiveName(): "all_gather", "reduce_scatter", ...
  int group_size = 0;   // the ranks in its process group; 0: the trace names none (the world is assumed)
  int64_t bytes = 0;    // each call's, as nccl-tests count them (the larger buffer)
  int64_t count = 0;
};

// What was written, counted while writing.
struct RealShapedTally {
  int64_t events = 0;                          // entries of traceEvents
  std::map<std::string, int64_t> by_category;  // "cpu_op", "kernel", ...; "(metadata)" for ph M, "(flow)" for ac2g
  int64_t steps = 0;                           // ProfilerStep#N on the host
  std::map<std::string, int64_t> launches;     // cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel, ...
  int64_t gpu_events = 0;                      // kernels, memcpys and memsets (each has its launch)
  int64_t memory_samples = 0, peak_allocated = 0;  // [memory] instants and their largest Total Allocated
  std::vector<GeneratedCollective> collectives;
};

std::string writeRealShapedTrace(const RealShapedOptions& o, RealShapedTally* tally = nullptr);

}  // namespace shardscope::bench
