// The device and link figures a modeled clock prices work with, in SI units.
// A plain struct at rank level, so the cost model below comm/ can hold one;
// reading, validating and writing profile files is model/hardware_profile.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace shardscope {

struct HardwareProfile {
  std::string name;         // equals the file's stem ("h100-sxm")
  std::string description;  // what the figures assume, in words

  struct Device {
    double bf16_flops = 0;          // FLOP/s, dense (no sparsity), peak
    double mem_bandwidth = 0;       // bytes/s, reads + writes together
    double mem_capacity = 0;        // bytes
    double compute_efficiency = 0;  // achievable fraction of bf16_flops for GEMMs, (0, 1]
  } device;

  struct Link {
    double bandwidth = 0;  // bytes/s per direction per GPU
    double latency = 0;    // seconds per message (one ring step)
  } intra_node, inter_node;

  // The host's side of each launch (seconds), as the CPU thread that issues
  // the work pays it: a kernel launch, and one FSDP unit's hooks (pre/post
  // forward and backward: each issues an all-gather or a reduce-scatter).
  // 0 = free; a profile without a "host" object has both 0.
  struct Host {
    double kernel_launch = 0;
    double unit_hook = 0;
  } host;

  // The cost model's shape-aware pricing (rank/cost_model.h), fitted once per
  // profile; a profile without it prices compute as FLOPs / (peak x
  // compute_efficiency) and collectives at the links' wire bandwidth.
  struct Calibration {
    double gemm_efficiency = 0;  // fraction of bf16_flops a large, well-tiled GEMM reaches, (0, 1]
    int gemm_tile_m = 0;         // output tile a GEMM kernel computes per thread block (rows, cols)
    int gemm_tile_n = 0;
    int sms = 0;                 // streaming multiprocessors: tiles run in waves of this many
    double hbm_efficiency = 0;   // fraction of mem_bandwidth memory-bound kernels reach, (0, 1]
    double intra_node_busbw = 0;  // bytes/s: nccl-tests all_reduce busbw inside a node, large messages
    double inter_node_busbw = 0;  // bytes/s per GPU: the same across nodes
    // bytes/s a block's memory-bound ops reach per byte BlockWork counts
    // (optional; 0: hbm_efficiency x mem_bandwidth). CPU ranks need it: their
    // element-wise kernels (GeLU's tanh, the norms) are bound by the core, not
    // by memory, while the optimizer's streams still reach memcpy's rate.
    double elementwise_bandwidth = 0;
    // seconds per parameter per step of a block (optional; 0: none): CPU
    // ranks widen bf16 weights to fp32 in forward and in backward and narrow
    // the gradients to bf16 (BlockWork::weight_elements). GPUs read bf16 directly.
    double weight_convert = 0;
  };
  std::optional<Calibration> calibration;

  int gpus_per_node = 1;
  std::vector<std::string> sources;  // datasheet citations, or how it was measured
};

}  // namespace shardscope
