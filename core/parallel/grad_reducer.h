// The gradient-bucket machinery DDP, ZeRO-1 and ZeRO-2 share (PyTorch's
// Reducer): a ready hook per gradient copies it, pre-divided by P, into its
// bucket; the moment a bucket's last gradient arrives it is marked ready and
// buckets are launched strictly in index order through the strategy's launch
// function (all-reduce for DDP, reduce-scatter for ZeRO). If backward ends with
// a bucket never ready — a rank-dependent branch — finishBackward() reports it.
// With --grad-dtype fp32 (Megatron-LM's main_grad) the buckets hold fp32 and
// are the gradients themselves: persistent, booked as Grad, no copy-out.
#pragma once

#include <functional>
#include <vector>

#include "memory/buffer.h"
#include "parallel/bucket_plan.h"
#include "tensor/bf16.h"
#include "parallel/strategy.h"

namespace shardscope {

class GradReducer {
 public:
  // Called on the compute stream when bucket `b` may launch; ready_op is the op
  // id of its BucketReady event (the launch's dependency arrow).
  using LaunchFn = std::function<void(int bucket, int32_t ready_op)>;

  // pad_multiple: bucket buffers are padded to a multiple of it (the shard
  // count for reduce-scatter). persistent: buffers live for the whole run
  // (DDP); otherwise a bucket's buffer is allocated when its first gradient
  // arrives and released by the strategy with releaseBucket().
  GradReducer(RankEnv& env, std::vector<Bucket> buckets, int pad_multiple, bool persistent,
              LaunchFn launch);

  void beginStep();  // host, before backward is enqueued
  // Compute stream: `grad` (numel of the param, bf16) was just written.
  void onGradReady(int param, const bf16* grad);
  // Host, after backward ran: throws RunError (after the peers had a chance to
  // report the hang from their side) if a bucket never became ready.
  void finishBackward();

  const std::vector<Bucket>& buckets() const { return m_buckets; }
  int64_t paddedElements(int b) const { return m_padded[b]; }
  int64_t paddingElements() const;  // summed over buckets
  Buffer<bf16>& bucketBuffer(int b) { return m_buffers[b]; }
  bool fp32() const { return m_fp32; }
  Buffer<float>& bucketBuffer32(int b) { return m_buffers32[b]; }  // fp32 mode
  int64_t elementBytes() const { return m_fp32 ? 4 : 2; }
  void releaseBucket(int b) { m_buffers[b].reset(); }  // any stream, after its collective
  const std::vector<int>& fireOrder() const { return m_fireOrder; }
  int bucketOf(int param) const { return m_bucketOf[param]; }

 private:
  void launchReady();
  [[noreturn]] void reportUnready();

  RankEnv& m_env;
  std::vector<Bucket> m_buckets;
  std::vector<int64_t> m_padded;
  bool m_persistent;
  bool m_fp32;
  LaunchFn m_launch;
  std::vector<int> m_bucketOf, m_entryOf;
  std::vector<Buffer<bf16>> m_buffers;
  std::vector<Buffer<float>> m_buffers32;
  // Per-step state, touched only by the compute stream during backward.
  std::vector<int> m_pending;
  std::vector<int32_t> m_readyOp;
  std::vector<uint8_t> m_arrived;
  int m_nextLaunch = 0;
  std::vector<int> m_fireOrder;
};

}  // namespace shardscope
