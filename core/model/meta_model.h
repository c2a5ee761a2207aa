// The shapes-only model of a meta run: no math and no data, but the same
// activation bookings per segment as the real model (saved in forward, freed in
// backward), every gradient's ready hook in reverse registration order, and the
// real model's FLOP counts for the modeled clock; under tensor parallelism the
// slice's bookings and FLOPs, and the collectives its real twin issues.
#pragma once

#include <memory>
#include <vector>

#include "memory/buffer.h"
#include "model/model.h"

namespace shardscope {

class MetaModel : public Model {
 public:
  MetaModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed);
  void loadBatch(int step, int64_t first) override;
  void releaseBatch() override;
  void forward(int segment, const bf16* w, bool skip = false) override;
  double loss() override;
  void backward(int segment, const bf16* w, bf16* g, const std::function<void(int)>& onReady,
                bool skip = false) override;
  int localBatch() const override { return m_batch; }
  double forwardFlops(int segment) const override { return m_flops[segment]; }
  bool recomputes(int segment) const override;
  void recompute(int segment, const bf16* w) override;
  double recomputeFlops(int segment) const override;
  size_t boundaryElements() const override;
  // Its FLOP tables copied, not priced again (a pipeline makes one per microbatch).
  std::unique_ptr<Model> another() const override;
  void setStageInput(const float*) override;
  void takeStageOutput(float*) override { m_boundary.reset(); }
  void setStageOutputGrad(const float*) override;
  void takeStageInputGrad(float*) override { m_boundary.reset(); }
  // Bytes of the activations a segment keeps for backward, as the real model
  // books them (gpt: bf16, LayerNorm/RMSNorm statistics, flash's softmax
  // statistics and the logits fp32; the residual MLP: fp32). A checkpointed
  // block: what it keeps through forward (kept) or what its recompute adds.
  // Public for the pre-run memory check, which sums a TP slice's bookings
  // without the group whose collectives forward() issues.
  int64_t savedBytes(int segment, bool recomputed = false) const;

 private:
  // Tables left empty: another() fills them from its prototype.
  MetaModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch);
  void tensorParallelCollectives(int segment, bool backward);
  bool hasSequence() const;   // gpt or a published transformer (tokens), not the residual MLP
  size_t tokenWidth() const;  // elements of one (tokens, D) activation on this rank

  const ModelSpec& m_spec;
  MemoryLedger& m_ledger;
  int m_batch;
  std::vector<double> m_flops;
  std::vector<double> m_attentionFlops;  // per block: FLOPs before its first TP all-reduce
  std::vector<Buffer<uint8_t>> m_saved;
  std::vector<Buffer<uint8_t>> m_recomputed;  // per block: what its recompute rebuilt, until its backward
  bool m_sequenceParallel = false;  // spec tp > 1 with the shape's sequence parallelism
  Buffer<float> m_batchBuffers;
  Buffer<uint8_t> m_boundary;  // a stage's received input (or output gradient), until its segment consumes it
};

}  // namespace shardscope
