// DDP as PyTorch's Reducer does it: full replicas of params, grads and
// optimizer state (16 bytes/param); each bucket's mean all-reduce is launched
// on the comm stream the moment its last gradient arrives, while backward
// continues; the copy-out and the optimizer wait for every bucket. With
// --grad-dtype fp32 the fp32 buckets are the gradients (Megatron-LM's
// main_grad, 18 bytes/param): reduced in place, read by the optimizer.
#pragma once

#include "parallel/bucketed_strategy.h"

namespace shardscope {

class DdpStrategy : public BucketedStrategy {
 public:
  explicit DdpStrategy(RankEnv& env) : BucketedStrategy(env, 1, /*persistent_buckets=*/true) {}
  void copyOwnedMaster(std::vector<float>& full) const override;
  CommBytes stepCommBytes() const override { return m_env.world.stepBytes(); }

 protected:
  void setupState() override;
  bf16* segmentGrads(int segment) override { return m_grads.data() + segmentOffset(segment); }
  void launchBucket(int b, int32_t ready_op) override;
  void finishStep(int step) override;

 private:
  void adamFromBuckets(int step);  // --grad-dtype fp32

  Buffer<bf16> m_grads;
  Buffer<float> m_master, m_adamM, m_adamV;
};

}  // namespace shardscope
