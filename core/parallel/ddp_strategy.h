// DDP as PyTorch's Reducer does it: full replicas; gradients copied (scaled by
// 1/P) into buckets in reverse parameter order by a per-gradient ready hook; a
// bucket's all-reduce is launched on the comm stream the moment its last
// gradient arrives, in bucket-index order, while backward continues on the
// compute stream; the optimizer waits for every bucket.
#pragma once

#include <vector>

#include "memory/buffer.h"
#include "model/mlp_model.h"
#include "parallel/bucket_plan.h"
#include "parallel/strategy.h"

namespace shardscope {

class DdpStrategy : public Strategy {
 public:
  explicit DdpStrategy(RankEnv& env);
  void setup() override;
  double step(int step) override;
  void copyOwnedMaster(std::vector<float>& full) const override;
  CommBytes stepCommBytes() const override { return m_env.world.stepBytes(); }
  std::vector<int> lastFireOrder() const override { return m_fireOrder; }

  const std::vector<Bucket>& buckets() const { return m_buckets; }

 private:
  bf16* segmentWeights(int seg);
  bf16* segmentGrads(int seg);
  void onGradReady(int param);  // compute stream
  void launchReadyBuckets();    // compute stream, in index order
  [[noreturn]] void reportUnreadyBucket();

  RankEnv& m_env;
  std::vector<Bucket> m_buckets;
  std::vector<int> m_bucketOf;        // param -> bucket
  std::vector<int> m_entryOf;         // param -> entry index within its bucket
  Buffer<bf16> m_params, m_grads;
  Buffer<float> m_master, m_adamM, m_adamV;
  std::vector<Buffer<bf16>> m_bucketBufs;
  MlpModel m_model;
  Buffer<float> m_inputs, m_targets;  // (B/P, io) this step's slice
  bool m_skipBlockHere = false;
  int m_skipSegment = -1;

  // Per-step reducer state, touched only by the compute stream during backward.
  std::vector<int> m_pending;
  std::vector<int32_t> m_readyOp;
  std::vector<uint8_t> m_arrived;
  int m_nextLaunch = 0;
  std::vector<int> m_fireOrder;
  double m_loss = 0;
};

}  // namespace shardscope
