#include "model/meta_model.h"

#include <stdexcept>
#include <string>

namespace shardscope {

MetaModel::MetaModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed)
    : m_spec(spec), m_ledger(ledger), m_batch(local_batch), m_saved(spec.segmentCount()),
      m_recomputed(spec.segmentCount()), m_sequenceParallel(spec.tp() > 1 && spec.shape().sequence_parallel) {
  // The FLOP counts come from the real model of this kind (it allocates no
  // tensors until a batch is loaded).
  if (!spec.shape().preset.empty()) {
    // A published transformer: 2 FLOPs per weight per token in each linear,
    // plus attention scores and values (2·2·T·D per token), plus the LM head.
    // Under TP the segment's elements are this rank's slice and it scores
    // heads/T heads; the head's vocabulary rows are its V/T.
    const ModelShape& m = spec.shape();
    const double tokens = double(local_batch) * m.seq, tp = spec.tp();
    int64_t head_rows = m.vocab;
    for (const ParamInfo& p : spec.params())
      if (p.name == "lm_head.weight" || p.name == "wte.weight") head_rows = p.rows;
    for (int s = 0; s < spec.segmentCount(); ++s) {
      if (s == 0) m_flops.push_back(0.0);
      else if (s == m.layers + 1) m_flops.push_back(2.0 * tokens * m.hidden * double(head_rows));
      else m_flops.push_back(2.0 * tokens * double(spec.segmentElements(s)) + 4.0 * tokens * m.seq * m.hidden / tp);
    }
    for (int s = 1; s <= m.layers; ++s) {
      const auto [first, last] = spec.segmentParams(s);
      int64_t attention = 0;
      for (int p = first; p < last; ++p)
        if (spec.params()[p].name.find(".attn.") != std::string::npos) attention += spec.params()[p].numel();
      m_attentionFlops.push_back(2.0 * tokens * double(attention) + 4.0 * tokens * m.seq * m.hidden / tp);
    }
    return;
  }
  MemoryLedger scratch(0, nullptr, nullptr);
  const auto real = makeModel(spec, scratch, local_batch, seed);
  for (int s = 0; s < spec.segmentCount(); ++s) m_flops.push_back(real->forwardFlops(s));
  // The CPU GPT block: qkv, scores, values and proj come before the first all-reduce.
  const ModelShape& m = spec.shape();
  const double tokens = double(local_batch) * m.seq, D = m.hidden, tp = spec.tp();
  for (int s = 1; s <= m.layers; ++s)
    m_attentionFlops.push_back(m.kind == ModelKind::Gpt ? (2.0 * tokens * D * 4.0 * D + 4.0 * tokens * m.seq * D) / tp
                                                        : m_flops[static_cast<size_t>(s)]);
}

std::unique_ptr<Model> MetaModel::another() const {
  auto copy = std::unique_ptr<MetaModel>(new MetaModel(m_spec, m_ledger, m_batch));
  copy->m_flops = m_flops;
  copy->m_attentionFlops = m_attentionFlops;
  copy->m_sequenceParallel = m_sequenceParallel;
  copy->setStageRole(m_embeds, m_computesLoss);
  copy->setTensorParallel(m_tp);
  return copy;
}

MetaModel::MetaModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch)
    : m_spec(spec), m_ledger(ledger), m_batch(local_batch), m_saved(spec.segmentCount()),
      m_recomputed(spec.segmentCount()) {}

bool MetaModel::hasSequence() const {
  return m_spec.shape().kind == ModelKind::Gpt || !m_spec.shape().preset.empty();
}

size_t MetaModel::tokenWidth() const {
  const ModelShape& m = m_spec.shape();
  return static_cast<size_t>(m_batch) * (hasSequence() ? m.seq : 1) * static_cast<size_t>(m.hidden);
}

// The collectives the real slice issues in this segment (see gpt_model.h and
// mlp_model.h): the embedding's and each block's forward sums, each block's
// and the head's backward sums; no data moves on the meta backend.
void MetaModel::tensorParallelCollectives(int segment, bool backward) {
  if (m_spec.tp() <= 1) return;
  if (!m_tp) throw std::logic_error("MetaModel: a tensor-parallel slice needs its TP group (setTensorParallel)");
  const int L = m_spec.shape().layers;
  const double flops = (backward ? 2.0 : 1.0) * m_flops[static_cast<size_t>(segment)];
  if (segment == 0) {
    // The vocab-parallel embedding's sum (sequence parallel: scattered over the sequence).
    if (hasSequence() && !backward) {
      if (m_sequenceParallel) m_tp->reduceScatterActivation(nullptr, nullptr, tokenWidth(), segment, false, flops);
      else m_tp->allReduceActivation(nullptr, tokenWidth(), segment, false, flops);
    }
    if (m_sequenceParallel && backward) m_tp->allGatherActivation(nullptr, nullptr, tokenWidth(), segment, true, 0.0);
    return;
  }
  if (segment == L + 1) {
    // The head's input gradient (sequence parallel: its input gathered first, the gradient scattered).
    if (m_sequenceParallel && !backward) m_tp->allGatherActivation(nullptr, nullptr, tokenWidth(), segment, false, 0.0);
    if (hasSequence() && backward) {
      if (m_sequenceParallel) {
        m_tp->allGatherActivation(nullptr, nullptr, tokenWidth(), segment, true, 0.0);
        m_tp->reduceScatterActivation(nullptr, nullptr, tokenWidth(), segment, true, flops);
      } else {
        m_tp->allReduceActivation(nullptr, tokenWidth(), segment, true, flops);
      }
    }
    return;
  }
  if (!hasSequence()) {  // the residual MLP: fc1 column-, fc2 row-parallel
    m_tp->allReduceActivation(nullptr, tokenWidth(), segment, backward, flops);
    return;
  }
  const double attention = (backward ? 2.0 : 1.0) * m_attentionFlops[static_cast<size_t>(segment - 1)];
  if (m_sequenceParallel) {
    // Megatron-LM's sequence parallelism: forward gathers each norm's
    // sequence-sharded output before the column-parallel layer and
    // reduce-scatters the row-parallel output; backward mirrors them and
    // gathers the norm's output again for the weight gradient (it was kept sharded).
    const size_t n = tokenWidth();
    if (!backward) {
      m_tp->allGatherActivation(nullptr, nullptr, n, segment, false, 0.0);
      m_tp->reduceScatterActivation(nullptr, nullptr, n, segment, false, attention);
      m_tp->allGatherActivation(nullptr, nullptr, n, segment, false, attention);
      m_tp->reduceScatterActivation(nullptr, nullptr, n, segment, false, flops);
    } else {
      m_tp->allGatherActivation(nullptr, nullptr, n, segment, true, 0.0);
      m_tp->allGatherActivation(nullptr, nullptr, n, segment, true, 0.0);
      m_tp->reduceScatterActivation(nullptr, nullptr, n, segment, true, flops - attention);
      m_tp->allGatherActivation(nullptr, nullptr, n, segment, true, flops - attention);
      m_tp->allGatherActivation(nullptr, nullptr, n, segment, true, flops - attention);
      m_tp->reduceScatterActivation(nullptr, nullptr, n, segment, true, flops);
    }
    return;
  }
  // Forward: attention's sum, then the MLP's; backward walks them in reverse.
  m_tp->allReduceActivation(nullptr, tokenWidth(), segment, backward, backward ? flops - attention : attention);
  m_tp->allReduceActivation(nullptr, tokenWidth(), segment, backward, flops);
}

double MetaModel::loss() {
  if (m_spec.tp() > 1 && hasSequence()) {
    // The vocab-parallel cross-entropy's row maxima and (sum exp, target logit).
    const size_t tokens = static_cast<size_t>(m_batch) * m_spec.shape().seq;
    const int head = m_spec.shape().layers + 1;
    m_tp->allGatherF32(nullptr, nullptr, tokens, head);
    m_tp->allReduceF32(nullptr, 2 * tokens, head);
  }
  return 0.0;
}

int64_t MetaModel::savedBytes(int segment, bool recomputed) const {
  const ModelShape& m = m_spec.shape();
  const int64_t B = m_batch, D = m.hidden, L = m.layers;
  if (m.kind == ModelKind::Gpt) {
    const int64_t tokens = B * m.seq, tp = m_spec.tp();
    const int64_t split = m_sequenceParallel ? tp : 1;  // sequence parallel: the residual stream is 1/T
    if (segment == 0) return tokens * D * 2 / split;  // the embedding's output (bf16)
    // The head: LNf's output (bf16) and statistics, the logits (fp32, V/T under TP).
    if (segment == L + 1) return tokens * (2 * D + 8 + 4 * ((m.vocab + tp - 1) / tp));
    // A block, per token: its input, norm1's output, q/k/v (grouped K/V: kv
    // heads' width), the attention core (naive: H/T rows of S probabilities;
    // flash: one fp32 statistic per head), the heads' output, the residual,
    // norm2's output, the MLP's inner tensors (2 of F, 3 gated) — bf16; each
    // norm's statistics fp32 (LayerNorm mean and rstd, RMSNorm rstd). Under TP
    // the norms' tensors and the residual stay whole, the rest is 1/T.
    const int64_t F = m.ffn > 0 ? m.ffn : 4 * D;
    const int64_t kv = m.kv_heads > 0 ? D / m.heads * m.kv_heads : D;
    const int64_t stats = m.preset.empty() || m.biases ? 8 : 4;
// Dropout (GPT-3, Megatron-LM) keeps a 1-byte mask per residual branch
    // (whole under TP) and, without flash, the probabilities' mask and the
    // dropped probabilities (bf16): the 34 and 5as/h of Korthikanti et al. 2022.
    // Sequence parallel: the norms' tensors, the residual, the statistics and
    // the masks split over the sequence too.
    const int64_t naive_core = (m.dropout ? 5 : 2) * m.heads / tp * int64_t(m.seq);
    const int64_t core = m.attention == Attention::Naive ? naive_core : 4 * m.heads / tp;
    const int64_t sp = m_sequenceParallel ? tp : 1;
    const int64_t rest = 2 * ((D + D) / sp + (D + 2 * kv) / tp + D / tp + (D + D) / sp + (m.gated_mlp ? 3 : 2) * F / tp) +
                         2 * stats / sp + (m.dropout ? 2 * D / sp : 0);
    switch (m.checkpointing) {
      case Checkpointing::None: return recomputed ? 0 : tokens * (rest + core);
      case Checkpointing::Selective: return tokens * (recomputed ? core : rest);
      case Checkpointing::Full: return tokens * (recomputed ? rest - 2 * D / split + core : 2 * D / split);
    }
    return 0;
  }
  if (recomputed) return 0;
  const int64_t floats = segment == 0       ? B * m.io_dim
                         : segment == L + 1 ? B * D
                                            : B * (D + D + 2 + 2 * (4 * D / m_spec.tp()));  // input, LN out, mean/rstd, pre/post GELU
  return floats * int64_t(sizeof(float));
}

bool MetaModel::recomputes(int segment) const {
  const ModelShape& m = m_spec.shape();
  return m.kind == ModelKind::Gpt && segment >= 1 && segment <= m.layers && m.checkpointing != Checkpointing::None;
}

double MetaModel::recomputeFlops(int segment) const {
  if (!recomputes(segment)) return 0.0;
  const ModelShape& m = m_spec.shape();
  if (m.checkpointing == Checkpointing::Full) return m_flops[static_cast<size_t>(segment)];
  return 4.0 * double(m_batch) * m.seq * m.seq * m.hidden / m_spec.tp();  // q·k^T and att·v
}

void MetaModel::recompute(int segment, const bf16*) {
  if (!recomputes(segment)) return;
  m_recomputed[segment] = Buffer<uint8_t>(m_ledger, Category::Activation, static_cast<size_t>(savedBytes(segment, true)));
  // A full recompute reruns the block's forward, its TP sums with it.
  if (m_spec.shape().checkpointing == Checkpointing::Full) tensorParallelCollectives(segment, false);
}

void MetaModel::loadBatch(int, int64_t) {
  const ModelShape& m = m_spec.shape();
  // Inputs and targets (a pipeline stage: only the part its role needs).
  const int64_t per_part = m.kind == ModelKind::Gpt ? int64_t(m.seq) : int64_t(m.io_dim);
  const int64_t parts = (m_embeds ? 1 : 0) + (m_computesLoss ? 1 : 0);
  if (parts > 0)
    m_batchBuffers = Buffer<float>(m_ledger, Category::Activation, static_cast<size_t>(m_batch * per_part * parts));
}

// The boundary tensor as the real models book it: bf16 for token models, fp32 for the residual MLP.
void MetaModel::setStageInput(const float*) {
  m_boundary = Buffer<uint8_t>(m_ledger, Category::Activation, boundaryElements() * (hasSequence() ? 2 : 4));
}

void MetaModel::setStageOutputGrad(const float*) {
  m_boundary = Buffer<uint8_t>(m_ledger, Category::Activation, boundaryElements() * (hasSequence() ? 2 : 4));
}

size_t MetaModel::boundaryElements() const {
  // Sequence parallel: a stage sends its TP rank's part of the sequence (Megatron-LM).
  return tokenWidth() / (m_sequenceParallel ? static_cast<size_t>(m_spec.tp()) : 1);
}

void MetaModel::releaseBatch() {
  m_batchBuffers.reset();
  m_boundary.reset();
  for (auto& b : m_saved) b.reset();
  for (auto& b : m_recomputed) b.reset();
}

void MetaModel::forward(int segment, const bf16*, bool skip) {
  if (skip) return;
  m_boundary.reset();  // a received input becomes what the segment keeps as its input (booked below)
  const int64_t before = m_ledger.current(Category::Activation);
  m_saved[segment] = Buffer<uint8_t>(m_ledger, Category::Activation, static_cast<size_t>(savedBytes(segment)));
  tensorParallelCollectives(segment, false);
  if (segment >= 1 && segment <= m_spec.shape().layers && hasSequence())
    noteBlockActivations(m_ledger.current(Category::Activation) - before);
}

void MetaModel::backward(int segment, const bf16*, bf16*, const std::function<void(int)>& onReady, bool skip) {
  if (skip) return;
  tensorParallelCollectives(segment, true);
  const auto [first, last] = m_spec.segmentParams(segment);
  if (onReady)
    for (int p = last - 1; p >= first; --p) onReady(p);
  m_saved[segment].reset();
  m_recomputed[segment].reset();
  m_boundary.reset();  // a received output gradient is consumed
}

}  // namespace shardscope
