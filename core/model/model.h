// What strategies need from a model: per-segment forward and backward on bf16
// weights of one rank's slice of the batch, the loss, and the cost of each
// segment (for the modeled clock). Strategies never look inside a segment;
// the residual MLP and the GPT block are two implementations.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "memory/memory_ledger.h"
#include "model/model_spec.h"
#include "model/tensor_parallel_comm.h"
#include "tensor/bf16.h"

namespace shardscope {

class Model {
 public:
  virtual ~Model() = default;
  // Samples [first, first + localBatch()) of the global batch of `step` become
  // this rank's input and target (activation memory until releaseBatch()).
  virtual void loadBatch(int step, int64_t first) = 0;
  virtual void releaseBatch() = 0;
  // w: the segment's bf16 params, flat in registration order. skip: a
  // rank-dependent branch that bypasses a block (y = x; no gradients).
  virtual void forward(int segment, const bf16* w, bool skip = false) = 0;
  // After the last segment's forward: this rank's mean loss; its gradient starts backward.
  // A GPU model only enqueues the loss here (returns NaN, so nothing syncs
  // mid-step); finishLoss() gives the value once the compute queue is drained.
  virtual double loss() = 0;
  virtual double finishLoss(double from_loss) { return from_loss; }
  // g: the segment's bf16 grads, same layout as w (overwritten); onReady(param)
  // fires the moment each parameter's gradient is written.
  virtual void backward(int segment, const bf16* w, bf16* g, const std::function<void(int)>& onReady,
                        bool skip = false) = 0;
  virtual int localBatch() const = 0;
  // FLOPs of one segment's forward on this rank's batch (backward: 2x).
  virtual double forwardFlops(int segment) const = 0;
  // Activation checkpointing: whether the backward of `segment` starts by
  // recomputing (part of) its forward. The strategy runs recompute() as its own
  // compute span (a Forward event flagged kEventRecompute) right before
  // backward(), and charges recomputeFlops(): hardware FLOPs, which MFU's model
  // FLOPs leave out.
  virtual bool recomputes(int /*segment*/) const { return false; }
  virtual void recompute(int /*segment*/, const bf16* /*w*/) {}
  virtual double recomputeFlops(int /*segment*/) const { return 0.0; }
  // The peak over blocks of the activation bytes one block's forward leaves
  // booked (what it keeps for backward plus its output, the next block's
  // input), measured on the ledger; 0 for a model without blocks of tokens.
  int64_t activationBytesPerLayer() const { return m_activationBytesPerLayer; }

  // A tensor-parallel slice (spec().tp() > 1) sums its partial activations
  // over this group; set before the first batch.
  void setTensorParallel(TensorParallelComm* tp) { m_tp = tp; }

  // Pipeline stages: one instance runs one microbatch through the segments
  // its stage holds. embeds: it holds the input segment, so loadBatch()
  // loads the inputs; computes_loss: it holds the head, so loadBatch() loads
  // the targets. Before loadBatch(); both by default (the whole model).
  void setStageRole(bool embeds, bool computes_loss) {
    m_embeds = embeds;
    m_computesLoss = computes_loss;
  }
  // The activation that crosses a stage boundary (the residual stream, (B·T, D)
  // or (B, D)): elements on this rank. A later stage's first forward starts
  // from setStageInput(); an earlier stage's last forward leaves
  // takeStageOutput() (which frees it here). Backward mirrors them with the
  // gradient. A meta model books the bytes and reads no data.
  virtual size_t boundaryElements() const;
  virtual void setStageInput(const float* x);
  virtual void takeStageOutput(float* x);
  virtual void setStageOutputGrad(const float* dy);
  virtual void takeStageInputGrad(float* dx);
  // Another instance for the next microbatch (same spec, ledger, batch and
  // role, no activations), made faster than from scratch; nullptr: use makeModel.
  virtual std::unique_ptr<Model> another() const { return nullptr; }

 protected:
  void noteBlockActivations(int64_t bytes) {
    if (bytes > m_activationBytesPerLayer) m_activationBytesPerLayer = bytes;
  }
  TensorParallelComm* m_tp = nullptr;
  int64_t m_activationBytesPerLayer = 0;
  bool m_embeds = true, m_computesLoss = true;
};

// The model the spec describes (ModelShape::kind), for one rank's local batch;
// the shapes-only MetaModel when the ledger is a meta run's.
std::unique_ptr<Model> makeModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed);
// Deterministic initial fp32 weights, identical on every rank.
void initModelParams(const ModelSpec& spec, uint64_t seed, float* master);

}  // namespace shardscope
