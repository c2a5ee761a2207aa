// What one transformer block costs a calibrated cost model on one rank: the
// GEMMs of its forward and backward by shape (Megatron-LM's split under
// tensor parallelism) and the HBM bytes of its memory-bound ops.
#pragma once

#include "model/model_spec.h"
#include "rank/compute_work.h"

namespace shardscope {

// `slice`: one TP rank's parameter table; `local_batch` samples of the
// shape's sequence. Token models only (gpt, published shapes); the residual
// MLP gives an empty work (its compute keeps the profile's flat rate).
BlockWork blockWork(const ModelSpec& slice, int local_batch);

}  // namespace shardscope
