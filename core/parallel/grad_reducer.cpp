#include "parallel/grad_reducer.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <sstream>

#include "common/errors.h"
#include "common/log.h"
#include "kernels/cpu_kernels.h"

namespace shardscope {

GradReducer::GradReducer(RankEnv& env, std::vector<Bucket> buckets, int pad_multiple,
                         bool persistent, LaunchFn launch)
    : m_env(env),
      m_buckets(std::move(buckets)),
      m_persistent(persistent),
      m_fp32(env.config.fp32Grads()),
      m_launch(std::move(launch)) {
  const auto n_params = env.spec.params().size();
  m_bucketOf.assign(n_params, -1);
  m_entryOf.assign(n_params, -1);
  for (const Bucket& b : m_buckets) {
    m_padded.push_back((b.elements + pad_multiple - 1) / pad_multiple * pad_multiple);
    for (size_t e = 0; e < b.entries.size(); ++e) {
      m_bucketOf[b.entries[e].param] = b.index;
      m_entryOf[b.entries[e].param] = static_cast<int>(e);
    }
  }
  m_buffers.resize(m_buckets.size());
  if (m_fp32) {
    m_buffers32.resize(m_buckets.size());
    for (const Bucket& b : m_buckets)
      m_buffers32[b.index] = Buffer<float>(env.ctx.ledger, Category::Grad, static_cast<size_t>(m_padded[b.index]));
    if (!env.ctx.meta())  // the padding is reduced too: keep it zero
      for (Buffer<float>& buf : m_buffers32) std::fill(buf.data(), buf.data() + buf.size(), 0.0f);
  } else if (m_persistent)
    for (const Bucket& b : m_buckets)
      m_buffers[b.index] = Buffer<bf16>(env.ctx.ledger, Category::Bucket, static_cast<size_t>(m_padded[b.index]));
}

int64_t GradReducer::paddingElements() const {
  int64_t pad = 0;
  for (const Bucket& b : m_buckets) pad += m_padded[b.index] - b.elements;
  return pad;
}

void GradReducer::beginStep() {
  m_pending.assign(m_buckets.size(), 0);
  for (const Bucket& b : m_buckets) m_pending[b.index] = static_cast<int>(b.entries.size());
  m_readyOp.assign(m_buckets.size(), -1);
  m_arrived.assign(m_env.spec.params().size(), 0);
  m_nextLaunch = 0;
  m_fireOrder.clear();
}

void GradReducer::onGradReady(int param, const bf16* grad) {
  RankContext& ctx = m_env.ctx;
  const int b = m_bucketOf[param];
  const ParamInfo& p = m_env.spec.params()[param];
  const float scale = 1.0f / static_cast<float>(m_env.dp_size);
  if (m_fp32) {  // cast up into the fp32 slot, pre-divided
    if (!ctx.meta())
      cpu::bf16ToF32Scaled(grad, scale, m_buffers32[b].data() + m_buckets[b].entries[m_entryOf[param]].offset,
                           static_cast<size_t>(p.numel()));
    ctx.chargeMemory(6.0 * p.numel());
  } else if (m_buffers[b].empty()) {  // first gradient of a non-persistent bucket
    m_buffers[b] = Buffer<bf16>(ctx.ledger, Category::Bucket, static_cast<size_t>(m_padded[b]));
  }
  // Pre-divided by P so the sum collective yields the mean, as PyTorch does.
  if (!m_fp32 && !ctx.meta()) {
    bf16* dst = m_buffers[b].data() + m_buckets[b].entries[m_entryOf[param]].offset;
    ctx.ops().copy(dst, grad, sizeof(bf16) * p.numel());
    if (m_env.dp_size > 1) ctx.ops().scaleBf16(dst, scale, p.numel());
  }
  if (!m_fp32) ctx.chargeMemory(4.0 * p.numel());  // read the gradient, write the bucket slot
  m_arrived[param] = 1;
  Event g;
  g.param = static_cast<int16_t>(param);
  g.bucket = static_cast<int16_t>(b);
  ctx.instant(Lane::Host, EventKind::GradReady, g);
  if (--m_pending[b] == 0) {
    Event r;
    r.bucket = static_cast<int16_t>(b);
    r.bytes = m_buckets[b].elements * elementBytes();
    r.op = ctx.newOp();
    m_readyOp[b] = r.op;
    ctx.instant(Lane::Host, EventKind::BucketReady, r);
    launchReady();
  }
}

void GradReducer::launchReady() {
  while (m_nextLaunch < static_cast<int>(m_buckets.size()) && m_pending[m_nextLaunch] == 0) {
    const int b = m_nextLaunch++;
    m_fireOrder.push_back(b);
    m_launch(b, m_readyOp[b]);
  }
}

void GradReducer::finishBackward() {
  if (m_nextLaunch < static_cast<int>(m_buckets.size())) reportUnready();
}

void GradReducer::reportUnready() {
  const Bucket& bucket = m_buckets[m_nextLaunch];
  const char* op = reducesByAllReduce(m_env.config.strategy) ? "all_reduce" : "reduce_scatter";
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
  os << " (a rank-dependent branch skipped them), so it never launched the " << op << " of bucket "
     << bucket.index << "; every rank must produce every gradient in the same order";
  const std::string state = os.str();
  m_env.ctx.setStatus(Lane::Host, state);
  SPDLOG_LOGGER_WARN(&rankLogger(m_env.ctx.rank), "{}", state);
  // The peers time out in the fingerprint check and report the hang with this
  // state. If every rank skipped the same block nobody waits in a collective:
  // report it from here after a longer timeout.
  std::mutex mutex;
  std::condition_variable cv;
  std::unique_lock lock(mutex);
  m_env.ctx.control.waitUntil(lock, cv, [] { return false; },
                              std::chrono::milliseconds(2 * m_env.config.timeout_ms));
  throw RunError("hang: " + state);
}

}  // namespace shardscope
