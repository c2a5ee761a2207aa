// What one transformer block costs a calibrated cost model on one rank: the
// GEMMs of its forward and backward by shape (Megatron-LM's split under
// tensor parallelism) and the HBM bytes of its memory-bound ops.
#pragma once

#include "model/model_spec.h"
#include "rank/compute_work.h"

namespace shardscope {

// `slice`: one TP rank's parameter table; `local_batch` samples of the
// shape's sequence (gpt, published shapes), or of the residual MLP's one
// token each (its block: norm, fc1, GeLU, fc2).
BlockWork blockWork(const ModelSpec& slice, int local_batch);

}  // namespace shardscope
