// The ZeRO paper's formulas (and the FSDP reference text's), the predictions every measured figure is shown beside:
// model-state bytes per parameter (mixed precision + Adam: 2 + 2 + 4 + 4 + 4)
// and bytes each rank sends per step under ring collectives.
#pragma once

#include <cstdint>
#include <string>

#include "rank/comm_bytes.h"
#include "config/kinds.h"

namespace shardscope {

// ddp 16, zero1 4 + 12/P, zero2 2 + 14/P, zero3/fsdp 16/P, hsdp 16/G.
double expectedModelStateBytesPerParam(Strategy strategy, int ranks, int shard_group = 0);

// Bytes one rank sends per step for N parameters in bf16 (2N bytes):
// ddp, zero1, zero2: 2(P-1)/P x 2N (all-reduce, or reduce-scatter + all-gather);
// zero3: 3(P-1)/P x 2N (all-gather fwd + all-gather bwd + reduce-scatter).
// hsdp (shard group G, R = P/G replicas): 2 all-gathers and a reduce-scatter
// of (G-1)/G x 2N inside the group, plus an all-reduce of the 2N/G shard
// across replicas, 2(R-1)/R x 2N/G. Without resharding after forward
// (SHARD_GRAD_OP) the backward all-gather disappears: 2N instead of 3N.
CommBytes expectedCommBytes(Strategy strategy, int64_t params, int ranks, int shard_group = 0,
                            bool reshard_after_forward = true);

// Tensor parallelism (Megatron-LM): bytes one rank sends in its TP group's
// activation all-reduces per layer per forward: a ring all-reduce of the
// (B·S, D) activation in bf16, 2(T-1)/T x B·S·D x 2 bytes, once per
// row-parallel layer (a GPT block has two, attention's and the MLP's; the
// residual MLP block one). Backward sends as much (the column-parallel
// layers' input gradients). tokens: B·S on one data-parallel rank (B for the MLP).
double expectedTpActivationBytesPerLayer(int tp, int64_t tokens, int hidden, int all_reduces_per_layer);

// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models": the bytes one transformer layer keeps for backward,
// s·b·h·(34 + 5·a·s/h) for their GPT block (16-bit activations, 1-byte dropout
// masks), 34·s·b·h with selective recomputation, 2·s·b·h with full
// checkpointing; under tensor parallelism without sequence parallelism
// s·b·h·(10 + 24/t + 5·a·s/(h·t)). Adapted term by term to the block built
// here (README, "Activation memory"): no dropout (its masks and outputs
// vanish), grouped-query K/V, a gated MLP's third inner tensor, fp32
// norm statistics, flash attention's fp32 row statistics instead of the
// softmax; no sequence parallelism, so the norms' tensors stay whole.
struct ActivationLayerShape {
  int64_t seq = 0, batch = 0;  // s, b: one data-parallel rank's samples
  int64_t hidden = 0, heads = 0;
  int64_t kv_heads = 0;  // 0: as heads
  int64_t ffn = 0;       // 0: 4h
  int tp = 1;
  bool gated_mlp = false, rms_norm = false;
  Attention attention = Attention::Flash;
  Checkpointing checkpointing = Checkpointing::None;
};
double expectedActivationBytesPerLayer(const ActivationLayerShape& shape);

// Ring all-reduce of `bytes` on P ranks: each rank sends 2(P-1)/P x bytes.
inline double ringAllReduceBytes(double bytes, int ranks) {
  return ranks <= 1 ? 0.0 : 2.0 * (ranks - 1) / ranks * bytes;
}

}  // namespace shardscope
