#include "parallel/zero_strategy.h"

#include <cstring>

#include "kernels/cpu_kernels.h"

namespace shardscope {

ZeroStrategy::ZeroStrategy(RankEnv& env, int stage)
    : BucketedStrategy(env, env.dp_size, /*persistent_buckets=*/stage == 1), m_stage(stage) {
  m_layout = std::make_unique<BucketShardLayout>(env.spec, m_reducer->buckets(), env.dp_size, env.dp_rank);
}

void ZeroStrategy::setupState() {
  MemoryLedger& ledger = m_env.ctx.ledger;
  const auto shard = static_cast<size_t>(m_layout->shardElements());
  if (m_reducer->fp32())  // the fp32 buckets are the full gradients; the reduce-scatters land here
    m_gradShard32 = Buffer<float>(ledger, Category::Bucket, shard);
  else
    m_grads = Buffer<bf16>(ledger, Category::Grad, m_stage == 1 ? static_cast<size_t>(m_env.spec.numParams()) : shard);
  m_master = Buffer<float>(ledger, Category::Master, shard);
  m_adamM = Buffer<float>(ledger, Category::AdamM, shard);
  m_adamV = Buffer<float>(ledger, Category::AdamV, shard);
  if (!m_env.ctx.meta()) {
    std::vector<float> owned(shard, 0.0f);
    m_layout->gather(m_initMaster.data(), owned.data());
    m_env.ctx.ops().upload(m_master.data(), owned.data(), m_master.bytes());
  }
}

bf16* ZeroStrategy::segmentGrads(int segment) {
  if (m_stage == 1) return m_grads.data() + segmentOffset(segment);
  // Stage 2 has no resident full gradients: backward writes a segment's into a
  // transient buffer, the hooks copy them into buckets, and it is freed.
  m_segmentGrads = Buffer<bf16>(m_env.ctx.ledger, Category::GradFull,
                                static_cast<size_t>(m_env.spec.segmentElements(segment)));
  return m_segmentGrads.data();
}

void ZeroStrategy::afterSegmentBackward(int) {
  if (m_stage == 2) m_segmentGrads.reset();
}

void ZeroStrategy::launchBucket(int b, int32_t ready_op) {
  if (m_reducer->fp32()) {
    m_env.comm.enqueue([this, b, ready_op] {
      m_env.world.reduceScatter(m_reducer->bucketBuffer32(b).data(), m_gradShard32.data() + m_layout->shardOffset(b),
                                static_cast<size_t>(m_layout->chunk(b)), DType::F32, {b, -1, ready_op}, Lane::Comm);
    });
    return;
  }
  m_env.comm.enqueue([this, b, ready_op] {
    RankContext& ctx = m_env.ctx;
    Buffer<bf16>& bucket = m_reducer->bucketBuffer(b);
    const auto chunk = static_cast<size_t>(m_layout->chunk(b));
    if (m_stage == 2) {
      // The reduced chunk lands straight in this rank's gradient shard.
      m_env.world.reduceScatter(bucket.data(), m_grads.data() + m_layout->shardOffset(b), chunk, DType::BF16,
                                {b, -1, ready_op}, Lane::Comm);
      m_reducer->releaseBucket(b);  // the bucket's full gradients are gone
      return;
    }
    Buffer<bf16> reduced(ctx.ledger, Category::Bucket, chunk);
    m_env.world.reduceScatter(bucket.data(), reduced.data(), chunk, DType::BF16, {b, -1, ready_op}, Lane::Comm);
    // Stage 1 keeps full gradients: the owned chunk is overwritten with the sum.
    const auto [s0, s1] = m_layout->bucketSpans(b);
    const int64_t base = m_layout->shardOffset(b);
    for (size_t i = s0; i < s1 && !ctx.meta(); ++i) {
      const ShardSpan& s = m_layout->spans()[i];
      ctx.ops().copy(m_grads.data() + s.flat_offset, reduced.data() + (s.shard_offset - base), sizeof(bf16) * s.count);
    }
  });
}

void ZeroStrategy::finishStep(int step) {
  RankContext& ctx = m_env.ctx;
  const auto shard = static_cast<size_t>(m_layout->shardElements());
  auto param_shard = std::make_shared<Buffer<bf16>>(ctx.ledger, Category::Workspace, shard);
  StreamEventPtr reduced = m_env.comm.record();
  m_env.compute.enqueue([&ctx, reduced] {
    Event w;
    w.dep = reduced->opId();
    ScopedEvent scope(ctx, Lane::Compute, EventKind::Wait, w);
    reduced->wait(ctx.control);
  });
  ctx.hostIssue(1, 0);  // one fused Adam kernel over the shard
  m_env.compute.enqueue([this, &ctx, step, shard, param_shard] {
    ctx.gatePoint(EventKind::OptimizerStep);
    ScopedEvent scope(ctx, Lane::Compute, EventKind::OptimizerStep);
    if (m_reducer->fp32()) {
      if (!ctx.meta())
        cpu::adamStep(m_master.data(), m_adamM.data(), m_adamV.data(), m_gradShard32.data(), param_shard->data(),
                      shard, adamConfig(), step + 1);
      ctx.chargeMemory((kAdamBytesPerElement + 2) * double(shard));
      return;
    }
    const bf16* grads = m_grads.data();
    Buffer<bf16> gathered;
    if (m_stage == 1) {  // the owned chunk of the full gradients, in shard order
      gathered = Buffer<bf16>(ctx.ledger, Category::Workspace, shard);
      for (const ShardSpan& s : m_layout->spans())
        if (!ctx.meta())
          ctx.ops().copy(gathered.data() + s.shard_offset, m_grads.data() + s.flat_offset, sizeof(bf16) * s.count);
      grads = gathered.data();
    }
    if (!ctx.meta())
      ctx.ops().adamStep(m_master.data(), m_adamM.data(), m_adamV.data(), grads, param_shard->data(), shard,
                    adamConfig(), step + 1);
    ctx.chargeMemory(kAdamBytesPerElement * double(shard));
  });
  // All-gather the updated parameters bucket by bucket (the all-reduce's second
  // half), once the compute stream is past here: stepping stops at the launch.
  if (ctx.gated()) m_env.compute.enqueue([&ctx] { ctx.gatePoint(EventKind::AllGather); });
  StreamEventPtr updated = m_env.compute.record();
  m_env.comm.waitEvent(updated);
  ctx.hostIssue(static_cast<int>(m_reducer->buckets().size()), 0);  // one all-gather per bucket
  for (const Bucket& b : m_reducer->buckets()) {
    m_env.comm.enqueue([this, &ctx, &b, param_shard] {
      const int index = b.index;
      const auto chunk = static_cast<size_t>(m_layout->chunk(index));
      Buffer<bf16> full(ctx.ledger, Category::Bucket, chunk * m_env.dp_size);
      m_env.world.allGather(param_shard->data() + m_layout->shardOffset(index), full.data(), chunk, DType::BF16,
                            {index, -1, -1}, Lane::Comm);
      for (size_t i = 0; i < b.entries.size() && !ctx.meta(); ++i) {
        const ParamInfo& p = m_env.spec.params()[b.entries[i].param];
        ctx.ops().copy(m_params.data() + p.offset, full.data() + b.entries[i].offset, sizeof(bf16) * p.numel());
      }
      ctx.chargeMemory(2.0 * full.bytes());
    });
  }
  m_env.comm.synchronize();
}

int64_t ZeroStrategy::paddingStateBytes() const {
  // Every rank holds S elements per sharded tensor and S·P = N + padding, so
  // each pays padding/P of them: in master, m, v (and the grad shard in stage 2).
  const int64_t ranks = m_env.dp_size;
  const int64_t excess = m_layout->shardElements() * ranks - m_env.spec.numParams();
  return (m_stage == 1 ? 12 : 14) * excess / ranks;
}

void ZeroStrategy::copyOwnedMaster(std::vector<float>& full) const {
  std::vector<float> owned(m_master.size());
  m_env.ctx.ops().download(owned.data(), m_master.data(), m_master.bytes());
  m_layout->scatter(owned.data(), full.data());
}

}  // namespace shardscope
