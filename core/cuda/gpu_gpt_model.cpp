// GpuGptModel: gpt_model.cpp's operations one for one, as gpu:: kernels on the
// compute stream. Attention runs on heads made contiguous (splitHeads) so its
// GEMMs are strided batches. Each weight grad is written by the kernel that
// computes it straight into its bf16 slot of g, and onReady fires right after that
// launch: stream order makes the slot ready for anything enqueued behind it.
#include "cuda/gpu_gpt_model.h"

#include <cuda_runtime_api.h>

#include <climits>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/gpu_model_support.h"
#include "device/rank_device.h"
#include "model/gpt_model.h"

namespace shardscope::gpu {

namespace {

constexpr float kLayerNormEps = 1e-5f;  // cpu::layerNormForward's default

// Offsets of a segment's parameters, in registration order (see model_spec.cpp).
enum BlockParam {
  Ln1W, Ln1B, QkvW, QkvB, ProjW, ProjB, Ln2W, Ln2B, Fc1W, Fc1B, Fc2W, Fc2B, kBlockParams
};
enum HeadParam { LnfW, LnfB, LmHeadW, kHeadParams };
enum EmbedParam { Wte, Wpe, kEmbedParams };

size_t elems(int64_t a, int64_t b = 1, int64_t c = 1, int64_t d = 1) {
  return static_cast<size_t>(a * b * c * d);
}

}  // namespace

GpuGptModel::GpuGptModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch,
                         uint64_t seed)
    : m_spec(spec), m_ledger(ledger), m_batch(local_batch), m_data(spec.shape().seq, seed),
      m_saved(spec.segmentCount()) {
  const ModelShape& s = spec.shape();
  if (s.kind != ModelKind::Gpt) throw ConfigError("GpuGptModel: the spec is not a gpt model");
  if (!s.preset.empty()) {
    throw ConfigError("--preset " + s.preset +
                      " has its own parameter table, which only --backend meta runs; the GPU "
                      "GPT model runs the built-in gpt block (drop --preset)");
  }
  if (s.heads <= 0 || s.hidden % s.heads != 0) {
    throw ConfigError("--hidden " + std::to_string(s.hidden) + " must be a multiple of --heads " +
                      std::to_string(s.heads) + " (head dim = hidden / heads)");
  }
  if (s.vocab < 256) {
    throw ConfigError("--vocab " + std::to_string(s.vocab) +
                      " must be >= 256: the corpus is tokenised into bytes");
  }
  if (local_batch < 1) {
    throw std::invalid_argument("GpuGptModel: local_batch = " + std::to_string(local_batch) +
                                " must be >= 1 (batch / ranks)");
  }
  const int64_t softmax_rows = static_cast<int64_t>(local_batch) * s.heads * s.seq;
  if (softmax_rows > INT_MAX) {
    throw ConfigError("--batch per rank x --heads x --seq = " + std::to_string(softmax_rows) +
                      " attention rows exceed the GPU kernels' int range (" +
                      std::to_string(INT_MAX) + "); use more ranks or a shorter --seq");
  }
}

GpuGptModel::~GpuGptModel() = default;

BlasHandle& GpuGptModel::blas() {
  if (!m_blas) m_blas = std::make_unique<BlasHandle>();
  return *m_blas;
}

double GpuGptModel::forwardFlops(int segment) const { return GptModel::segmentFlops(m_spec, m_batch, segment); }

void GpuGptModel::loadBatch(int step, int64_t first) {
  const size_t n = elems(m_batch, m_spec.shape().seq);
  m_hostTokens.resize(n);
  m_hostTargets.resize(n);
  m_data.batch(step, first, m_batch, m_hostTokens.data(), m_hostTargets.data());
  uploadBatch("loadBatch");
}

void GpuGptModel::loadTokens(const int32_t* tokens, const int32_t* targets) {
  const size_t n = elems(m_batch, m_spec.shape().seq);
  const int V = m_spec.shape().vocab;
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V || targets[i] < 0 || targets[i] >= V) {
      throw std::invalid_argument("GpuGptModel::loadTokens: token " + std::to_string(i) +
                                  " is outside the vocabulary [0, " + std::to_string(V) + ")");
    }
  }
  m_hostTokens.assign(tokens, tokens + n);
  m_hostTargets.assign(targets, targets + n);
  uploadBatch("loadTokens");
}

void GpuGptModel::uploadBatch(const char* method) {
  const StreamHandle stream = computeStream("GpuGptModel", method);
  if (m_ledger.meta() || !m_ledger.deviceMemory()) {
    throw std::logic_error(std::string("GpuGptModel::") + method +
                           ": the ledger has no device memory, so Buffers would be host memory "
                           "the kernels cannot read (set MemoryLedger::setDeviceMemory first)");
  }
  blas();  // its workspace cudaMalloc may synchronize: do it before the step's kernels
  const int n = m_batch * m_spec.shape().seq;
  const int V = m_spec.shape().vocab;
  m_hostOffsets.resize(static_cast<size_t>(V) + 1);
  m_hostPositions.resize(static_cast<size_t>(n));
  buildTokenIndex(m_hostTokens.data(), n, V, m_hostOffsets.data(), m_hostPositions.data());
  auto upload = [&](Buffer<int32_t>& dst, const std::vector<int32_t>& src) {
    dst = Buffer<int32_t>(m_ledger, Category::Activation, src.size());
    CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.size() * sizeof(int32_t),
                               cudaMemcpyHostToDevice, stream));
  };
  upload(m_tokens, m_hostTokens);
  upload(m_targets, m_hostTargets);
  upload(m_tokenOffsets, m_hostOffsets);
  upload(m_tokenPositions, m_hostPositions);
}

void GpuGptModel::releaseBatch() {
  m_cur.reset();
  m_grad.reset();
  m_tokens.reset();
  m_targets.reset();
  m_tokenOffsets.reset();
  m_tokenPositions.reset();
}

void GpuGptModel::forward(int segment, const bf16* w, bool skip) {
  const ModelShape& shape = m_spec.shape();
  const int B = m_batch, T = shape.seq, D = shape.hidden, V = shape.vocab, L = shape.layers;
  const int N = B * T;  // tokens on this rank
  const bool is_block = segment >= 1 && segment <= L;
  if (skip) {
    if (!is_block) {
      throw std::invalid_argument("GpuGptModel: only a block can be skipped, not segment " +
                                  m_spec.segmentName(segment));
    }
    return;  // branch taken: the residual stream passes through unchanged
  }
  const StreamHandle stream = computeStream("GpuGptModel", "forward");
  BlasHandle& handle = blas();
  const std::pair<int, int> range = m_spec.segmentParams(segment);
  const int first = range.first, last = range.second;
  const auto& params = m_spec.params();
  const int64_t base = params[first].offset;
  const bf16* p[kBlockParams] = {};  // the segment's params in registration order
  for (int i = 0; i < last - first && i < kBlockParams; ++i) {
    p[i] = w + (params[first + i].offset - base);
  }
  Saved& s = m_saved[segment];

  if (segment == 0) {
    Buffer<bf16> x(m_ledger, Category::Activation, elems(N, D));  // (B, T, D)
    embeddingForward<bf16>(m_tokens.data(), p[Wte], p[Wpe], x.data(), B, T, D, V, stream);
    m_cur = std::move(x);
  } else if (segment == L + 1) {
    s.in = std::move(m_cur);
    s.ln2 = Buffer<bf16>(m_ledger, Category::Activation, elems(N, D));
    s.mean2 = Buffer<float>(m_ledger, Category::Activation, elems(N));
    s.rstd2 = Buffer<float>(m_ledger, Category::Activation, elems(N));
    layerNormForward<bf16>(s.in.data(), p[LnfW], p[LnfB], s.ln2.data(), s.mean2.data(),
                           s.rstd2.data(), N, D, kLayerNormEps, stream);
    Buffer<bf16> logits(m_ledger, Category::Activation, elems(N, V));  // (B, T, V)
    // logits (N, V) = ln (N, D) · lm_head^T; lm_head (V, D)
    gemm(handle, false, true, N, V, D, 1.0f, s.ln2.data(), p[LmHeadW], 0.0f, logits.data(),
         stream);
    m_cur = std::move(logits);
  } else {
    const int64_t before = m_ledger.current(Category::Activation);
    forwardBlock(p, s);
    noteBlockActivations(m_ledger.current(Category::Activation) - before);
  }
}

// x (B*T, D) -> x + proj(attn(LN1(x))) -> + fc2(gelu(fc1(LN2(.)))). p: the block's
// params in registration order.
void GpuGptModel::forwardBlock(const bf16* const* p, Saved& s) {
  const ModelShape& shape = m_spec.shape();
  const int B = m_batch, T = shape.seq, D = shape.hidden, H = shape.heads, F = 4 * D;
  const int N = B * T;
  const size_t ND = elems(N, D), NF = elems(N, F);
  const StreamHandle stream = computeStream("GpuGptModel", "forward");
  BlasHandle& handle = blas();
  auto activation = [&](size_t n) { return Buffer<bf16>(m_ledger, Category::Activation, n); };

  s.in = std::move(m_cur);
  s.ln1 = activation(ND);
  s.mean1 = Buffer<float>(m_ledger, Category::Activation, elems(N));
  s.rstd1 = Buffer<float>(m_ledger, Category::Activation, elems(N));
  layerNormForward<bf16>(s.in.data(), p[Ln1W], p[Ln1B], s.ln1.data(), s.mean1.data(),
                         s.rstd1.data(), N, D, kLayerNormEps, stream);
  s.qkvh = activation(3 * ND);
  {
    // qkv (N, 3D) = ln1 · Wqkv^T; the bias is added as the heads are split out.
    Buffer<bf16> qkv(m_ledger, Category::Workspace, 3 * ND);
    gemm(handle, false, true, N, 3 * D, D, 1.0f, s.ln1.data(), p[QkvW], 0.0f, qkv.data(), stream);
    splitHeads<bf16>(qkv.data(), p[QkvB], s.qkvh.data(), 3, B, T, D, H, stream);
  }
  const bool flash = shape.attention == Attention::Flash;
  if (!flash) s.att = activation(elems(B, H, T, T));
  s.atty = activation(ND);
  {
    Buffer<bf16> yh(m_ledger, Category::Workspace, ND);
    Buffer<bf16> probs = flash ? Buffer<bf16>(m_ledger, Category::Workspace, elems(B, H, T, T)) : Buffer<bf16>();
    attentionForward(handle, s.qkvh.data(), flash ? probs.data() : s.att.data(), yh.data(), s.atty.data(), B, T,
                     D, H, stream);
  }
  if (flash) s.lse = Buffer<float>(m_ledger, Category::Activation, elems(B, H, T));
  s.res = activation(ND);
  CUDA_CHECK(cudaMemcpyAsync(s.res.data(), s.in.data(), ND * sizeof(bf16),
                             cudaMemcpyDeviceToDevice, stream));  // residual
  gemm(handle, false, true, N, D, D, 1.0f, s.atty.data(), p[ProjW], 1.0f, s.res.data(), stream);
  addBias<bf16>(s.res.data(), p[ProjB], N, D, stream);

  s.ln2 = activation(ND);
  s.mean2 = Buffer<float>(m_ledger, Category::Activation, elems(N));
  s.rstd2 = Buffer<float>(m_ledger, Category::Activation, elems(N));
  layerNormForward<bf16>(s.res.data(), p[Ln2W], p[Ln2B], s.ln2.data(), s.mean2.data(),
                         s.rstd2.data(), N, D, kLayerNormEps, stream);
  s.h = activation(NF);
  gemm(handle, false, true, N, F, D, 1.0f, s.ln2.data(), p[Fc1W], 0.0f, s.h.data(), stream);
  addBias<bf16>(s.h.data(), p[Fc1B], N, F, stream);
  s.a = activation(NF);
  geluForward<bf16>(s.h.data(), s.a.data(), NF, stream);
  Buffer<bf16> out = activation(ND);
  CUDA_CHECK(cudaMemcpyAsync(out.data(), s.res.data(), ND * sizeof(bf16),
                             cudaMemcpyDeviceToDevice, stream));  // residual
  gemm(handle, false, true, N, D, F, 1.0f, s.a.data(), p[Fc2W], 1.0f, out.data(), stream);
  addBias<bf16>(out.data(), p[Fc2B], N, D, stream);
  m_cur = std::move(out);
}

double GpuGptModel::loss() {
  const int N = m_batch * m_spec.shape().seq, V = m_spec.shape().vocab;
  const StreamHandle stream = computeStream("GpuGptModel", "loss");
  // The logits become their own gradient: no second (B, T, V) buffer.
  m_grad = std::move(m_cur);
  Buffer<float> row_loss(m_ledger, Category::Workspace, elems(N));
  // row_loss[r] = -log softmax[target] / N; dlogits = (softmax - onehot) / N.
  crossEntropy<bf16>(m_grad.data(), m_targets.data(), m_grad.data(), row_loss.data(), N, V, N,
                     stream);
  m_loss.enqueueSum(row_loss.data(), elems(N), m_ledger, stream);
  // row_loss is freed here, after the launches that use them (stream-ordered).
  return std::numeric_limits<double>::quiet_NaN();
}

double GpuGptModel::finishLoss(double /*from_loss*/) { return m_loss.value(); }

void GpuGptModel::backward(int segment, const bf16* w, bf16* g,
                           const std::function<void(int)>& onReady, bool skip) {
  const ModelShape& shape = m_spec.shape();
  const int B = m_batch, T = shape.seq, D = shape.hidden, V = shape.vocab, L = shape.layers;
  const int N = B * T;
  const bool is_block = segment >= 1 && segment <= L;
  if (skip) {
    if (!is_block) {
      throw std::invalid_argument("GpuGptModel: only a block can be skipped, not segment " +
                                  m_spec.segmentName(segment));
    }
    return;  // identity branch: d(in) = d(out), no parameter gradients
  }
  const StreamHandle stream = computeStream("GpuGptModel", "backward");
  BlasHandle& handle = blas();
  Saved& s = m_saved[segment];
  const std::pair<int, int> range = m_spec.segmentParams(segment);
  const int first = range.first, last = range.second;  // plain ints: ready() captures first
  const auto& params = m_spec.params();
  const int64_t base = params[first].offset;
  // Weights and the bf16 gradient slots of the segment's params, in registration order.
  const bf16* p[kBlockParams] = {};
  bf16* slot[kBlockParams] = {};
  for (int i = 0; i < last - first && i < kBlockParams; ++i) {
    p[i] = w + (params[first + i].offset - base);
    slot[i] = g + (params[first + i].offset - base);
  }
  auto ready = [&](int i) {
    if (onReady) onReady(first + i);
  };

  if (segment == 0) {
    // dwpe (T, D): sum over samples; dwte (V, D): per-row gather over the token index
    // (a token that occurs several times collects every position's gradient).
    positionEmbeddingBackward<bf16>(m_grad.data(), slot[Wpe], B, T, D, stream);
    ready(Wpe);
    tokenEmbeddingBackward<bf16>(m_grad.data(), m_tokenOffsets.data(), m_tokenPositions.data(),
                                 slot[Wte], V, D, stream);
    ready(Wte);
    m_grad.reset();
    return;
  }

  if (segment == L + 1) {
    const bf16* dlogits = m_grad.data();  // (N, V)
    // dW (V, D) = dlogits^T (V, N) · ln (N, D)
    gemm(handle, true, false, V, D, N, 1.0f, dlogits, s.ln2.data(), 0.0f, slot[LmHeadW], stream);
    ready(LmHeadW);
    // dln (N, D) = dlogits (N, V) · W (V, D)
    Buffer<bf16> dln(m_ledger, Category::Workspace, elems(N, D));
    gemm(handle, false, false, N, D, V, 1.0f, dlogits, p[LmHeadW], 0.0f, dln.data(), stream);
    m_grad.reset();
    Buffer<bf16> dx(m_ledger, Category::Activation, elems(N, D));
    layerNormBackward<bf16>(dln.data(), s.in.data(), p[LnfW], s.mean2.data(), s.rstd2.data(),
                            dx.data(), slot[LnfW], slot[LnfB], N, D, stream);
    ready(LnfB);
    ready(LnfW);
    m_grad = std::move(dx);
    s = Saved{};
    return;
  }

  backwardBlock(p, slot, s, ready);
  s = Saved{};
}

// Reverse of forwardBlock; m_grad (B*T, D) is d loss / d(block output) on entry and
// d loss / d(block input) on exit. Gradients leave in reverse registration order.
void GpuGptModel::backwardBlock(const bf16* const* p, bf16* const* slot, Saved& s,
                                const std::function<void(int)>& ready) {
  const ModelShape& shape = m_spec.shape();
  const int B = m_batch, T = shape.seq, D = shape.hidden, H = shape.heads, F = 4 * D;
  const int N = B * T;
  const size_t ND = elems(N, D), NF = elems(N, F);
  const StreamHandle stream = computeStream("GpuGptModel", "backward");
  BlasHandle& handle = blas();
  auto workspace = [&](size_t n) { return Buffer<bf16>(m_ledger, Category::Workspace, n); };
  const bf16* dy = m_grad.data();  // d out (N, D)

  // MLP half: out = res + a·W2^T + b2, a = gelu(h), h = ln2·W1^T + b1.
  biasGrad<bf16>(dy, slot[Fc2B], N, D, stream);
  ready(Fc2B);
  // dW2 (D, F) = dy^T (D, N) · a (N, F)
  gemm(handle, true, false, D, F, N, 1.0f, dy, s.a.data(), 0.0f, slot[Fc2W], stream);
  ready(Fc2W);
  Buffer<bf16> dh = workspace(NF);
  gemm(handle, false, false, N, F, D, 1.0f, dy, p[Fc2W], 0.0f, dh.data(), stream);  // d a
  geluBackward<bf16>(s.h.data(), dh.data(), dh.data(), NF, stream);                 // d h
  biasGrad<bf16>(dh.data(), slot[Fc1B], N, F, stream);
  ready(Fc1B);
  // dW1 (F, D) = dh^T (F, N) · ln2 (N, D)
  gemm(handle, true, false, F, D, N, 1.0f, dh.data(), s.ln2.data(), 0.0f, slot[Fc1W], stream);
  ready(Fc1W);
  Buffer<bf16> dln = workspace(ND);
  gemm(handle, false, false, N, D, F, 1.0f, dh.data(), p[Fc1W], 0.0f, dln.data(), stream);
  dh.reset();
  Buffer<bf16> dres = workspace(ND);
  layerNormBackward<bf16>(dln.data(), s.res.data(), p[Ln2W], s.mean2.data(), s.rstd2.data(),
                          dres.data(), slot[Ln2W], slot[Ln2B], N, D, stream);
  residualAdd<bf16>(dres.data(), dres.data(), dy, ND, stream);  // residual path
  ready(Ln2B);
  ready(Ln2W);
  m_grad.reset();

  // Attention half: res = in + atty·Wp^T + bp, atty = attn(qkv), qkv = ln1·Wqkv^T + bqkv.
  biasGrad<bf16>(dres.data(), slot[ProjB], N, D, stream);
  ready(ProjB);
  gemm(handle, true, false, D, D, N, 1.0f, dres.data(), s.atty.data(), 0.0f, slot[ProjW], stream);
  ready(ProjW);
  Buffer<bf16> dqkv = workspace(3 * ND);  // (N, 3D)
  {
    Buffer<bf16> datty = workspace(ND);
    gemm(handle, false, false, N, D, D, 1.0f, dres.data(), p[ProjW], 0.0f, datty.data(), stream);
    Buffer<bf16> dyh = workspace(ND), datt = workspace(elems(B, H, T, T));
    Buffer<bf16> dqkvh = workspace(3 * ND);
    Buffer<bf16> probs;
    if (s.att.empty()) {
      // Flash: the probabilities again from q and k (the same kernels, the same values).
      probs = workspace(elems(B, H, T, T));
      Buffer<bf16> yh = workspace(ND), out = workspace(ND);
      attentionForward(handle, s.qkvh.data(), probs.data(), yh.data(), out.data(), B, T, D, H, stream);
    }
    attentionBackward(handle, datty.data(), s.qkvh.data(), s.att.empty() ? probs.data() : s.att.data(),
                      dyh.data(), datt.data(), dqkvh.data(), dqkv.data(), B, T, D, H, stream);
  }
  biasGrad<bf16>(dqkv.data(), slot[QkvB], N, 3 * D, stream);
  ready(QkvB);
  // dWqkv (3D, D) = dqkv^T (3D, N) · ln1 (N, D)
  gemm(handle, true, false, 3 * D, D, N, 1.0f, dqkv.data(), s.ln1.data(), 0.0f, slot[QkvW],
       stream);
  ready(QkvW);
  gemm(handle, false, false, N, D, 3 * D, 1.0f, dqkv.data(), p[QkvW], 0.0f, dln.data(),
       stream);  // d ln1
  dqkv.reset();
  Buffer<bf16> dx(m_ledger, Category::Activation, ND);
  layerNormBackward<bf16>(dln.data(), s.in.data(), p[Ln1W], s.mean1.data(), s.rstd1.data(),
                          dx.data(), slot[Ln1W], slot[Ln1B], N, D, stream);
  residualAdd<bf16>(dx.data(), dx.data(), dres.data(), ND, stream);  // residual path
  ready(Ln1B);
  ready(Ln1W);
  m_grad = std::move(dx);
}

}  // namespace shardscope::gpu
