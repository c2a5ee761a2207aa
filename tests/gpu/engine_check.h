// Real training steps on the GPU, for shardscope_gpu_check (see engine_check.cpp).
#pragma once

#include <string>

namespace shardscope {

struct EngineCheckOptions {
  bool bench = true;
  std::string out_dir;  // zero3's trace lands here when set
  // The world-size-1 shape shared with tests/gpu/torch_mlp_step.py.
  int torch_layers = 8, torch_hidden = 2048, torch_io = 512, torch_batch = 64;
};

// Prints a check table; adds its failures to `failed`; returns the passes.
int runEngineChecks(const EngineCheckOptions& options, int& failed);

}  // namespace shardscope
