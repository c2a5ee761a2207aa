#include "parallel/bucketed_strategy.h"

#include "kernels/cpu_kernels.h"
#include "parallel/recompute_span.h"

namespace shardscope {

BucketedStrategy::BucketedStrategy(RankEnv& env, int pad_multiple, bool persistent_buckets)
    : m_env(env),
      m_model(makeRankModel(env)) {
  m_reducer = std::make_unique<GradReducer>(env, env.buckets ? *env.buckets : planBuckets(env.config, env.spec),
                                            pad_multiple, persistent_buckets,
                                            [this](int b, int32_t op) { launchBucket(b, op); });
  if (env.config.inject_branch && env.config.inject_branch->rank == env.ctx.rank) {
    m_skipHere = true;
    m_skipSegment = env.config.inject_branch->block + 1;
  }
}

void BucketedStrategy::setup() {
  const auto n = static_cast<size_t>(m_env.spec.numParams());
  m_params = Buffer<bf16>(m_env.ctx.ledger, Category::Param, n);
  m_initMaster = broadcastInitialWeights(m_env);
  if (!m_env.ctx.meta()) {
    std::vector<bf16> params(n);
    cpu::f32ToBf16(m_initMaster.data(), params.data(), n);
    m_env.ctx.ops().upload(m_params.data(), params.data(), m_params.bytes());
  }
  setupState();
  m_initMaster = {};
}

int64_t BucketedStrategy::segmentOffset(int segment) const { return m_env.spec.segmentOffset(segment); }

bf16* BucketedStrategy::transientGrads(int segment) {
  m_transientGrads = Buffer<bf16>(m_env.ctx.ledger, Category::GradFull,
                                  static_cast<size_t>(m_env.spec.segmentElements(segment)));
  return m_transientGrads.data();
}

bf16* BucketedStrategy::segmentWeights(int segment) { return m_params.data() + segmentOffset(segment); }

cpu::AdamConfig BucketedStrategy::adamConfig() const {
  cpu::AdamConfig adam;
  adam.lr = static_cast<float>(m_env.config.lr);
  return adam;
}

double BucketedStrategy::step(int step) {
  RankContext& ctx = m_env.ctx;
  const ModelSpec& spec = m_env.spec;
  const int64_t first = static_cast<int64_t>(m_env.dp_rank) * m_model->localBatch();
  m_env.world.resetStepBytes();
  m_reducer->beginStep();

  CpuStream& compute = m_env.compute;
  compute.enqueue([this, step, first] { m_model->loadBatch(step, first); });
  // The host launches each segment's kernels (one per weight forward, two
  // backward) before the stream can run them, as FSDP's host does. A bucket's
  // collective is launched by a hook inside backward: one kernel per bucket
  // against three per weight, so it is not charged.
  const auto kernels = [&spec](int seg) {
    const auto [first, last] = spec.segmentParams(seg);
    return last - first;
  };
  for (int seg = 0; seg < spec.segmentCount(); ++seg) {
    ctx.hostIssue(kernels(seg), 0);
    compute.enqueue([this, &ctx, seg] {
      Event f;
      f.block = static_cast<int16_t>(seg);
      ctx.gatePoint(EventKind::Forward, seg);
      ScopedEvent scope(ctx, Lane::Compute, EventKind::Forward, f);
      const bool skip = m_skipHere && seg == m_skipSegment;
      m_model->forward(seg, segmentWeights(seg), skip);
      if (!skip) ctx.chargeCompute(m_model->forwardFlops(seg), 2.0 * m_env.spec.segmentElements(seg));
    });
  }
  compute.enqueue([this, &ctx] {
    ScopedEvent scope(ctx, Lane::Compute, EventKind::Loss);
    m_loss = m_model->loss();
  });
  for (int seg = spec.segmentCount() - 1; seg >= 0; --seg) {
    ctx.hostIssue(2 * kernels(seg), 0);
    compute.enqueue([this, &ctx, &spec, seg] {
      Event f;
      f.block = static_cast<int16_t>(seg);
      ctx.gatePoint(EventKind::Backward, seg);
      const bool skip = m_skipHere && seg == m_skipSegment;
      if (!skip) recomputeSpan(ctx, *m_model, seg, segmentWeights(seg), f, 2.0 * m_env.spec.segmentElements(seg));
      ScopedEvent scope(ctx, Lane::Compute, EventKind::Backward, f);
      bf16* grads = m_reducer->fp32() ? transientGrads(seg) : segmentGrads(seg);
      const int64_t base = segmentOffset(seg);
      // Modeled clock: backward (2x forward FLOPs) is spread over the segment's
      // gradients by size, so each ready hook fires at its gradient's time.
      const double elements = double(m_env.spec.segmentElements(seg));
      const double flops = 2.0 * m_model->forwardFlops(seg);
      m_model->backward(
          seg, segmentWeights(seg), grads,
          [this, grads, base, &spec, &ctx, elements, flops](int p) {
            const double share = double(spec.params()[p].numel()) / elements;
            ctx.chargeCompute(flops * share, 4.0 * spec.params()[p].numel());
            m_reducer->onGradReady(p, grads + (spec.params()[p].offset - base));
          },
          skip);
      afterSegmentBackward(seg);
      m_transientGrads.reset();
    });
  }
  compute.synchronize();  // backward has run; the reducer's state is final
  m_reducer->finishBackward();
  finishStep(step);
  m_model->releaseBatch();
  return m_model->finishLoss(m_loss);
}

}  // namespace shardscope
