#include "model/mlp_model.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "common/random.h"
#include "kernels/cpu_kernels.h"

namespace shardscope {

namespace {
constexpr uint64_t kMlpInitStream = 0x1417;
}

TensorParallelComm& MlpModel::tensorParallel() {
  if (!m_tp) throw std::logic_error("MlpModel: a tensor-parallel slice needs its TP group (setTensorParallel)");
  return *m_tp;
}

MlpModel::MlpModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed)
    : m_spec(spec), m_ledger(ledger), m_batch(local_batch), m_data(spec.shape().io_dim, seed),
      m_saved(spec.segmentCount()) {}

void MlpModel::initParams(const ModelSpec& spec, uint64_t seed, float* master) {
  const auto& params = spec.params();
  const float residual_scale = 1.0f / std::sqrt(2.0f * static_cast<float>(spec.shape().layers));
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    float* out = master + p.offset;
    const bool is_bias = p.name.ends_with(".bias");
    const bool is_ln_weight = p.name.ends_with("ln.weight");
    if (is_bias) {
      std::memset(out, 0, sizeof(float) * p.numel());
    } else if (is_ln_weight) {
      for (int64_t j = 0; j < p.numel(); ++j) out[j] = 1.0f;
    } else {
      float scale = 1.0f / std::sqrt(static_cast<float>(p.cols));  // fan-in
      if (p.name.ends_with("fc2.weight")) scale *= residual_scale;
      for (int64_t j = 0; j < p.numel(); ++j) out[j] = scale * normal(seed, kMlpInitStream + i, j);
    }
  }
}

void MlpModel::loadBatch(int step, int64_t first) {
  const size_t n = static_cast<size_t>(m_batch) * m_spec.shape().io_dim;
  // A pipeline stage keeps only its part: the inputs (first stage), the targets (last).
  std::vector<float> unused;
  if (!m_embeds || !m_computesLoss) unused.resize(n);
  if (m_embeds) m_cur = Buffer<float>(m_ledger, Category::Activation, n);
  if (m_computesLoss) m_targets = Buffer<float>(m_ledger, Category::Activation, n);
  m_data.batch(step, first, m_batch, m_embeds ? m_cur.data() : unused.data(),
               m_computesLoss ? m_targets.data() : unused.data());
}

size_t MlpModel::boundaryElements() const { return static_cast<size_t>(m_batch) * m_spec.shape().hidden; }

void MlpModel::setStageInput(const float* x) {
  m_cur = Buffer<float>(m_ledger, Category::Activation, boundaryElements());
  std::memcpy(m_cur.data(), x, m_cur.bytes());
}

void MlpModel::takeStageOutput(float* x) {
  std::memcpy(x, m_cur.data(), sizeof(float) * boundaryElements());
  m_cur.reset();
}

void MlpModel::setStageOutputGrad(const float* dy) {
  m_grad = Buffer<float>(m_ledger, Category::Activation, boundaryElements());
  std::memcpy(m_grad.data(), dy, m_grad.bytes());
}

void MlpModel::takeStageInputGrad(float* dx) {
  std::memcpy(dx, m_grad.data(), sizeof(float) * boundaryElements());
  m_grad.reset();
}

void MlpModel::releaseBatch() {
  m_cur.reset();
  m_grad.reset();
  m_targets.reset();
}

double MlpModel::segmentFlops(const ModelSpec& spec, int batch, int segment) {
  const double B = batch, D = spec.shape().hidden, io = spec.shape().io_dim;
  if (segment == 0 || segment == spec.shape().layers + 1) return 2.0 * B * D * io;  // whole on every TP rank
  return 2.0 * 2.0 * B * D * 4.0 * D / spec.tp();  // two GEMMs (B,D)x(D,4D) and (B,4D)x(4D,D), split T ways
}

double MlpModel::forwardFlops(int segment) const { return segmentFlops(m_spec, m_batch, segment); }

Buffer<float> MlpModel::weightsF32(int segment, const bf16* w) {
  const auto [first, last] = m_spec.segmentParams(segment);
  const auto& params = m_spec.params();
  const int64_t n = params[last - 1].offset + params[last - 1].numel() - params[first].offset;
  Buffer<float> out(m_ledger, Category::Workspace, static_cast<size_t>(n));
  cpu::bf16ToF32(w, out.data(), static_cast<size_t>(n));
  return out;
}

void MlpModel::forward(int segment, const bf16* w, bool skip) {
  const int tp = m_spec.tp();
  const int B = m_batch, D = m_spec.shape().hidden, F = 4 * D / tp, io = m_spec.shape().io_dim;
  const int L = m_spec.shape().layers;
  Saved& s = m_saved[segment];
  if (skip) return;  // branch taken: activation passes through unchanged
  Buffer<float> wf = weightsF32(segment, w);
  const float* W = wf.data();
  if (segment == 0) {
    Buffer<float> out(m_ledger, Category::Activation, static_cast<size_t>(B) * D);
    cpu::gemm(false, true, B, D, io, 1.0f, m_cur.data(), W, 0.0f, out.data());
    cpu::addBias(out.data(), W + static_cast<size_t>(D) * io, B, D);
    s.in = std::move(m_cur);
    m_cur = std::move(out);
  } else if (segment == L + 1) {
    Buffer<float> out(m_ledger, Category::Activation, static_cast<size_t>(B) * io);
    cpu::gemm(false, true, B, io, D, 1.0f, m_cur.data(), W, 0.0f, out.data());
    cpu::addBias(out.data(), W + static_cast<size_t>(io) * D, B, io);
    s.in = std::move(m_cur);
    m_cur = std::move(out);
  } else {
    // Layout: ln.weight(D) ln.bias(D) fc1.weight(F,D) fc1.bias(F) fc2.weight(D,F) fc2.bias(D)
    const float* g = W;
    const float* beta = g + D;
    const float* w1 = beta + D;
    const float* b1 = w1 + static_cast<size_t>(F) * D;
    const float* w2 = b1 + F;
    const float* b2 = w2 + static_cast<size_t>(D) * F;
    s.ln = Buffer<float>(m_ledger, Category::Activation, static_cast<size_t>(B) * D);
    s.mean = Buffer<float>(m_ledger, Category::Activation, B);
    s.rstd = Buffer<float>(m_ledger, Category::Activation, B);
    s.h = Buffer<float>(m_ledger, Category::Activation, static_cast<size_t>(B) * F);
    s.a = Buffer<float>(m_ledger, Category::Activation, static_cast<size_t>(B) * F);
    cpu::layerNormForward(m_cur.data(), g, beta, s.ln.data(), s.mean.data(), s.rstd.data(), B, D);
    cpu::gemm(false, true, B, F, D, 1.0f, s.ln.data(), w1, 0.0f, s.h.data());
    cpu::addBias(s.h.data(), b1, B, F);
    cpu::geluForward(s.h.data(), s.a.data(), static_cast<size_t>(B) * F);
    Buffer<float> out(m_ledger, Category::Activation, static_cast<size_t>(B) * D);
    if (tp == 1) {
      std::memcpy(out.data(), m_cur.data(), sizeof(float) * B * D);  // residual
      cpu::gemm(false, true, B, D, F, 1.0f, s.a.data(), w2, 1.0f, out.data());
    } else {
      // Row-parallel fc2: each TP rank's partial sum over its F inner features,
      // summed over the group (Megatron's g), then the shared residual and bias.
      cpu::gemm(false, true, B, D, F, 1.0f, s.a.data(), w2, 0.0f, out.data());
      tensorParallel().allReduceActivation(out.data(), static_cast<size_t>(B) * D, segment, false,
                                           forwardFlops(segment));
      cpu::addInPlace(out.data(), m_cur.data(), static_cast<size_t>(B) * D);
    }
    cpu::addBias(out.data(), b2, B, D);
    s.in = std::move(m_cur);
    m_cur = std::move(out);
  }
}

double MlpModel::loss() {
  const int B = m_batch, io = m_spec.shape().io_dim;
  m_grad = Buffer<float>(m_ledger, Category::Activation, static_cast<size_t>(B) * io);
  const double l = cpu::mseLoss(m_cur.data(), m_targets.data(), m_grad.data(), B, io, B);
  m_cur.reset();
  return l;
}

void MlpModel::emitGrad(int param, const float* grad, bf16* g_segment, int64_t seg_offset,
                        const std::function<void(int)>& onReady) {
  const ParamInfo& p = m_spec.params()[param];
  cpu::f32ToBf16(grad, g_segment + (p.offset - seg_offset), static_cast<size_t>(p.numel()));
  if (onReady) onReady(param);
}

void MlpModel::backward(int segment, const bf16* w, bf16* g,
                        const std::function<void(int)>& onReady, bool skip) {
  const int tp = m_spec.tp();
  const int B = m_batch, D = m_spec.shape().hidden, F = 4 * D / tp, io = m_spec.shape().io_dim;
  const int L = m_spec.shape().layers;
  if (skip) return;  // identity branch: d(in) = d(out), no parameter gradients
  Saved& s = m_saved[segment];
  const auto [first, last] = m_spec.segmentParams(segment);
  (void)last;
  const int64_t base = m_spec.params()[first].offset;
  Buffer<float> wf = weightsF32(segment, w);
  const float* W = wf.data();
  const float* dy = m_grad.data();

  if (segment == 0 || segment == L + 1) {
    const int out_dim = segment == 0 ? D : io, in_dim = segment == 0 ? io : D;
    Buffer<float> dw(m_ledger, Category::Workspace, static_cast<size_t>(out_dim) * in_dim);
    Buffer<float> db(m_ledger, Category::Workspace, out_dim);
    cpu::gemm(true, false, out_dim, in_dim, B, 1.0f, dy, s.in.data(), 0.0f, dw.data());
    emitGrad(first, dw.data(), g, base, onReady);
    cpu::biasGrad(dy, db.data(), B, out_dim);
    emitGrad(first + 1, db.data(), g, base, onReady);
    if (segment != 0) {  // the input projection's d(xin) is not needed
      Buffer<float> dx(m_ledger, Category::Activation, static_cast<size_t>(B) * in_dim);
      cpu::gemm(false, false, B, in_dim, out_dim, 1.0f, dy, W, 0.0f, dx.data());
      m_grad = std::move(dx);
    } else {
      m_grad.reset();
    }
    s = Saved{};
    return;
  }

  const float* gamma = W;
  const float* w1 = W + 2 * D;
  const float* w2 = w1 + static_cast<size_t>(F) * D + F;
  Buffer<float> dw2(m_ledger, Category::Workspace, static_cast<size_t>(D) * F);
  cpu::gemm(true, false, D, F, B, 1.0f, dy, s.a.data(), 0.0f, dw2.data());
  emitGrad(first + 4, dw2.data(), g, base, onReady);
  dw2.reset();
  Buffer<float> db2(m_ledger, Category::Workspace, D);
  cpu::biasGrad(dy, db2.data(), B, D);
  emitGrad(first + 5, db2.data(), g, base, onReady);

  Buffer<float> da(m_ledger, Category::Workspace, static_cast<size_t>(B) * F);
  cpu::gemm(false, false, B, F, D, 1.0f, dy, w2, 0.0f, da.data());
  Buffer<float> dh(m_ledger, Category::Workspace, static_cast<size_t>(B) * F);
  cpu::geluBackward(s.h.data(), da.data(), dh.data(), static_cast<size_t>(B) * F);
  da.reset();
  Buffer<float> dw1(m_ledger, Category::Workspace, static_cast<size_t>(F) * D);
  cpu::gemm(true, false, F, D, B, 1.0f, dh.data(), s.ln.data(), 0.0f, dw1.data());
  emitGrad(first + 2, dw1.data(), g, base, onReady);
  dw1.reset();
  Buffer<float> db1(m_ledger, Category::Workspace, F);
  cpu::biasGrad(dh.data(), db1.data(), B, F);
  emitGrad(first + 3, db1.data(), g, base, onReady);

  Buffer<float> dln(m_ledger, Category::Workspace, static_cast<size_t>(B) * D);
  cpu::gemm(false, false, B, D, F, 1.0f, dh.data(), w1, 0.0f, dln.data());
  dh.reset();
  // Column-parallel fc1: its input (the LN output) is shared, so its gradient
  // is the sum of the TP ranks' parts (Megatron's f in backward).
  if (tp > 1)
    tensorParallel().allReduceActivation(dln.data(), static_cast<size_t>(B) * D, segment, true,
                                         2.0 * forwardFlops(segment));
  Buffer<float> dx(m_ledger, Category::Activation, static_cast<size_t>(B) * D);
  Buffer<float> dgamma(m_ledger, Category::Workspace, D), dbeta(m_ledger, Category::Workspace, D);
  cpu::layerNormBackward(dln.data(), s.in.data(), gamma, s.mean.data(), s.rstd.data(), dx.data(),
                         dgamma.data(), dbeta.data(), B, D);
  cpu::addInPlace(dx.data(), dy, static_cast<size_t>(B) * D);  // residual path
  emitGrad(first, dgamma.data(), g, base, onReady);
  emitGrad(first + 1, dbeta.data(), g, base, onReady);
  m_grad = std::move(dx);
  s = Saved{};
}

}  // namespace shardscope
