// ZeRO stages 1 and 2 (DeepSpeed): parameters stay replicated in bf16; the
// fp32 master and Adam m, v are sharded 1/P. Buckets fire as in DDP, but each
// is reduce-scattered, so rank r receives the summed gradient of its chunk
// only; it steps that chunk and all-gathers the updated bf16 parameters.
// Stage 1 keeps full gradients (4 + 12/P bytes/param); stage 2 frees a
// bucket's full gradients once its reduce-scatter is done (2 + 14/P). Same
// bytes on the wire as DDP's all-reduce: a reduce-scatter plus an all-gather.
// Stage 1 with --grad-dtype fp32 (Megatron-LM's distributed optimizer): the
// fp32 buckets are the full gradients (6 + 12/P), reduce-scattered in fp32.
#pragma once

#include <memory>

#include "parallel/bucketed_strategy.h"
#include "parallel/shard_layout.h"

namespace shardscope {

class ZeroStrategy : public BucketedStrategy {
 public:
  ZeroStrategy(RankEnv& env, int stage);
  void copyOwnedMaster(std::vector<float>& full) const override;
  CommBytes stepCommBytes() const override { return m_env.world.stepBytes(); }
  int64_t paddingElements() const override { return m_reducer->paddingElements(); }
  int64_t paddingStateBytes() const override;

 protected:
  void setupState() override;
  bf16* segmentGrads(int segment) override;
  void afterSegmentBackward(int segment) override;
  void launchBucket(int b, int32_t ready_op) override;
  void finishStep(int step) override;

 private:
  const int m_stage;
  std::unique_ptr<BucketShardLayout> m_layout;
  Buffer<bf16> m_grads;      // stage 1: full (N); stage 2: this rank's shard
  Buffer<bf16> m_segmentGrads;  // stage 2: one segment's full gradients, during its backward
  Buffer<float> m_gradShard32;  // zero1 --grad-dtype fp32: the reduced fp32 shard the optimizer reads
  Buffer<float> m_master, m_adamM, m_adamV;  // shard
};

}  // namespace shardscope
