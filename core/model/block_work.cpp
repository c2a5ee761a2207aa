#include "model/block_work.h"

namespace shardscope {

namespace {

// Backward of y = x·W (m x k by k x n): dx = dy·W^T (m, k, n) and dW = x^T·dy (k, n, m).
void addWithBackward(BlockWork& w, GemmShape g) {
  w.gemms.push_back(g);
  w.gemms.push_back({g.m, g.k, g.n, g.count, g.through_hbm});
  w.gemms.push_back({g.k, g.n, g.m, g.count, g.through_hbm});
}

}  // namespace

BlockWork blockWork(const ModelSpec& slice, int local_batch) {
  BlockWork w;
  const ModelShape& m = slice.shape();
  if (m.kind == ModelKind::Mlp && m.preset.empty()) {
    // The residual MLP block: norm, fc1 (D -> 4D/t), bias + GeLU, fc2 (4D/t -> D)
    // onto the residual, per sample. Memory-bound bytes per sample of the
    // forward, counted as the transformer's: the norm (read and write D), the
    // residual add (read 2D, write D), the activation (read and write F/t).
    const double t = slice.tp(), samples = local_batch, D = m.hidden, F = 4.0 * D;
    addWithBackward(w, {samples, F / t, D});
    addWithBackward(w, {samples, D, F / t});
    w.memory_bytes = 3.0 * (4 * D + 6 * D + 4 * F / t) * samples;
    for (const GemmShape& g : w.gemms) w.flops += g.flops();
    w.weight_elements = double(slice.segmentElements(1));
    return w;
  }
  if (m.kind != ModelKind::Gpt && m.preset.empty()) return w;
  const double t = slice.tp(), tokens = double(local_batch) * m.seq, D = m.hidden, s = m.seq;
  const double F = m.ffn > 0 ? m.ffn : 4.0 * D;
  const double kv = m.kv_heads > 0 ? D / m.heads * m.kv_heads : D;
  const double heads = m.heads / t, head_dim = D / m.heads;
  // Linear layers (column-parallel q|k|v and fc1/gate|up: n split; row-parallel o and fc2/down: k split).
  addWithBackward(w, {tokens, (D + 2 * kv) / t, D});
  addWithBackward(w, {tokens, D, D / t});
  addWithBackward(w, {tokens, (m.gated_mlp ? 2 : 1) * F / t, D});
  addWithBackward(w, {tokens, D, F / t});
  // Attention core per (sample, head): scores q·k^T (s x d by d x s) and
  // probabilities · v (s x s by s x d). Flash keeps scores and probabilities
  // on chip: its GEMMs are bound by compute only (q, k, v and the output are
  // the block's own tensors, counted with the linear layers' traffic).
  const bool flash = m.attention == Attention::Flash;
  addWithBackward(w, {s, s, head_dim, local_batch * heads, !flash});
  addWithBackward(w, {s, head_dim, s, local_batch * heads, !flash});
  // Memory-bound ops, bytes per token of the forward (bf16): two norms (read
  // and write D, whole under TP), two residual adds (read 2D, write D), the
  // MLP's activation (read its inputs, write F/T); without flash the softmax
  // reads and writes the scores. Dropout (GPT-3, Megatron-LM) adds a 1-byte
  // mask per residual branch, and on the probabilities a read, a write and a mask.
  double per_token = 2 * 4 * D + 2 * 6 * D + (m.gated_mlp ? 6 : 4) * F / t;
  if (!flash) per_token += 4 * heads * s;
  if (m.dropout) per_token += 2 * D + (flash ? 0 : 5 * heads * s);
  // Backward reads what forward read plus the incoming gradient and writes
  // the gradient of each input: about twice forward's traffic.
  w.memory_bytes = 3.0 * per_token * tokens;
  for (const GemmShape& g : w.gemms) w.flops += g.flops();
  if (slice.shape().layers >= 1) w.weight_elements = double(slice.segmentElements(1));
  return w;
}

}  // namespace shardscope
