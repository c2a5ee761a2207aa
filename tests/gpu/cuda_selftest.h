// The GPU backend checked against the CPU backend, as a library of named checks
// so that the Qt test (tests/gpu) and the Qt-free driver run on GPU machines
// (tests/gpu/gpu_check_main.cpp) run the same code. Each check draws fresh
// random inputs, poisons outputs with NaN so unwritten elements fail, and
// compares by ||gpu - cpu|| / ||cpu|| against a bound stated with the check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::gpu {

struct SelfTestResult {
  std::string name;
  bool passed = false;
  double error = 0.0;  // the largest measured error (relative norm, or a count)
  double bound = 0.0;  // passes when error <= bound (NaN never does)
  std::string detail;  // what was measured, or why it failed
};

// Every check, in run order: kernels, GEMMs, allocator, streams, collectives.
std::vector<std::string> selfTestNames();
// Runs one check on `device` with inputs drawn from `seed`. Never throws: an
// exception becomes a failed result carrying its message.
SelfTestResult runSelfTest(const std::string& name, int device, uint64_t seed);

// "" when device 0 is usable; otherwise the runtime's or the probe's reason
// (e.g. "cudaErrorNoDevice: no CUDA-capable device is detected").
std::string gpuUnavailableReason();

}  // namespace shardscope::gpu
