#include "model/meta_model.h"

namespace shardscope {

MetaModel::MetaModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed)
    : m_spec(spec), m_ledger(ledger), m_batch(local_batch), m_saved(spec.segmentCount()) {
  // The FLOP counts come from the real model of this kind (it allocates no
  // tensors until a batch is loaded).
  if (!spec.shape().preset.empty()) {
    // A published transformer: 2 FLOPs per weight per token in each linear,
    // plus attention scores and values (2·2·T·D per token), plus the LM head.
    const ModelShape& m = spec.shape();
    const double tokens = double(local_batch) * m.seq;
    for (int s = 0; s < spec.segmentCount(); ++s) {
      if (s == 0) m_flops.push_back(0.0);
      else if (s == m.layers + 1) m_flops.push_back(2.0 * tokens * m.hidden * m.vocab);
      else m_flops.push_back(2.0 * tokens * double(spec.segmentElements(s)) + 4.0 * tokens * m.seq * m.hidden);
    }
    return;
  }
  MemoryLedger scratch(0, nullptr, nullptr);
  const auto real = makeModel(spec, scratch, local_batch, seed);
  for (int s = 0; s < spec.segmentCount(); ++s) m_flops.push_back(real->forwardFlops(s));
}

int64_t MetaModel::savedFloats(int segment) const {
  const ModelShape& m = m_spec.shape();
  const int64_t B = m_batch, D = m.hidden, L = m.layers;
  if (m.kind == ModelKind::Gpt) {
    const int64_t tokens = B * m.seq;
    if (segment == 0) return tokens * D;
    if (segment == L + 1) return tokens * (2 * D + m.vocab);  // LN out, stats, logits
    // norm, q/k/v, attention probabilities, attention out, norm, MLP inner (x2, x3 gated).
    const int64_t F = m.ffn > 0 ? m.ffn : 4 * D;
    return tokens * (D + 3 * D + m.heads * int64_t(m.seq) + D + D + (m.gated_mlp ? 3 : 2) * F);
  }
  if (segment == 0) return B * m.io_dim;
  if (segment == L + 1) return B * D;
  return B * (D + D + 2 + 4 * D + 4 * D);  // input, LN out, mean/rstd, pre/post GELU
}

void MetaModel::loadBatch(int, int64_t) {
  const ModelShape& m = m_spec.shape();
  const int64_t per_sample = m.kind == ModelKind::Gpt ? 2 * int64_t(m.seq) : 2 * int64_t(m.io_dim);
  m_batchBuffers = Buffer<float>(m_ledger, Category::Activation, static_cast<size_t>(m_batch * per_sample));
}

void MetaModel::releaseBatch() {
  m_batchBuffers.reset();
  for (auto& b : m_saved) b.reset();
}

void MetaModel::forward(int segment, const bf16*, bool skip) {
  if (skip) return;
  m_saved[segment] = Buffer<float>(m_ledger, Category::Activation, static_cast<size_t>(savedFloats(segment)));
}

void MetaModel::backward(int segment, const bf16*, bf16*, const std::function<void(int)>& onReady, bool skip) {
  if (skip) return;
  const auto [first, last] = m_spec.segmentParams(segment);
  if (onReady)
    for (int p = last - 1; p >= first; --p) onReady(p);
  m_saved[segment].reset();
}

}  // namespace shardscope
