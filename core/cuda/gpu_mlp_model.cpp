// GpuMlpModel: mlp_model.cpp's operations one for one, as gpu:: kernels on the
// compute stream. Weight grads are written by the kernel that computes them
// straight into their bf16 slot of g, and onReady fires right after that launch:
// stream order makes the slot ready for anything later enqueued behind it.
#include "cuda/gpu_mlp_model.h"

#include <cuda_runtime_api.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/gpu_model_support.h"
#include "device/rank_device.h"
#include "model/mlp_model.h"

namespace shardscope::gpu {

namespace {

constexpr float kLayerNormEps = 1e-5f;  // cpu::layerNormForward's default

}  // namespace

GpuMlpModel::GpuMlpModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch,
                         uint64_t seed)
    : m_spec(spec), m_ledger(ledger), m_batch(local_batch), m_data(spec.shape().io_dim, seed),
      m_saved(spec.segmentCount()) {
  if (spec.shape().kind != ModelKind::Mlp || !spec.shape().preset.empty()) {
    throw std::invalid_argument("GpuMlpModel: the model spec must be the residual MLP (kind mlp, "
                                "no preset)");
  }
  if (local_batch < 1) {
    throw std::invalid_argument("GpuMlpModel: local_batch = " + std::to_string(local_batch) +
                                " must be >= 1 (batch / ranks)");
  }
}

GpuMlpModel::~GpuMlpModel() = default;

BlasHandle& GpuMlpModel::blas() {
  if (!m_blas) m_blas = std::make_unique<BlasHandle>();
  return *m_blas;
}

void GpuMlpModel::loadBatch(int step, int64_t first) {
  const StreamHandle stream = computeStream("GpuMlpModel", "loadBatch");
  blas();  // its workspace cudaMalloc may synchronize: do it before the step's kernels
  const size_t n = static_cast<size_t>(m_batch) * m_spec.shape().io_dim;
  m_hostX.resize(n);
  m_hostY.resize(n);
  m_data.batch(step, first, m_batch, m_hostX.data(), m_hostY.data());
  m_stageX.resize(n);
  m_stageY.resize(n);
  for (size_t i = 0; i < n; ++i) {
    m_stageX[i] = toBf16(m_hostX[i]);
    m_stageY[i] = toBf16(m_hostY[i]);
  }
  m_cur = Buffer<bf16>(m_ledger, Category::Activation, n);
  m_targets = Buffer<bf16>(m_ledger, Category::Activation, n);
  CUDA_CHECK(cudaMemcpyAsync(m_cur.data(), m_stageX.data(), n * sizeof(bf16),
                             cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(m_targets.data(), m_stageY.data(), n * sizeof(bf16),
                             cudaMemcpyHostToDevice, stream));
}

void GpuMlpModel::releaseBatch() {
  m_cur.reset();
  m_grad.reset();
  m_targets.reset();
}

double GpuMlpModel::forwardFlops(int segment) const { return MlpModel::segmentFlops(m_spec, m_batch, segment); }

void GpuMlpModel::forward(int segment, const bf16* w, bool skip) {
  const int B = m_batch, D = m_spec.shape().hidden, F = 4 * D, io = m_spec.shape().io_dim;
  const int L = m_spec.shape().layers;
  Saved& s = m_saved[segment];
  if (skip) return;  // branch taken: activation passes through unchanged
  const StreamHandle stream = computeStream("GpuMlpModel", "forward");
  BlasHandle& handle = blas();
  if (segment == 0) {
    // out (B, D) = xin (B, io) · Wi^T + bi; Wi (D, io), bi (D)
    Buffer<bf16> out(m_ledger, Category::Activation, static_cast<size_t>(B) * D);
    gemm(handle, false, true, B, D, io, 1.0f, m_cur.data(), w, 0.0f, out.data(), stream);
    addBias<bf16>(out.data(), w + static_cast<size_t>(D) * io, B, D, stream);
    s.in = std::move(m_cur);
    m_cur = std::move(out);
  } else if (segment == L + 1) {
    // out (B, io) = x (B, D) · Wh^T + bh; Wh (io, D), bh (io)
    Buffer<bf16> out(m_ledger, Category::Activation, static_cast<size_t>(B) * io);
    gemm(handle, false, true, B, io, D, 1.0f, m_cur.data(), w, 0.0f, out.data(), stream);
    addBias<bf16>(out.data(), w + static_cast<size_t>(io) * D, B, io, stream);
    s.in = std::move(m_cur);
    m_cur = std::move(out);
  } else {
    // Layout: ln.weight(D) ln.bias(D) fc1.weight(F,D) fc1.bias(F) fc2.weight(D,F) fc2.bias(D)
    const bf16* gamma = w;
    const bf16* beta = gamma + D;
    const bf16* w1 = beta + D;
    const bf16* b1 = w1 + static_cast<size_t>(F) * D;
    const bf16* w2 = b1 + F;
    const bf16* b2 = w2 + static_cast<size_t>(D) * F;
    s.ln = Buffer<bf16>(m_ledger, Category::Activation, static_cast<size_t>(B) * D);
    s.mean = Buffer<float>(m_ledger, Category::Activation, B);
    s.rstd = Buffer<float>(m_ledger, Category::Activation, B);
    s.h = Buffer<bf16>(m_ledger, Category::Activation, static_cast<size_t>(B) * F);
    s.a = Buffer<bf16>(m_ledger, Category::Activation, static_cast<size_t>(B) * F);
    layerNormForward<bf16>(m_cur.data(), gamma, beta, s.ln.data(), s.mean.data(), s.rstd.data(), B,
                           D, kLayerNormEps, stream);
    gemm(handle, false, true, B, F, D, 1.0f, s.ln.data(), w1, 0.0f, s.h.data(), stream);
    addBias<bf16>(s.h.data(), b1, B, F, stream);
    geluForward<bf16>(s.h.data(), s.a.data(), static_cast<size_t>(B) * F, stream);
    Buffer<bf16> out(m_ledger, Category::Activation, static_cast<size_t>(B) * D);
    CUDA_CHECK(cudaMemcpyAsync(out.data(), m_cur.data(), sizeof(bf16) * B * D,
                               cudaMemcpyDeviceToDevice, stream));  // residual
    gemm(handle, false, true, B, D, F, 1.0f, s.a.data(), w2, 1.0f, out.data(), stream);
    addBias<bf16>(out.data(), b2, B, D, stream);
    s.in = std::move(m_cur);
    m_cur = std::move(out);
  }
}

double GpuMlpModel::loss() {
  const int B = m_batch, io = m_spec.shape().io_dim;
  const StreamHandle stream = computeStream("GpuMlpModel", "loss");
  m_grad = Buffer<bf16>(m_ledger, Category::Activation, static_cast<size_t>(B) * io);
  Buffer<float> row_loss(m_ledger, Category::Workspace, B);
  // dpred = 2 (pred - target) / (B io), the loss's mean over this rank's B rows.
  mseLoss<bf16>(m_cur.data(), m_targets.data(), m_grad.data(), row_loss.data(), B, io, B, stream);
  m_loss.enqueueSum(row_loss.data(), static_cast<size_t>(B), m_ledger, stream);
  m_cur.reset();
  // row_loss is freed here, after the launches that use them (stream-ordered).
  return std::numeric_limits<double>::quiet_NaN();
}

double GpuMlpModel::finishLoss(double /*from_loss*/) { return m_loss.value(); }

void GpuMlpModel::backward(int segment, const bf16* w, bf16* g,
                           const std::function<void(int)>& onReady, bool skip) {
  const int B = m_batch, D = m_spec.shape().hidden, F = 4 * D, io = m_spec.shape().io_dim;
  const int L = m_spec.shape().layers;
  if (skip) return;  // identity branch: d(in) = d(out), no parameter gradients
  const StreamHandle stream = computeStream("GpuMlpModel", "backward");
  BlasHandle& handle = blas();
  Saved& s = m_saved[segment];
  const int first = m_spec.segmentParams(segment).first;
  const auto& params = m_spec.params();
  const int64_t base = params[first].offset;
  // The bf16 gradient slot of parameter `param` inside this segment's g.
  auto slot = [&](int param) { return g + (params[param].offset - base); };
  auto ready = [&](int param) {
    if (onReady) onReady(param);
  };
  const bf16* dy = m_grad.data();

  if (segment == 0 || segment == L + 1) {
    const int out_dim = segment == 0 ? D : io, in_dim = segment == 0 ? io : D;
    // dW (out, in) = dy^T (out, B) · in (B, in)
    gemm(handle, true, false, out_dim, in_dim, B, 1.0f, dy, s.in.data(), 0.0f, slot(first),
         stream);
    ready(first);
    biasGrad<bf16>(dy, slot(first + 1), B, out_dim, stream);
    ready(first + 1);
    if (segment != 0) {  // the input projection's d(xin) is not needed
      // dx (B, in) = dy (B, out) · W (out, in)
      Buffer<bf16> dx(m_ledger, Category::Activation, static_cast<size_t>(B) * in_dim);
      gemm(handle, false, false, B, in_dim, out_dim, 1.0f, dy, w, 0.0f, dx.data(), stream);
      m_grad = std::move(dx);
    } else {
      m_grad.reset();
    }
    s = Saved{};
    return;
  }

  const bf16* gamma = w;
  const bf16* w1 = w + 2 * D;
  const bf16* w2 = w1 + static_cast<size_t>(F) * D + F;
  // dW2 (D, F) = dy^T (D, B) · a (B, F); db2 (D) = sum_rows dy
  gemm(handle, true, false, D, F, B, 1.0f, dy, s.a.data(), 0.0f, slot(first + 4), stream);
  ready(first + 4);
  biasGrad<bf16>(dy, slot(first + 5), B, D, stream);
  ready(first + 5);

  // da (B, F) = dy (B, D) · W2 (D, F); dh = gelu'(h) * da
  Buffer<bf16> da(m_ledger, Category::Workspace, static_cast<size_t>(B) * F);
  gemm(handle, false, false, B, F, D, 1.0f, dy, w2, 0.0f, da.data(), stream);
  Buffer<bf16> dh(m_ledger, Category::Workspace, static_cast<size_t>(B) * F);
  geluBackward<bf16>(s.h.data(), da.data(), dh.data(), static_cast<size_t>(B) * F, stream);
  da.reset();
  // dW1 (F, D) = dh^T (F, B) · ln (B, D); db1 (F) = sum_rows dh
  gemm(handle, true, false, F, D, B, 1.0f, dh.data(), s.ln.data(), 0.0f, slot(first + 2), stream);
  ready(first + 2);
  biasGrad<bf16>(dh.data(), slot(first + 3), B, F, stream);
  ready(first + 3);

  // dln (B, D) = dh (B, F) · W1 (F, D)
  Buffer<bf16> dln(m_ledger, Category::Workspace, static_cast<size_t>(B) * D);
  gemm(handle, false, false, B, D, F, 1.0f, dh.data(), w1, 0.0f, dln.data(), stream);
  dh.reset();
  Buffer<bf16> dx(m_ledger, Category::Activation, static_cast<size_t>(B) * D);
  layerNormBackward<bf16>(dln.data(), s.in.data(), gamma, s.mean.data(), s.rstd.data(), dx.data(),
                          slot(first), slot(first + 1), B, D, stream);
  ready(first);
  ready(first + 1);
  residualAdd<bf16>(dx.data(), dx.data(), dy, static_cast<size_t>(B) * D, stream);  // residual path
  m_grad = std::move(dx);
  s = Saved{};
}

}  // namespace shardscope::gpu
