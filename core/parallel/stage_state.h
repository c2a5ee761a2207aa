// What a pipeline stage keeps of its model state along its data-parallel
// axis, and how it reduces the gradients its microbatches accumulate:
// replicated parameters (ddp: the gradients all-reduced after the pipeline's
// flush; zero1: reduce-scattered, each rank stepping its shard of master and
// Adam state, the parameters all-gathered back), or sharded per block
// (zero3/fsdp: each block's parameters all-gathered before its forward and
// again before its backward, freed after; each microbatch's gradients
// reduce-scattered into the rank's shard, as FSDP does without no_sync;
// hsdp: the same inside its shard group, each reduced shard all-reduced
// across the replicas; zero2: parameters whole, gradients and optimizer
// state sharded, the updated shards all-gathered after the step).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "parallel/strategy.h"
#include "tensor/bf16.h"

namespace shardscope {

// One model segment a stage holds: where it sits in the stage's flat
// parameters and in the model's (one TP rank's slice).
struct StageSegment {
  int segment = 0;
  int64_t local_offset = 0;
  int64_t spec_offset = 0;
  int64_t elements = 0;
};

class StageState {
 public:
  virtual ~StageState() = default;
  // Host, once: allocate the state; `stage` holds the stage's fp32 initial
  // weights in its flat layout (empty on a meta run).
  virtual void setup(const std::vector<float>& stage) = 0;
  // Compute stream, at the start of a step: zero the accumulated gradients.
  virtual void beginStep() = 0;
  // Compute stream, around a segment's forward or backward: its bf16 weights
  // (sharded: all-gathered now, freed by releaseWeights).
  virtual const bf16* acquireWeights(int segment, int microbatch, bool backward) = 0;
  virtual void releaseWeights(int segment) = 0;
  // Compute stream: where one microbatch's gradients of a segment land, then
  // folded into the stage's (accumulated, or reduce-scattered into the shard).
  virtual bf16* microbatchGrads(int segment) = 0;
  virtual void accumulate(int segment, int microbatch) = 0;
  // Compute stream, after the pipeline's flush: the data-parallel reduction
  // and the optimizer step (mean over microbatches and data-parallel ranks).
  virtual void finishStep(int step) = 0;
  virtual void copyOwnedMaster(std::vector<float>& full) const = 0;
  virtual int64_t paddingElements() const = 0;
  virtual int64_t paddingStateBytes() const = 0;
};

std::unique_ptr<StageState> makeStageState(RankEnv& env, std::vector<StageSegment> segments, int microbatches);

}  // namespace shardscope
