// The work of one transformer block on one rank as a calibrated cost model
// prices it (rank/cost_model.h): its GEMMs by shape, forward and backward, and
// the HBM traffic of its memory-bound ops. Built from the model's shape by
// model/block_work.h; plain data so the cost model below model/ can take it.
#pragma once

#include <vector>

namespace shardscope {

// (m x k) · (k x n), `count` times (a batched GEMM: attention's heads).
struct GemmShape {
  double m = 0, n = 0, k = 0;
  double count = 1;
  // false: a fused kernel keeps its operands on chip (flash attention's
  // scores and probabilities), so no HBM traffic bounds it.
  bool through_hbm = true;
  double flops() const { return 2.0 * m * n * k * count; }
};

struct BlockWork {
  std::vector<GemmShape> gemms;  // forward and backward together
  double memory_bytes = 0;       // bytes through HBM of the memory-bound ops (norms, activations, softmax, dropout)
  double flops = 0;              // the model's FLOPs of this work: what the clock is charged with for it
  // The block's parameters on this rank: CPU ranks widen them from bf16 to
  // fp32 in forward and again in backward, and narrow their gradients back.
  double weight_elements = 0;
};

}  // namespace shardscope
