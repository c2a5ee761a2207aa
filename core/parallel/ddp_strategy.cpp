#include "parallel/ddp_strategy.h"

#include <cstring>
#include <sstream>

#include "common/errors.h"
#include "kernels/cpu_kernels.h"

namespace shardscope {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
}

DdpStrategy::DdpStrategy(RankEnv& env)
    : m_env(env),
      m_buckets(planBuckets(env.spec, static_cast<int64_t>(env.config.bucket_mb * kMiB),
                            static_cast<int64_t>(env.config.first_bucket_mb * kMiB),
                            static_cast<int>(sizeof(bf16)))),
      m_model(env.spec, env.ctx.ledger, env.config.batch / env.config.ranks) {
  const auto n_params = env.spec.params().size();
  m_bucketOf.assign(n_params, -1);
  m_entryOf.assign(n_params, -1);
  for (const Bucket& b : m_buckets)
    for (size_t e = 0; e < b.entries.size(); ++e) {
      m_bucketOf[b.entries[e].param] = b.index;
      m_entryOf[b.entries[e].param] = static_cast<int>(e);
    }
  if (env.config.inject_branch && env.config.inject_branch->rank == env.ctx.rank) {
    m_skipBlockHere = true;
    m_skipSegment = env.config.inject_branch->block + 1;
  }
}

void DdpStrategy::setup() {
  const auto n = static_cast<size_t>(m_env.spec.numParams());
  MemoryLedger& ledger = m_env.ctx.ledger;
  m_master = Buffer<float>(ledger, Category::Master, n);
  m_adamM = Buffer<float>(ledger, Category::AdamM, n);
  m_adamV = Buffer<float>(ledger, Category::AdamV, n);
  m_params = Buffer<bf16>(ledger, Category::Param, n);
  m_grads = Buffer<bf16>(ledger, Category::Grad, n);
  for (const Bucket& b : m_buckets)
    m_bucketBufs.emplace_back(ledger, Category::Bucket, static_cast<size_t>(b.elements));

  // As DDP's constructor: rank 0's initial state is broadcast to every replica.
  if (m_env.ctx.rank == 0) MlpModel::initParams(m_env.spec, m_env.config.seed, m_master.data());
  m_env.world.broadcast(m_master.data(), n, DType::F32, 0, Lane::Comm);
  cpu::f32ToBf16(m_master.data(), m_params.data(), n);
}

double DdpStrategy::step(int step) {
  RankContext& ctx = m_env.ctx;
  const ModelSpec& spec = m_env.spec;
  const int local = m_model.localBatch(), io = spec.shape().io_dim;
  m_env.world.resetStepBytes();
  m_pending.assign(m_buckets.size(), 0);
  for (const Bucket& b : m_buckets) m_pending[b.index] = static_cast<int>(b.entries.size());
  m_readyOp.assign(m_buckets.size(), -1);
  m_arrived.assign(spec.params().size(), 0);
  m_nextLaunch = 0;
  m_fireOrder.clear();

  // This rank's slice of the global batch. Members, not locals: queued stream
  // tasks read them, and an aborted step unwinds before the streams stop.
  m_inputs = Buffer<float>(ctx.ledger, Category::Activation, static_cast<size_t>(local) * io);
  m_targets = Buffer<float>(ctx.ledger, Category::Activation, static_cast<size_t>(local) * io);
  m_env.data.batch(step, static_cast<int64_t>(ctx.rank) * local, local, m_inputs.data(),
                   m_targets.data());

  CpuStream& compute = m_env.compute;
  compute.enqueue([this] { m_model.setInput(m_inputs.data()); });
  for (int seg = 0; seg < spec.segmentCount(); ++seg) {
    compute.enqueue([this, &ctx, seg] {
      Event f;
      f.block = static_cast<int16_t>(seg);
      ScopedEvent scope(ctx, Lane::Compute, EventKind::Forward, f);
      m_model.forward(seg, segmentWeights(seg), m_skipBlockHere && seg == m_skipSegment);
    });
  }
  compute.enqueue([this, &ctx] {
    ScopedEvent scope(ctx, Lane::Compute, EventKind::Loss);
    m_loss = m_model.loss(m_targets.data());
  });
  for (int seg = spec.segmentCount() - 1; seg >= 0; --seg) {
    compute.enqueue([this, &ctx, seg] {
      Event f;
      f.block = static_cast<int16_t>(seg);
      ScopedEvent scope(ctx, Lane::Compute, EventKind::Backward, f);
      m_model.backward(seg, segmentWeights(seg), segmentGrads(seg),
                       [this](int p) { onGradReady(p); }, m_skipBlockHere && seg == m_skipSegment);
    });
  }
  compute.synchronize();  // backward has run; the reducer state is final
  if (m_nextLaunch < static_cast<int>(m_buckets.size())) reportUnreadyBucket();

  // The optimizer waits for every bucket's all-reduce and copy-out.
  StreamEventPtr reduced = m_env.comm.record();
  compute.enqueue([&ctx, reduced] {
    Event w;
    w.dep = reduced->opId();
    ScopedEvent scope(ctx, Lane::Compute, EventKind::Wait, w);
    reduced->wait(ctx.control);
  });
  compute.enqueue([this, &ctx, step] {
    ScopedEvent scope(ctx, Lane::Compute, EventKind::OptimizerStep);
    cpu::AdamConfig adam;
    adam.lr = static_cast<float>(m_env.config.lr);
    cpu::adamStep(m_master.data(), m_adamM.data(), m_adamV.data(), m_grads.data(), m_params.data(),
                  m_master.size(), adam, step + 1);
  });
  compute.synchronize();
  m_inputs.reset();
  m_targets.reset();
  return m_loss;
}

bf16* DdpStrategy::segmentWeights(int seg) {
  return m_params.data() + m_env.spec.params()[m_env.spec.segmentParams(seg).first].offset;
}

bf16* DdpStrategy::segmentGrads(int seg) {
  return m_grads.data() + m_env.spec.params()[m_env.spec.segmentParams(seg).first].offset;
}

void DdpStrategy::onGradReady(int param) {
  RankContext& ctx = m_env.ctx;
  const int b = m_bucketOf[param];
  const ParamInfo& p = m_env.spec.params()[param];
  const Bucket& bucket = m_buckets[b];
  // Copy into the bucket, pre-divided by P so the sum all-reduce yields the mean
  // (PyTorch divides by world size before the collective, too).
  bf16* dst = m_bucketBufs[b].data() + bucket.entries[m_entryOf[param]].offset;
  std::memcpy(dst, m_grads.data() + p.offset, sizeof(bf16) * p.numel());
  if (ctx.ranks > 1) cpu::scaleBf16InPlace(dst, 1.0f / static_cast<float>(ctx.ranks), p.numel());
  m_arrived[param] = 1;
  Event g;
  g.param = static_cast<int16_t>(param);
  g.bucket = static_cast<int16_t>(b);
  ctx.instant(Lane::Host, EventKind::GradReady, g);
  if (--m_pending[b] == 0) {
    Event r;
    r.bucket = static_cast<int16_t>(b);
    r.bytes = static_cast<int64_t>(m_bucketBufs[b].bytes());
    r.op = ctx.newOp();
    m_readyOp[b] = r.op;
    ctx.instant(Lane::Host, EventKind::BucketReady, r);
    launchReadyBuckets();
  }
}

void DdpStrategy::launchReadyBuckets() {
  while (m_nextLaunch < static_cast<int>(m_buckets.size()) && m_pending[m_nextLaunch] == 0) {
    const int b = m_nextLaunch++;
    m_fireOrder.push_back(b);
    const int32_t ready_op = m_readyOp[b];
    m_env.comm.enqueue([this, b, ready_op] {
      RankContext& ctx = m_env.ctx;
      Buffer<bf16>& buf = m_bucketBufs[b];
      m_env.world.allReduce(buf.data(), buf.size(), DType::BF16, {b, -1, ready_op}, Lane::Comm);
      Event c;
      c.bucket = static_cast<int16_t>(b);
      c.bytes = static_cast<int64_t>(buf.bytes());
      ScopedEvent scope(ctx, Lane::Comm, EventKind::Copy, c);
      for (const BucketPlanEntry& e : m_buckets[b].entries) {
        const ParamInfo& p = m_env.spec.params()[e.param];
        std::memcpy(m_grads.data() + p.offset, buf.data() + e.offset, sizeof(bf16) * p.numel());
      }
    });
  }
}

void DdpStrategy::reportUnreadyBucket() {
  const Bucket& bucket = m_buckets[m_nextLaunch];
  std::ostringstream os;
  os << "bucket " << bucket.index << " never became ready on rank " << m_env.ctx.rank
     << ": backward finished without the gradients of ";
  int listed = 0, missing = 0;
  for (const BucketPlanEntry& e : bucket.entries) {
    if (m_arrived[e.param]) continue;
    ++missing;
    if (listed < 8) os << (listed++ ? ", " : "") << m_env.spec.params()[e.param].name;
  }
  if (missing > listed) os << " and " << (missing - listed) << " more";
  os << " (a rank-dependent branch skipped them), so it never launched the all_reduce of bucket "
     << bucket.index << "; every rank must produce every gradient in the same order";
  const std::string state = os.str();
  m_env.ctx.setStatus(Lane::Host, state);
  // The peers time out in the fingerprint check and report the hang with this
  // state. If every rank skipped the same block nobody is waiting in a
  // collective: report it ourselves after a longer timeout.
  std::mutex mutex;
  std::condition_variable cv;
  std::unique_lock lock(mutex);
  m_env.ctx.control.waitUntil(lock, cv, [] { return false; },
                              std::chrono::milliseconds(2 * m_env.config.timeout_ms));
  throw RunError("hang: " + state);
}

void DdpStrategy::copyOwnedMaster(std::vector<float>& full) const {
  if (m_env.ctx.rank != 0) return;
  std::memcpy(full.data(), m_master.data(), m_master.bytes());
}

std::unique_ptr<Strategy> makeStrategy(RankEnv& env) {
  if (env.config.strategy == "ddp") return std::make_unique<DdpStrategy>(env);
  throw ConfigError("--strategy " + env.config.strategy + " is not yet available");
}

}  // namespace shardscope
