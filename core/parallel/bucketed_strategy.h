// What DDP, ZeRO-1 and ZeRO-2 share: full bf16 parameters on every rank, a
// forward and backward over the whole model on the compute stream, and a
// GradReducer whose bucket hooks fire collectives during backward. Subclasses
// say where gradients are written, what a bucket's launch does, and how the
// step finishes (the optimizer and, for ZeRO, the parameter all-gather).
#pragma once

#include <memory>

#include "kernels/cpu_kernels.h"
#include "memory/buffer.h"
#include "model/model.h"
#include "parallel/grad_reducer.h"
#include "parallel/strategy.h"

namespace shardscope {

class BucketedStrategy : public ParallelStrategy {
 public:
  double step(int step) final;
  void setup() override;
  std::vector<int> lastFireOrder() const override { return m_reducer->fireOrder(); }
  int64_t activationBytesPerLayer() const override { return m_model->activationBytesPerLayer(); }
  const std::vector<Bucket>& buckets() const { return m_reducer->buckets(); }

 protected:
  BucketedStrategy(RankEnv& env, int pad_multiple, bool persistent_buckets);

  // Where backward writes the grads of `segment` (segment-contiguous, bf16).
  virtual bf16* segmentGrads(int segment) = 0;
  // Called on the compute stream after a segment's backward (e.g. to free a
  // transient gradient buffer).
  virtual void afterSegmentBackward(int /*segment*/) {}
  // Compute stream: bucket b is ready and in order; enqueue its collective.
  virtual void launchBucket(int b, int32_t ready_op) = 0;
  // Host, after backward ran and every bucket launched: enqueue the rest of
  // the step (wait for the collectives, optimizer, ...) and synchronise.
  virtual void finishStep(int step) = 0;
  // Host, once in setup(): allocate the strategy's model state. m_initMaster
  // holds the initial fp32 weights (identical on all ranks) until it returns.
  virtual void setupState() = 0;

  bf16* segmentWeights(int segment);
  int64_t segmentOffset(int segment) const;
  cpu::AdamConfig adamConfig() const;

  RankEnv& m_env;
  std::unique_ptr<Model> m_model;
  Buffer<bf16> m_params;           // full bf16 compute weights (N)
  std::vector<float> m_initMaster; // only during setup()
  std::unique_ptr<GradReducer> m_reducer;
  double m_loss = 0;

 private:
  // --grad-dtype fp32: backward writes a segment's bf16 gradients here, the
  // hooks cast them into the fp32 buckets, and it is freed after the segment.
  bf16* transientGrads(int segment);
  Buffer<bf16> m_transientGrads;
  bool m_skipHere = false;
  int m_skipSegment = -1;
};

}  // namespace shardscope
