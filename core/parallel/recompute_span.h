// Activation checkpointing: the recompute a segment's backward starts with,
// as its own span on the compute lane (a Forward event flagged
// kEventRecompute), charged to the modeled clock as hardware FLOPs.
#pragma once

#include "model/model.h"
#include "rank/rank_context.h"

namespace shardscope {

inline void recomputeSpan(RankContext& ctx, Model& model, int segment, const bf16* w, Event fields,
                          double weight_bytes) {
  if (!model.recomputes(segment)) return;
  fields.flags = kEventRecompute;
  fields.op = -1;  // an op of its own (the backward keeps its id)
  ScopedEvent scope(ctx, Lane::Compute, EventKind::Forward, fields);
  model.recompute(segment, w);
  ctx.chargeCompute(model.recomputeFlops(segment), weight_bytes);
}

}  // namespace shardscope
