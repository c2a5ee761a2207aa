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

}  // namespace shardscope
