// Forward and backward of a GPT-2 style byte-level language model, one segment
// at a time, for one rank's slice of the batch (B samples of T tokens). Weights
// arrive as bf16, math runs in fp32, weight grads leave as bf16 and each fires
// onReady(param) as it is written, in reverse registration order in the segment.
//   embed:  x = wte[token] + wpe[pos]                                  (B, T) -> (B, T, D)
//   block:  x = x + proj(attn(LN1(x)));  x = x + fc2(gelu(fc1(LN2(x))))  causal, H heads
//   head:   logits = LNf(x)·lm_head^T (B, T, V); mean cross-entropy against the next byte
// Tensor parallel (spec.tp() = T > 1, Megatron-LM): attention heads split T
// ways (qkv column-parallel, proj row-parallel), fc1 column-, fc2
// row-parallel; each block all-reduces its attention and MLP outputs in
// forward and the gradients of LN1's and LN2's outputs in backward. wte and
// lm_head are vocab-parallel (V/T rows each, a vocab-parallel cross-entropy).
// LayerNorms, row-parallel biases and wpe stay whole on every TP rank: their
// inputs and output gradients are identical across the group (each follows an
// all-reduce), so are their gradients; no collective keeps them in step.
// Sequence parallel (--sp on, Korthikanti et al. 2022; gpt_tensor_parallel.cpp):
// the residual stream between the GEMMs is split over the B·T rows, T_tp
// contiguous chunks, one per TP rank: norms and residual adds run on the
// rank's chunk, an all-gather rebuilds the whole rows before qkv, fc1 and the
// LM head, a reduce-scatter replaces the all-reduce after proj, fc2 and the
// embedding; backward mirrors them, gathering each norm's output again for
// the weight gradient (it is kept sharded). The replicated parameters then
// see one chunk each: their gradients are summed over the group (fp32)
// before they are handed on. A pipeline stage sends its chunk.
// Activations as autocast keeps them: the ledger books every tensor kept from
// forward for backward at 2 bytes (bf16) while the host computes in fp32, except
// LayerNorm's mean and rstd, the softmax statistics of flash attention and the
// loss logits, which autocast keeps in fp32 (booked at 4 bytes).
// --attention naive keeps the (B, H/T, T, T) probabilities; flash keeps only
// their per-row statistics (B, H/T, T) and backward recomputes the rows one
// sample at a time (the bookings are FlashAttention's; the math is the same).
// --activation-checkpointing selective keeps neither and recompute() rebuilds
// them; full keeps only the block input and recompute() reruns the block.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "memory/buffer.h"
#include "model/model.h"
#include "model/model_spec.h"
#include "model/text_data.h"
#include "tensor/bf16.h"

namespace shardscope {

class GptModel : public Model {
 public:
  // Throws ConfigError on a shape the model cannot run (heads not dividing hidden,
  // a vocabulary smaller than the 256 byte tokens).
  GptModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed);

  // GPT-2 init, identical on every rank: weights N(0, 0.02), the residual
  // projections (attn.proj, fc2) scaled by 1/sqrt(2L), LN weights 1, biases 0.
  static void initParams(const ModelSpec& spec, uint64_t seed, float* master);
  // FLOPs of one segment's forward on `batch` samples of T tokens: what
  // forwardFlops() reports here and on the GPU twin (one formula for both).
  static double segmentFlops(const ModelSpec& spec, int batch, int segment);

  void loadBatch(int step, int64_t first) override;
  // Tests: this exact batch instead of the corpus. tokens, targets: (B, T), in [0, V).
  void loadTokens(const int32_t* tokens, const int32_t* targets);
  void releaseBatch() override;
  void forward(int segment, const bf16* w, bool skip = false) override;
  double loss() override;  // mean cross-entropy over this rank's B*T tokens
  void backward(int segment, const bf16* w, bf16* g, const std::function<void(int)>& onReady,
                bool skip = false) override;
  int localBatch() const override { return m_batch; }
  double forwardFlops(int segment) const override;
  bool recomputes(int segment) const override;
  void recompute(int segment, const bf16* w) override;
  double recomputeFlops(int segment) const override;
  size_t boundaryElements() const override;
  void setStageInput(const float* x) override;
  void takeStageOutput(float* x) override;
  void setStageOutputGrad(const float* dy) override;
  void takeStageInputGrad(float* dx) override;

  // (B, T, V) logits after the head's forward, until loss() turns them into gradients.
  std::span<const float> logits() const { return m_cur.span(); }

 private:
  // Activations a segment's backward needs (empty for the parts it does not use).
  // Sequence parallel: in, ln1, res, ln2 and the statistics hold this rank's chunk of the rows.
  struct Saved {
    Buffer<float> in;                 // (B*T, D) segment input (residual stream)
    Buffer<float> ln1, mean1, rstd1;  // (B*T, D), (B*T), (B*T)
    Buffer<float> qkv;                // (B*T, 3D)
    Buffer<float> att;                // (B, H, T, T) softmax probabilities (naive attention)
    Buffer<float> lse;                // (B, H, T) softmax row statistics (flash attention; fp32)
    Buffer<float> atty;               // (B*T, D) heads concatenated, input of attn.proj
    Buffer<float> res;                // (B*T, D) residual stream after attention
    Buffer<float> ln2, mean2, rstd2;  // (B*T, D), (B*T), (B*T); the head's LNf uses these too
    Buffer<float> h, a;               // (B*T, 4D) fc1 output before and after gelu
  };
  Buffer<float> weightsF32(int segment, const bf16* w);
  TensorParallelComm& tensorParallel();
  void forwardEmbedTensorParallel(const float* wte, const float* wpe);
  void backwardEmbed(const float* grad_rows, bf16* g, int first, int64_t base, const std::function<void(int)>& onReady);
  double lossTensorParallel();
  // Sequence parallel: whether it is on, the residual stream's rows on this
  // rank (B·T, or its 1/T_tp chunk) and the first of them.
  bool sequenceParallel() const { return m_spec.tp() > 1 && m_spec.shape().sequence_parallel; }
  int localRows() const;
  int firstLocalRow() const;
  // The whole (B·T, D) tensor from this rank's chunk (workspace), or the
  // chunk of a whole tensor's sum over the group; through bf16.
  Buffer<float> gatherRows(const float* chunk, int segment, bool backward, double flops_done);
  void scatterRows(const float* whole, float* chunk, int segment, bool backward, double flops_done);
  // Writes a parameter's gradient (bf16) and fires onReady; under sequence
  // parallelism a replicated parameter's is first summed over the TP group.
  void emitGrad(int param, float* grad, bf16* g_segment, int64_t seg_offset,
                const std::function<void(int)>& onReady);
  // recomputing: rebuild what a checkpointed block dropped, keep it all, no output.
  void forwardBlock(const float* W, int first, int64_t base, Saved& s, bool recomputing = false);
  // The attention core's output without keeping the probabilities: one sample's
  // (H, T, T) rows at a time in workspace.
  void attentionRows(const float* qkv, float* atty, int H, int Da);
  // Backward of the attention core from the kept probabilities, or (flash)
  // recomputing them one sample at a time.
  void attentionCoreBackward(const float* datty, const Saved& s, float* dqkv, int H, int Da);
  bool keepsProbabilities() const { return m_spec.shape().attention == Attention::Naive; }
  void backwardBlock(const float* W, bf16* g, int first, int64_t base, Saved& s,
                     const std::function<void(int)>& onReady);
  // Kept across forward -> backward in bf16 (autocast); fp32 where autocast keeps fp32.
  Buffer<float> activation(size_t count) { return Buffer<float>(m_ledger, Category::Activation, count, 2); }
  Buffer<float> activationF32(size_t count) { return Buffer<float>(m_ledger, Category::Activation, count); }
  Buffer<float> workspace(size_t count) { return Buffer<float>(m_ledger, Category::Workspace, count); }

  const ModelSpec& m_spec;
  MemoryLedger& m_ledger;
  int m_batch;
  TextData m_data;
  Buffer<int32_t> m_tokens;   // (B, T)
  Buffer<int32_t> m_targets;  // (B, T)
  Buffer<float> m_cur;        // activation flowing forward
  Buffer<float> m_grad;       // d loss / d activation flowing backward
  std::vector<Saved> m_saved;
};

}  // namespace shardscope
