#include "parallel/ddp_strategy.h"

#include <cstring>

#include "kernels/cpu_kernels.h"

namespace shardscope {

void DdpStrategy::setupState() {
  const auto n = static_cast<size_t>(m_env.spec.numParams());
  MemoryLedger& ledger = m_env.ctx.ledger;
  // fp32 gradients live in the reducer's buckets (Megatron-LM's main_grad).
  if (!m_reducer->fp32()) m_grads = Buffer<bf16>(ledger, Category::Grad, n);
  m_master = Buffer<float>(ledger, Category::Master, n);
  m_adamM = Buffer<float>(ledger, Category::AdamM, n);
  m_adamV = Buffer<float>(ledger, Category::AdamV, n);
  if (!m_env.ctx.meta()) m_env.ctx.ops().upload(m_master.data(), m_initMaster.data(), m_master.bytes());
}

void DdpStrategy::launchBucket(int b, int32_t ready_op) {
  if (m_reducer->fp32()) {  // reduced in place: the bucket is the gradient
    m_env.comm.enqueue([this, b, ready_op] {
      Buffer<float>& buf = m_reducer->bucketBuffer32(b);
      m_env.world.allReduce(buf.data(), buf.size(), DType::F32, {b, -1, ready_op}, Lane::Comm);
    });
    return;
  }
  m_env.comm.enqueue([this, b, ready_op] {
    RankContext& ctx = m_env.ctx;
    Buffer<bf16>& buf = m_reducer->bucketBuffer(b);
    const Bucket& bucket = m_reducer->buckets()[b];
    m_env.world.allReduce(buf.data(), buf.size(), DType::BF16, {b, -1, ready_op}, Lane::Comm);
    Event c;
    c.bucket = static_cast<int16_t>(b);
    c.bytes = static_cast<int64_t>(buf.bytes());
    ScopedEvent scope(ctx, Lane::Comm, EventKind::Copy, c);
    if (!ctx.meta())
      for (const BucketPlanEntry& e : bucket.entries) {
        const ParamInfo& p = m_env.spec.params()[e.param];
        ctx.ops().copy(m_grads.data() + p.offset, buf.data() + e.offset, sizeof(bf16) * p.numel());
      }
    ctx.chargeMemory(2.0 * buf.bytes());
  });
}

void DdpStrategy::finishStep(int step) {
  RankContext& ctx = m_env.ctx;
  // The optimizer waits for every bucket's all-reduce and copy-out.
  StreamEventPtr reduced = m_env.comm.record();
  m_env.compute.enqueue([&ctx, reduced] {
    Event w;
    w.dep = reduced->opId();
    ScopedEvent scope(ctx, Lane::Compute, EventKind::Wait, w);
    reduced->wait(ctx.control);
  });
  ctx.hostIssue(1, 0);  // one fused Adam kernel
  m_env.compute.enqueue([this, &ctx, step] {
    ctx.gatePoint(EventKind::OptimizerStep);
    ScopedEvent scope(ctx, Lane::Compute, EventKind::OptimizerStep);
    if (m_reducer->fp32()) {
      adamFromBuckets(step);
    } else if (!ctx.meta()) {
      ctx.ops().adamStep(m_master.data(), m_adamM.data(), m_adamV.data(), m_grads.data(), m_params.data(),
                         m_master.size(), adamConfig(), step + 1);
    }
    ctx.chargeMemory((kAdamBytesPerElement + (m_reducer->fp32() ? 2 : 0)) * double(m_master.size()));
  });
  m_env.compute.synchronize();
}

void DdpStrategy::adamFromBuckets(int step) {
  // Each parameter's fp32 gradient sits at its slot in its bucket.
  if (m_env.ctx.meta()) return;
  const cpu::AdamConfig adam = adamConfig();
  for (const Bucket& bucket : m_reducer->buckets()) {
    const float* grads = m_reducer->bucketBuffer32(bucket.index).data();
    for (const BucketPlanEntry& e : bucket.entries) {
      const ParamInfo& p = m_env.spec.params()[e.param];
      const auto o = static_cast<size_t>(p.offset);
      cpu::adamStep(m_master.data() + o, m_adamM.data() + o, m_adamV.data() + o, grads + e.offset,
                    m_params.data() + o, static_cast<size_t>(p.numel()), adam, step + 1);
    }
  }
}

void DdpStrategy::copyOwnedMaster(std::vector<float>& full) const {
  if (m_env.dp_rank != 0) return;
  m_env.ctx.ops().download(full.data(), m_master.data(), m_master.bytes());
}

}  // namespace shardscope
