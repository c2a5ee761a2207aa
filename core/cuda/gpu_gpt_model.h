// The GPT model (model/gpt_model.h) on one CUDA device: same segments, parameter layout,
// init, corpus batches and FLOP counts. bf16 weights, activations (logits and attention
// probabilities too) and grads; fp32 inside kernels and GEMMs, LayerNorm mean/rstd fp32:
// it matches GptModel to bf16 rounding. Its bookings are GptModel's but for the
// logits (bf16 here, fp32 on CPU) and --attention flash: the kernels have no
// fused flash attention, so forward keeps the probabilities in workspace only
// (freed before the next op) and books the fp32 row statistics FlashAttention
// keeps, and backward recomputes the probabilities with the same kernels.
// --activation-checkpointing is refused on the GPU backends (no recompute path). Methods but the constructor and destructor run on
// the rank's compute stream thread and only enqueue there; Buffers are device memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cuda/gpu_model_support.h"
#include "memory/buffer.h"
#include "model/model.h"
#include "model/model_spec.h"
#include "model/text_data.h"
#include "tensor/bf16.h"

namespace shardscope::gpu {

class BlasHandle;

class GpuGptModel final : public Model {
 public:
  // Throws ConfigError on a shape the model cannot run (as GptModel: heads not
  // dividing hidden, a vocabulary under 256; also a preset's table, or more than
  // INT_MAX softmax rows), std::invalid_argument for local_batch < 1. Allocates the
  // pinned host double the loss lands in.
  GpuGptModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed);
  ~GpuGptModel() override;
  GpuGptModel(const GpuGptModel&) = delete;
  GpuGptModel& operator=(const GpuGptModel&) = delete;

  void loadBatch(int step, int64_t first) override;
  // Tests: this exact batch instead of the corpus. tokens, targets: host (B, T), in [0, V).
  void loadTokens(const int32_t* tokens, const int32_t* targets);
  void releaseBatch() override;
  void forward(int segment, const bf16* w, bool skip = false) override;
  // Enqueues the mean cross-entropy over this rank's B*T tokens and its copy into
  // pinned host memory, seeds backward (the logits become dlogits), returns NaN.
  double loss() override;
  // The value loss() enqueued; valid once the compute queue has been drained.
  double finishLoss(double from_loss) override;
  void backward(int segment, const bf16* w, bf16* g, const std::function<void(int)>& onReady,
                bool skip = false) override;
  int localBatch() const override { return m_batch; }
  double forwardFlops(int segment) const override;

 private:
  // Activations a segment's backward needs (empty for the parts it does not use).
  struct Saved {
    Buffer<bf16> in;                   // (B*T, D) segment input (residual stream)
    Buffer<bf16> ln1;                  // (B*T, D)
    Buffer<float> mean1, rstd1;        // (B*T)
    Buffer<bf16> qkvh;                 // (3, B, H, T, hs) q | k | v, heads contiguous
    Buffer<bf16> att;                  // (B, H, T, T) softmax probabilities (naive attention)
    Buffer<float> lse;                 // (B, H, T) flash attention's row statistics (booked)
    Buffer<bf16> atty;                 // (B*T, D) heads concatenated, input of attn.proj
    Buffer<bf16> res;                  // (B*T, D) residual stream after attention
    Buffer<bf16> ln2;                  // (B*T, D); the head's LNf uses it too
    Buffer<float> mean2, rstd2;        // (B*T)
    Buffer<bf16> h, a;                 // (B*T, 4D) fc1 output before and after gelu
  };
  BlasHandle& blas();  // created on first use, on the compute thread's device
  // Uploads m_hostTokens / m_hostTargets (and their token index) to the device.
  void uploadBatch(const char* method);
  void forwardBlock(const bf16* const* p, Saved& s);
  void backwardBlock(const bf16* const* p, bf16* const* slot, Saved& s,
                     const std::function<void(int)>& ready);

  const ModelSpec& m_spec;
  MemoryLedger& m_ledger;
  int m_batch;
  TextData m_data;
  // Host staging of the batch: members, so an async upload's source outlives the call.
  std::vector<int32_t> m_hostTokens, m_hostTargets;       // (B, T)
  std::vector<int32_t> m_hostOffsets, m_hostPositions;  // (V + 1), (B*T): buildTokenIndex
  Buffer<int32_t> m_tokens, m_targets;                  // (B, T)
  Buffer<int32_t> m_tokenOffsets, m_tokenPositions;     // the token index on the device
  Buffer<bf16> m_cur;   // activation flowing forward
  Buffer<bf16> m_grad;  // d loss / d activation flowing backward
  std::vector<Saved> m_saved;
  std::unique_ptr<BlasHandle> m_blas;
  PinnedLoss m_loss;
};

}  // namespace shardscope::gpu
