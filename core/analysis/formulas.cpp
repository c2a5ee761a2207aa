#include "analysis/formulas.h"


namespace shardscope {

double expectedModelStateBytesPerParam(Strategy strategy, int ranks, int shard_group) {
  const double p = ranks;
  switch (strategy) {
    case Strategy::Ddp: return 16.0;
    case Strategy::Zero1: return 4.0 + 12.0 / p;
    case Strategy::Zero2: return 2.0 + 14.0 / p;
    case Strategy::Zero3:
    case Strategy::Fsdp: return 16.0 / p;
    case Strategy::Hsdp: return 16.0 / (shard_group > 0 ? shard_group : ranks);
  }
  return 16.0;
}

double expectedTpActivationBytesPerLayer(int tp, int64_t tokens, int hidden, int all_reduces_per_layer) {
  if (tp <= 1) return 0.0;
  return all_reduces_per_layer * 2.0 * (tp - 1) / tp * double(tokens) * hidden * 2.0;
}

CommBytes expectedCommBytes(Strategy strategy, int64_t params, int ranks, int shard_group,
                            bool reshard_after_forward) {
  CommBytes b;
  if (ranks <= 1) return b;
  const double two_n = 2.0 * static_cast<double>(params);
  const double gathers = reshard_after_forward ? 2.0 : 1.0;
  if (isHybrid(strategy)) {
    const int g = shard_group > 0 ? shard_group : ranks;
    const int replicas = ranks / g;
    const double in_group = (g - 1.0) / g * two_n;
    b.all_gather = static_cast<int64_t>(gathers * in_group);
    b.reduce_scatter = static_cast<int64_t>(in_group);
    b.all_reduce = static_cast<int64_t>(2.0 * (replicas - 1.0) / replicas * two_n / g);
    return b;
  }
  const double half = (ranks - 1.0) / ranks * two_n;  // one reduce-scatter or all-gather
  if (reducesByAllReduce(strategy)) {
    b.all_reduce = static_cast<int64_t>(2.0 * half);
  } else if (!isSharded(strategy)) {  // zero1, zero2
    b.reduce_scatter = static_cast<int64_t>(half);
    b.all_gather = static_cast<int64_t>(half);
  } else {  // zero3, fsdp
    b.reduce_scatter = static_cast<int64_t>(half);
    b.all_gather = static_cast<int64_t>(gathers * half);
  }
  return b;
}

double expectedActivationBytesPerLayer(const ActivationLayerShape& m) {
  const double s = double(m.seq), b = double(m.batch), h = double(m.hidden), a = double(m.heads), t = m.tp;
  const double sbh = s * b * h;
  if (m.checkpointing == Checkpointing::Full) return 2.0 * sbh;  // the layer's input
  const double kv = m.kv_heads > 0 ? double(m.kv_heads) / a : 1.0;  // K/V width over h
  const double f = (m.ffn > 0 ? double(m.ffn) : 4.0 * h) / h;       // MLP width over h
  // Korthikanti's 34·s·b·h term by term (bytes per s·b·h):
  const double norm_inputs = 4.0;                   // 2 + 2: both norms' inputs (whole: no sequence parallelism)
  const double qkv_input = 2.0;                     // norm1's output (whole)
  const double qkv = 2.0 * (1.0 + 2.0 * kv) / t;    // Q, K (their 4) and V (2); grouped K/V narrower
  const double proj_input = 2.0 / t;                // the heads' output
  const double mlp_input = 2.0;                     // norm2's output (whole)
  const double mlp_inner = 2.0 * f * (m.gated_mlp ? 3.0 : 2.0) / t;  // GELU in and out (8 + 8); gated: 3 of f·h
  // Their dropout masks (sbh after attention, sbh after the MLP) and the
  // softmax dropout's mask and output: no dropout here, none of them.
  // Not in their count: the norms' fp32 statistics per token (mean and rstd; RMSNorm rstd).
  const double norm_stats = 2.0 * (m.rms_norm ? 4.0 : 8.0) / h;
  double bytes = sbh * (norm_inputs + qkv_input + qkv + proj_input + mlp_input + mlp_inner + norm_stats);
  if (m.checkpointing == Checkpointing::None) {
    // The attention core: their 5·a·s²·b is the softmax (2), its dropout mask
    // (1) and output (2); here only the softmax, 2·a·s²·b/t. Flash keeps one
    // fp32 statistic per row instead: 4·a·s·b/t.
    bytes += m.attention == Attention::Naive ? 2.0 * a * s * s * b / t : 4.0 * a * s * b / t;
  }
  return bytes;
}

}  // namespace shardscope
