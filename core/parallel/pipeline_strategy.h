// Pipeline parallelism on one rank: stage s of S holds its model chunks (one,
// or V under the interleaved schedule), runs the schedule's forward and
// backward passes microbatch by microbatch on the compute stream — receiving
// its input from the stage before and its output gradient from the stage
// after, sending its own on (bf16, as Megatron-LM sends activations) — and
// accumulates the gradients of all M microbatches. Its model state along the
// data-parallel axis, and the reduction after the pipeline's flush, are the
// strategy's (parallel/stage_state.h: ddp, zero1, zero3/fsdp).
// One microbatch's activations live from its forward to its backward, so the
// ledger holds what the schedule keeps in flight (1F1B: S − s on stage s).
#pragma once

#include <memory>
#include <vector>

#include "memory/buffer.h"
#include "model/model.h"
#include "parallel/pipeline_schedule.h"
#include "parallel/pipeline_stages.h"
#include "parallel/stage_state.h"
#include "parallel/strategy.h"

namespace shardscope {

class PipelineStrategy : public ParallelStrategy {
 public:
  explicit PipelineStrategy(RankEnv& env);
  void setup() override;
  double step(int step) override;
  void copyOwnedMaster(std::vector<float>& full) const override;
  CommBytes stepCommBytes() const override;
  int64_t paddingElements() const override { return m_state->paddingElements(); }
  int64_t paddingStateBytes() const override { return m_state->paddingStateBytes(); }
  int64_t activationBytesPerLayer() const override;

 private:
  struct Chunk {
    PipelineChunk where;
    int64_t local_offset = 0;  // into this stage's flat parameters
    int64_t spec_offset = 0;   // into the model's (the TP slice's) flat parameters
    int64_t elements = 0;
  };
  void runForward(int step, const PipelineAction& a);
  void runBackward(const PipelineAction& a);
  const Chunk& chunkFor(int global_chunk) const;
  // The receiving chunk a transfer names: only interleaved schedules have several per stage.
  int chunkTag(int chunk) const { return m_schedule.virtualStages() > 1 ? chunk : 0; }

  RankEnv& m_env;
  const int m_microbatches, m_microBatchSize;
  PipelineScheduleOrder m_schedule;
  std::unique_ptr<PipelineStages> m_stages;
  std::vector<Chunk> m_chunks;  // this stage's, in model order
  int64_t m_elements = 0;       // the stage's parameters
  std::unique_ptr<StageState> m_state;
  bool m_holdsLoss = false;  // this stage holds the head (the last chunk): it computes the loss
  std::vector<std::unique_ptr<Model>> m_models;  // one per microbatch
  std::vector<int> m_lastBackward;  // per microbatch: backward passes left on this rank
  std::vector<float> m_boundary;             // host staging: fp32 boundary tensor
  std::vector<bf16> m_wire;                  // host staging: what crosses the wire (bf16)
  double m_loss = 0;
  // --inject-branch on this rank: the stage holding that block takes a
  // rank-dependent branch in microbatch 1 that skips the block and returns
  // before its send, as a `if rank == r: return x` in a stage's forward would.
  int m_skipSegment = -1;
};

}  // namespace shardscope
