// GPT forward/backward (see gpt_model.h). Each block saves what its backward needs
// in its Saved slot and frees it there; the head's logits become their own gradient
// in loss(), so one (B, T, V) buffer serves both.
#include "model/gpt_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "common/random.h"
#include "kernels/cpu_attention.h"
#include "kernels/cpu_kernels.h"

namespace shardscope {

namespace {

constexpr uint64_t kGptInitStream = 0x6e70;
constexpr float kInitStd = 0.02f;  // GPT-2

// Offsets of a block's parameters, in registration order (see model_spec.cpp).
enum BlockParam {
  Ln1W, Ln1B, QkvW, QkvB, ProjW, ProjB, Ln2W, Ln2B, Fc1W, Fc1B, Fc2W, Fc2B, kBlockParams
};
enum HeadParam { LnfW, LnfB, LmHeadW };
enum EmbedParam { Wte, Wpe };

}  // namespace

GptModel::GptModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed)
    : m_spec(spec), m_ledger(ledger), m_batch(local_batch), m_data(spec.shape().seq, seed),
      m_saved(spec.segmentCount()) {
  const ModelShape& s = spec.shape();
  if (s.kind != ModelKind::Gpt) throw ConfigError("GptModel: the spec is not a gpt model");
  if (s.heads <= 0 || s.hidden % s.heads != 0) {
    throw ConfigError("--hidden " + std::to_string(s.hidden) + " must be a multiple of --heads " +
                      std::to_string(s.heads) + " (head dim = hidden / heads)");
  }
  if (spec.tp() > 1 && (s.heads % spec.tp() != 0 || s.vocab % spec.tp() != 0)) {
    throw ConfigError("--tp " + std::to_string(spec.tp()) + " must divide --heads " + std::to_string(s.heads) +
                      " and --vocab " + std::to_string(s.vocab));
  }
  if (s.vocab < 256) {
    throw ConfigError("--vocab " + std::to_string(s.vocab) +
                      " must be >= 256: the corpus is tokenised into bytes");
  }
}

void GptModel::initParams(const ModelSpec& spec, uint64_t seed, float* master) {
  const auto& params = spec.params();
  const float residual_scale = 1.0f / std::sqrt(2.0f * static_cast<float>(spec.shape().layers));
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamInfo& p = params[i];
    float* out = master + p.offset;
    if (p.name.ends_with(".bias")) {
      std::memset(out, 0, sizeof(float) * p.numel());
    } else if (p.name.ends_with("ln1.weight") || p.name.ends_with("ln2.weight") ||
               p.name == "lnf.weight") {
      for (int64_t j = 0; j < p.numel(); ++j) out[j] = 1.0f;
    } else {
      float std = kInitStd;
      if (p.name.ends_with("attn.proj.weight") || p.name.ends_with("fc2.weight")) std *= residual_scale;
      for (int64_t j = 0; j < p.numel(); ++j) out[j] = std * normal(seed, kGptInitStream + i, j);
    }
  }
}

void GptModel::loadBatch(int step, int64_t first) {
  const size_t n = static_cast<size_t>(m_batch) * m_spec.shape().seq;
  // A pipeline stage keeps only its part: the tokens (first stage), the targets (last).
  std::vector<int32_t> unused;
  if (!m_embeds || !m_computesLoss) unused.resize(n);
  if (m_embeds) m_tokens = Buffer<int32_t>(m_ledger, Category::Activation, n);
  if (m_computesLoss) m_targets = Buffer<int32_t>(m_ledger, Category::Activation, n);
  m_data.batch(step, first, m_batch, m_embeds ? m_tokens.data() : unused.data(),
               m_computesLoss ? m_targets.data() : unused.data());
}

size_t GptModel::boundaryElements() const {  // sequence parallel: this TP rank's chunk
  return static_cast<size_t>(localRows()) * m_spec.shape().hidden;
}

void GptModel::setStageInput(const float* x) {
  m_cur = activation(boundaryElements());
  std::memcpy(m_cur.data(), x, sizeof(float) * boundaryElements());
}

void GptModel::takeStageOutput(float* x) {
  std::memcpy(x, m_cur.data(), sizeof(float) * boundaryElements());
  m_cur.reset();
}

void GptModel::setStageOutputGrad(const float* dy) {
  m_grad = activation(boundaryElements());
  std::memcpy(m_grad.data(), dy, sizeof(float) * boundaryElements());
}

void GptModel::takeStageInputGrad(float* dx) {
  std::memcpy(dx, m_grad.data(), sizeof(float) * boundaryElements());
  m_grad.reset();
}

void GptModel::loadTokens(const int32_t* tokens, const int32_t* targets) {
  const size_t n = static_cast<size_t>(m_batch) * m_spec.shape().seq;
  const int V = m_spec.shape().vocab;
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V || targets[i] < 0 || targets[i] >= V) {
      throw std::invalid_argument("GptModel::loadTokens: token " + std::to_string(i) +
                                  " is outside the vocabulary [0, " + std::to_string(V) + ")");
    }
  }
  m_tokens = Buffer<int32_t>(m_ledger, Category::Activation, n);
  m_targets = Buffer<int32_t>(m_ledger, Category::Activation, n);
  std::memcpy(m_tokens.data(), tokens, sizeof(int32_t) * n);
  std::memcpy(m_targets.data(), targets, sizeof(int32_t) * n);
}

void GptModel::releaseBatch() {
  m_cur.reset();
  m_grad.reset();
  m_tokens.reset();
  m_targets.reset();
}

double GptModel::forwardFlops(int segment) const { return segmentFlops(m_spec, m_batch, segment); }

double GptModel::segmentFlops(const ModelSpec& spec, int batch, int segment) {
  const ModelShape& s = spec.shape();
  const double B = batch, T = s.seq, D = s.hidden, V = s.vocab, tp = spec.tp();
  if (segment == 0) return B * T * D;  // wte[token] + wpe[pos]: one add per element
  if (segment == s.layers + 1) return 2.0 * B * T * D * V / tp;  // LM head GEMM (LNf is negligible)
  // qkv 3D², proj D², fc1 4D², fc2 4D² (12D² MACs per token), plus q·k^T and att·v;
  // a TP rank does its 1/T of each.
  return (2.0 * B * T * 12.0 * D * D + 2.0 * 2.0 * B * T * T * D) / tp;
}

Buffer<float> GptModel::weightsF32(int segment, const bf16* w) {
  const auto [first, last] = m_spec.segmentParams(segment);
  const auto& params = m_spec.params();
  const int64_t n = params[last - 1].offset + params[last - 1].numel() - params[first].offset;
  Buffer<float> out = workspace(static_cast<size_t>(n));
  cpu::bf16ToF32(w, out.data(), static_cast<size_t>(n));
  return out;
}

void GptModel::forward(int segment, const bf16* w, bool skip) {
  const ModelShape& shape = m_spec.shape();
  const int B = m_batch, T = shape.seq, D = shape.hidden, V = shape.vocab, L = shape.layers;
  const int N = B * T;  // tokens on this rank
  const bool is_block = segment >= 1 && segment <= L;
  if (skip) {
    if (!is_block) {
      throw std::invalid_argument("GptModel: only a block can be skipped, not segment " +
                                  m_spec.segmentName(segment));
    }
    return;  // branch taken: the residual stream passes through unchanged
  }
  Buffer<float> wf = weightsF32(segment, w);
  const int first = m_spec.segmentParams(segment).first;  // a plain int: lambdas capture it (clang 14)
  const int64_t base = m_spec.params()[first].offset;
  auto param = [&](int i) { return wf.data() + (m_spec.params()[first + i].offset - base); };
  Saved& s = m_saved[segment];

  if (segment == 0 && m_spec.tp() > 1) {
    forwardEmbedTensorParallel(param(Wte), param(Wpe));
  } else if (segment == 0) {
    const float* wte = param(Wte);  // (V, D)
    const float* wpe = param(Wpe);  // (T, D)
    Buffer<float> x = activation(static_cast<size_t>(N) * D);  // (B, T, D)
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t) {
        const int n = b * T + t;
        const float* te = wte + static_cast<size_t>(m_tokens[n]) * D;
        const float* pe = wpe + static_cast<size_t>(t) * D;
        float* xr = x.data() + static_cast<size_t>(n) * D;
        for (int c = 0; c < D; ++c) xr[c] = te[c] + pe[c];
      }
    }
    m_cur = std::move(x);
  } else if (segment == L + 1) {
    const int Nl = localRows();  // sequence parallel: LNf on this rank's chunk, gathered for the GEMM
    s.in = std::move(m_cur);
    s.ln2 = activation(static_cast<size_t>(Nl) * D);
    s.mean2 = activationF32(Nl);
    s.rstd2 = activationF32(Nl);
    cpu::layerNormForward(s.in.data(), param(LnfW), param(LnfB), s.ln2.data(), s.mean2.data(),
                          s.rstd2.data(), Nl, D);
    Buffer<float> gathered;
    if (sequenceParallel()) gathered = gatherRows(s.ln2.data(), segment, false, 0.0);
    const int Vl = V / m_spec.tp();  // vocab-parallel: this TP rank's rows of the head
    // (B, T, V/T); fp32: the cross-entropy upcasts them and they become their own gradient.
    Buffer<float> logits = activationF32(static_cast<size_t>(N) * Vl);
    cpu::gemm(false, true, N, Vl, D, 1.0f, gathered.empty() ? s.ln2.data() : gathered.data(), param(LmHeadW), 0.0f,
              logits.data());
    m_cur = std::move(logits);
  } else {
    const int64_t before = m_ledger.current(Category::Activation);
    forwardBlock(wf.data(), first, base, s);
    noteBlockActivations(m_ledger.current(Category::Activation) - before);
  }
}

bool GptModel::recomputes(int segment) const {
  const ModelShape& shape = m_spec.shape();
  return segment >= 1 && segment <= shape.layers && shape.checkpointing != Checkpointing::None;
}

double GptModel::recomputeFlops(int segment) const {
  if (!recomputes(segment)) return 0.0;
  if (m_spec.shape().checkpointing == Checkpointing::Full) return forwardFlops(segment);
  // Selective: the attention core, q·k^T and att·v on this rank's heads.
  const ModelShape& s = m_spec.shape();
  return 2.0 * 2.0 * double(m_batch) * s.seq * s.seq * s.hidden / m_spec.tp();
}

void GptModel::recompute(int segment, const bf16* w) {
  if (!recomputes(segment)) return;
  Saved& s = m_saved[segment];
  const ModelShape& shape = m_spec.shape();
  if (shape.checkpointing == Checkpointing::Full) {
    // The block again from its kept input, keeping all (its output is known downstream).
    Buffer<float> wf = weightsF32(segment, w);
    const int first = m_spec.segmentParams(segment).first;
    m_cur = std::move(s.in);
    forwardBlock(wf.data(), first, m_spec.params()[first].offset, s, /*recomputing=*/true);
    return;
  }
  // Selective: the attention core from the kept q, k, v.
  const int tp = m_spec.tp(), B = m_batch, T = shape.seq, H = shape.heads / tp, Da = shape.hidden / tp;
  if (keepsProbabilities()) {
    s.att = activation(static_cast<size_t>(B) * H * T * T);
    Buffer<float> out = workspace(static_cast<size_t>(B) * T * Da);
    cpu::attentionForward(s.qkv.data(), s.att.data(), out.data(), B, T, Da, H);
  } else {
    s.lse = activationF32(static_cast<size_t>(B) * H * T);  // flash: the row statistics again
  }
}

void GptModel::attentionRows(const float* qkv, float* atty, int H, int Da) {
  const int T = m_spec.shape().seq;
  Buffer<float> probs = workspace(static_cast<size_t>(H) * T * T);
  for (int b = 0; b < m_batch; ++b) {
    const size_t row0 = static_cast<size_t>(b) * T;
    cpu::attentionForward(qkv + row0 * 3 * Da, probs.data(), atty + row0 * Da, 1, T, Da, H);
  }
}

void GptModel::attentionCoreBackward(const float* datty, const Saved& s, float* dqkv, int H, int Da) {
  const int B = m_batch, T = m_spec.shape().seq;
  Buffer<float> scratch = workspace(static_cast<size_t>(T) * T);
  if (!s.att.empty()) {
    cpu::attentionBackward(datty, s.qkv.data(), s.att.data(), scratch.data(), dqkv, B, T, Da, H);
    return;
  }
  // Flash: each sample's probabilities again from q and k, then its backward.
  Buffer<float> probs = workspace(static_cast<size_t>(H) * T * T);
  Buffer<float> out = workspace(static_cast<size_t>(T) * Da);
  for (int b = 0; b < B; ++b) {
    const size_t row0 = static_cast<size_t>(b) * T;
    const float* qkv = s.qkv.data() + row0 * 3 * Da;
    cpu::attentionForward(qkv, probs.data(), out.data(), 1, T, Da, H);
    cpu::attentionBackward(datty + row0 * Da, qkv, probs.data(), scratch.data(), dqkv + row0 * 3 * Da, 1, T, Da,
                           H);
  }
}

// x (B*T, D) -> x + proj(attn(LN1(x))) -> + fc2(gelu(fc1(LN2(.)))). W: the block's
// params in registration order.
void GptModel::forwardBlock(const float* W, int first, int64_t base, Saved& s, bool recomputing) {
  const ModelShape& shape = m_spec.shape();
  const int tp = m_spec.tp();
  // Under TP this rank's heads, attention width and MLP inner width (1/T each).
  const int B = m_batch, T = shape.seq, D = shape.hidden, H = shape.heads / tp, F = 4 * D / tp, Da = D / tp;
  const int N = B * T;
  const size_t ND = static_cast<size_t>(N) * D, NF = static_cast<size_t>(N) * F, NDa = static_cast<size_t>(N) * Da;
  // Sequence parallel: the residual stream, the norms and their outputs are this rank's Nl rows.
  const bool sp = sequenceParallel();
  const int Nl = localRows();
  const size_t NlD = static_cast<size_t>(Nl) * D;
  const float* p[kBlockParams];
  for (int i = 0; i < kBlockParams; ++i) p[i] = W + (m_spec.params()[first + i].offset - base);
  const int segment = m_spec.params()[first].segment;
  const double attention_flops = 2.0 * N * D * 4.0 * Da + 4.0 * N * T * Da;

  s.in = std::move(m_cur);
  s.ln1 = activation(NlD);
  s.mean1 = activationF32(Nl);
  s.rstd1 = activationF32(Nl);
  cpu::layerNormForward(s.in.data(), p[Ln1W], p[Ln1B], s.ln1.data(), s.mean1.data(), s.rstd1.data(), Nl, D);
  s.qkv = activation(static_cast<size_t>(N) * 3 * Da);
  {
    Buffer<float> gathered;  // sequence parallel: LN1's output on every row (ḡ)
    if (sp) gathered = gatherRows(s.ln1.data(), segment, false, 0.0);
    cpu::gemm(false, true, N, 3 * Da, D, 1.0f, sp ? gathered.data() : s.ln1.data(), p[QkvW], 0.0f, s.qkv.data());
  }
  cpu::addBias(s.qkv.data(), p[QkvB], N, 3 * Da);
  // What the attention core keeps: naive its probabilities, flash their row
  // statistics; selective checkpointing neither (recompute() rebuilds them).
  const Checkpointing ckpt = shape.checkpointing;
  const bool keep_core = recomputing || ckpt != Checkpointing::Selective;
  s.atty = activation(NDa);
  if (keepsProbabilities() && keep_core) {
    s.att = activation(static_cast<size_t>(B) * H * T * T);
    cpu::attentionForward(s.qkv.data(), s.att.data(), s.atty.data(), B, T, Da, H);
  } else {
    attentionRows(s.qkv.data(), s.atty.data(), H, Da);
    if (keep_core) s.lse = activationF32(static_cast<size_t>(N) * H);  // FlashAttention's logsumexp per row
  }
  s.res = activation(NlD);
  if (tp == 1) {
    std::memcpy(s.res.data(), s.in.data(), sizeof(float) * ND);  // residual
    cpu::gemm(false, true, N, D, D, 1.0f, s.atty.data(), p[ProjW], 1.0f, s.res.data());
  } else if (sp) {
    // Row-parallel projection's partial sums, reduce-scattered: this rank's rows of the sum (g).
    Buffer<float> partial = workspace(ND);
    cpu::gemm(false, true, N, D, Da, 1.0f, s.atty.data(), p[ProjW], 0.0f, partial.data());
    scatterRows(partial.data(), s.res.data(), segment, false, attention_flops);
    cpu::addInPlace(s.res.data(), s.in.data(), NlD);
  } else {
    // Row-parallel projection: partial sums over this rank's heads, summed over the group (g).
    cpu::gemm(false, true, N, D, Da, 1.0f, s.atty.data(), p[ProjW], 0.0f, s.res.data());
    tensorParallel().allReduceActivation(s.res.data(), ND, segment, false, attention_flops);
    cpu::addInPlace(s.res.data(), s.in.data(), ND);
  }
  cpu::addBias(s.res.data(), p[ProjB], Nl, D);

  s.ln2 = activation(NlD);
  s.mean2 = activationF32(Nl);
  s.rstd2 = activationF32(Nl);
  cpu::layerNormForward(s.res.data(), p[Ln2W], p[Ln2B], s.ln2.data(), s.mean2.data(), s.rstd2.data(), Nl, D);
  s.h = activation(NF);
  {
    Buffer<float> gathered;  // sequence parallel: LN2's output on every row (ḡ)
    if (sp) gathered = gatherRows(s.ln2.data(), segment, false, attention_flops);
    cpu::gemm(false, true, N, F, D, 1.0f, sp ? gathered.data() : s.ln2.data(), p[Fc1W], 0.0f, s.h.data());
  }
  cpu::addBias(s.h.data(), p[Fc1B], N, F);
  s.a = activation(NF);
  cpu::geluForward(s.h.data(), s.a.data(), NF);
  Buffer<float> out = activation(NlD);
  if (tp == 1) {
    std::memcpy(out.data(), s.res.data(), sizeof(float) * ND);  // residual
    cpu::gemm(false, true, N, D, F, 1.0f, s.a.data(), p[Fc2W], 1.0f, out.data());
  } else if (sp) {
    Buffer<float> partial = workspace(ND);
    cpu::gemm(false, true, N, D, F, 1.0f, s.a.data(), p[Fc2W], 0.0f, partial.data());
    scatterRows(partial.data(), out.data(), segment, false, forwardFlops(segment));
    cpu::addInPlace(out.data(), s.res.data(), NlD);
  } else {
    cpu::gemm(false, true, N, D, F, 1.0f, s.a.data(), p[Fc2W], 0.0f, out.data());
    tensorParallel().allReduceActivation(out.data(), ND, segment, false, forwardFlops(segment));
    cpu::addInPlace(out.data(), s.res.data(), ND);
  }
  cpu::addBias(out.data(), p[Fc2B], Nl, D);
  if (recomputing) return;  // the output went downstream in forward
  m_cur = std::move(out);
  if (ckpt == Checkpointing::Full) {
    Buffer<float> in = std::move(s.in);  // the block's input is all it keeps
    s = Saved{};
    s.in = std::move(in);
  }
}

double GptModel::loss() {
  if (m_spec.tp() > 1) return lossTensorParallel();
  const int N = m_batch * m_spec.shape().seq, V = m_spec.shape().vocab;
  // The logits become their own gradient: no second (B, T, V) buffer.
  m_grad = std::move(m_cur);
  return cpu::crossEntropy(m_grad.data(), m_targets.data(), m_grad.data(), N, V, N);
}

void GptModel::backward(int segment, const bf16* w, bf16* g,
                        const std::function<void(int)>& onReady, bool skip) {
  const ModelShape& shape = m_spec.shape();
  const int B = m_batch, T = shape.seq, D = shape.hidden, V = shape.vocab, L = shape.layers;
  const int N = B * T;
  const bool is_block = segment >= 1 && segment <= L;
  if (skip) {
    if (!is_block) {
      throw std::invalid_argument("GptModel: only a block can be skipped, not segment " +
                                  m_spec.segmentName(segment));
    }
    return;  // identity branch: d(in) = d(out), no parameter gradients
  }
  Saved& s = m_saved[segment];
  const int first = m_spec.segmentParams(segment).first;  // a plain int: lambdas capture it (clang 14)
  const int64_t base = m_spec.params()[first].offset;
  Buffer<float> wf = weightsF32(segment, w);
  auto param = [&](int i) { return wf.data() + (m_spec.params()[first + i].offset - base); };

  if (segment == 0) {
    // Scatter-add: a token that occurs several times collects every position's gradient.
    // Sequence parallel: this rank's rows (emitGrad sums the group's).
    const int Nl = localRows(), row0 = firstLocalRow();
    Buffer<float> dwpe = workspace(static_cast<size_t>(T) * D);  // (T, D)
    for (int i = 0; i < Nl; ++i)
      cpu::addInPlace(dwpe.data() + static_cast<size_t>((row0 + i) % T) * D, m_grad.data() + static_cast<size_t>(i) * D,
                      D);
    emitGrad(first + Wpe, dwpe.data(), g, base, onReady);
    dwpe.reset();
    // Vocab-parallel: only this TP rank's rows (the incoming gradient is the same on every TP rank;
    // sequence parallel: gathered from the chunks, the backward of the forward's reduce-scatter).
    Buffer<float> gathered;
    if (sequenceParallel()) gathered = gatherRows(m_grad.data(), segment, true, 0.0);
    const float* dx = gathered.empty() ? m_grad.data() : gathered.data();
    const int Vl = V / m_spec.tp(), lo = m_spec.tp() > 1 ? tensorParallel().rank() * Vl : 0;
    Buffer<float> dwte = workspace(static_cast<size_t>(Vl) * D);  // (V/T, D)
    for (int n = 0; n < N; ++n) {
      const int row = m_tokens[n] - lo;
      if (row < 0 || row >= Vl) continue;
      cpu::addInPlace(dwte.data() + static_cast<size_t>(row) * D, dx + static_cast<size_t>(n) * D, D);
    }
    emitGrad(first + Wte, dwte.data(), g, base, onReady);
    m_grad.reset();
    return;
  }

  if (segment == L + 1) {
    const int Vl = V / m_spec.tp(), Nl = localRows();
    const bool sp = sequenceParallel();
    const float* dlogits = m_grad.data();  // (B*T, V/T)
    Buffer<float> dw = workspace(static_cast<size_t>(Vl) * D);
    {
      Buffer<float> gathered;  // sequence parallel: LNf's output on every row again (kept sharded)
      if (sp) gathered = gatherRows(s.ln2.data(), segment, true, 0.0);
      cpu::gemm(true, false, Vl, D, N, 1.0f, dlogits, sp ? gathered.data() : s.ln2.data(), 0.0f, dw.data());
    }
    emitGrad(first + LmHeadW, dw.data(), g, base, onReady);
    dw.reset();
    Buffer<float> dln = workspace(static_cast<size_t>(N) * D);
    cpu::gemm(false, false, N, D, Vl, 1.0f, dlogits, param(LmHeadW), 0.0f, dln.data());
    m_grad.reset();
    // The head's input is shared: sum the vocabulary slices' parts (f); sequence parallel: each rank its rows.
    if (sp) {
      Buffer<float> mine = workspace(static_cast<size_t>(Nl) * D);
      scatterRows(dln.data(), mine.data(), segment, true, 2.0 * forwardFlops(segment));
      dln = std::move(mine);
    } else if (m_spec.tp() > 1) {
      tensorParallel().allReduceActivation(dln.data(), dln.size(), segment, true, 2.0 * forwardFlops(segment));
    }
    Buffer<float> dx = activation(static_cast<size_t>(Nl) * D);
    Buffer<float> dgamma = workspace(D), dbeta = workspace(D);
    cpu::layerNormBackward(dln.data(), s.in.data(), param(LnfW), s.mean2.data(), s.rstd2.data(),
                           dx.data(), dgamma.data(), dbeta.data(), Nl, D);
    emitGrad(first + LnfB, dbeta.data(), g, base, onReady);
    emitGrad(first + LnfW, dgamma.data(), g, base, onReady);
    m_grad = std::move(dx);
    s = Saved{};
    return;
  }

  backwardBlock(wf.data(), g, first, base, s, onReady);
  s = Saved{};
}

// Reverse of forwardBlock; m_grad (B*T, D) is d loss / d(block output) on entry
// and d loss / d(block input) on exit (sequence parallel: this rank's rows of
// each). Gradients leave in reverse registration order.
void GptModel::backwardBlock(const float* W, bf16* g, int first, int64_t base, Saved& s,
                             const std::function<void(int)>& onReady) {
  const ModelShape& shape = m_spec.shape();
  const int tp = m_spec.tp();
  const int B = m_batch, T = shape.seq, D = shape.hidden, H = shape.heads / tp, F = 4 * D / tp, Da = D / tp;
  const int N = B * T;
  const size_t ND = static_cast<size_t>(N) * D, NF = static_cast<size_t>(N) * F, NDa = static_cast<size_t>(N) * Da;
  const bool sp = sequenceParallel();
  const int Nl = localRows();
  const size_t NlD = static_cast<size_t>(Nl) * D;
  const float* p[kBlockParams];
  for (int i = 0; i < kBlockParams; ++i) p[i] = W + (m_spec.params()[first + i].offset - base);
  const int segment = m_spec.params()[first].segment;
  auto emit = [&](int i, Buffer<float>& grad) { emitGrad(first + i, grad.data(), g, base, onReady); };
  // FLOPs of the backward so far at each collective (the modeled clock): the
  // MLP's GEMMs, then attention's projection and core.
  const double mlp_flops = 2.0 * 2.0 * 2.0 * N * D * F;
  const double attention_core_flops = mlp_flops + 4.0 * N * D * Da + 8.0 * N * T * Da;
  // Sequence parallel: a row-chunk gradient gathered on every row (the
  // backward of the forward's reduce-scatter), or the input as it was.
  auto whole = [&](const float* chunk, Buffer<float>& gathered, double flops_done) {
    if (!sp) return chunk;
    gathered = gatherRows(chunk, segment, true, flops_done);
    return static_cast<const float*>(gathered.data());
  };
  // A norm's output gradient from every rank's column slice (f): all-reduced,
  // or reduce-scattered to this rank's rows.
  auto sumInputGrad = [&](Buffer<float>& dln, double flops_done) {
    if (!sp) {
      tensorParallel().allReduceActivation(dln.data(), ND, segment, true, flops_done);
      return;
    }
    Buffer<float> mine = workspace(NlD);
    scatterRows(dln.data(), mine.data(), segment, true, flops_done);
    dln = std::move(mine);
  };
  const float* dy = m_grad.data();  // d out (B*T, D); sequence parallel: (Nl, D)

  // MLP half: out = res + a·W2^T + b2, a = gelu(h), h = ln2·W1^T + b1.
  Buffer<float> db2 = workspace(D);
  cpu::biasGrad(dy, db2.data(), Nl, D);
  emit(Fc2B, db2);
  Buffer<float> dy_rows;
  const float* dy_all = whole(dy, dy_rows, 0.0);
  Buffer<float> dw2 = workspace(static_cast<size_t>(D) * F);
  cpu::gemm(true, false, D, F, N, 1.0f, dy_all, s.a.data(), 0.0f, dw2.data());
  emit(Fc2W, dw2);
  dw2.reset();
  Buffer<float> dh = workspace(NF);
  cpu::gemm(false, false, N, F, D, 1.0f, dy_all, p[Fc2W], 0.0f, dh.data());  // d a
  dy_rows.reset();
  cpu::geluBackward(s.h.data(), dh.data(), dh.data(), NF);                 // d h (in place)
  Buffer<float> db1 = workspace(F);
  cpu::biasGrad(dh.data(), db1.data(), N, F);
  emit(Fc1B, db1);
  Buffer<float> dw1 = workspace(static_cast<size_t>(F) * D);
  {
    Buffer<float> ln2_rows;
    cpu::gemm(true, false, F, D, N, 1.0f, dh.data(), whole(s.ln2.data(), ln2_rows, mlp_flops / 2), 0.0f, dw1.data());
  }
  emit(Fc1W, dw1);
  dw1.reset();
  Buffer<float> dln = workspace(ND);
  cpu::gemm(false, false, N, D, F, 1.0f, dh.data(), p[Fc1W], 0.0f, dln.data());
  dh.reset();
  if (tp > 1) sumInputGrad(dln, mlp_flops);  // LN2's output feeds every rank's fc1 slice (f)
  Buffer<float> dres = workspace(NlD);
  Buffer<float> dgamma = workspace(D), dbeta = workspace(D);
  cpu::layerNormBackward(dln.data(), s.res.data(), p[Ln2W], s.mean2.data(), s.rstd2.data(), dres.data(),
                         dgamma.data(), dbeta.data(), Nl, D);
  cpu::addInPlace(dres.data(), dy, NlD);  // residual path
  emit(Ln2B, dbeta);
  emit(Ln2W, dgamma);
  m_grad.reset();

  // Attention half: res = in + atty·Wp^T + bp, atty = attn(qkv), qkv = ln1·Wqkv^T + bqkv.
  Buffer<float> dbp = workspace(D);
  cpu::biasGrad(dres.data(), dbp.data(), Nl, D);
  emit(ProjB, dbp);
  Buffer<float> dres_rows;
  const float* dres_all = whole(dres.data(), dres_rows, mlp_flops);
  Buffer<float> dwp = workspace(static_cast<size_t>(D) * Da);
  cpu::gemm(true, false, D, Da, N, 1.0f, dres_all, s.atty.data(), 0.0f, dwp.data());
  emit(ProjW, dwp);
  dwp.reset();
  Buffer<float> datty = workspace(NDa);
  cpu::gemm(false, false, N, Da, D, 1.0f, dres_all, p[ProjW], 0.0f, datty.data());
  dres_rows.reset();
  Buffer<float> dqkv = workspace(static_cast<size_t>(N) * 3 * Da);
  attentionCoreBackward(datty.data(), s, dqkv.data(), H, Da);
  datty.reset();
  Buffer<float> dbqkv = workspace(3 * Da);
  cpu::biasGrad(dqkv.data(), dbqkv.data(), N, 3 * Da);
  emit(QkvB, dbqkv);
  Buffer<float> dwqkv = workspace(static_cast<size_t>(3) * Da * D);
  {
    Buffer<float> ln1_rows;
    cpu::gemm(true, false, 3 * Da, D, N, 1.0f, dqkv.data(), whole(s.ln1.data(), ln1_rows, attention_core_flops), 0.0f,
              dwqkv.data());
  }
  emit(QkvW, dwqkv);
  dwqkv.reset();
  if (dln.size() != ND) dln = workspace(ND);  // sequence parallel: the scatter left it one chunk
  cpu::gemm(false, false, N, D, 3 * Da, 1.0f, dqkv.data(), p[QkvW], 0.0f, dln.data());  // d ln1
  dqkv.reset();
  if (tp > 1) sumInputGrad(dln, 2.0 * forwardFlops(segment));  // LN1's output feeds every rank's q, k, v slices (f)
  Buffer<float> dx = activation(NlD);
  cpu::layerNormBackward(dln.data(), s.in.data(), p[Ln1W], s.mean1.data(), s.rstd1.data(), dx.data(),
                         dgamma.data(), dbeta.data(), Nl, D);
  cpu::addInPlace(dx.data(), dres.data(), NlD);  // residual path
  emit(Ln1B, dbeta);
  emit(Ln1W, dgamma);
  m_grad = std::move(dx);
}

}  // namespace shardscope
