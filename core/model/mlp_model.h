// Forward and backward of the residual-MLP model, one segment at a time, for one
// rank's slice of the batch. Weights arrive as bf16 (the compute copy: full
// params under DDP, a gathered unit under ZeRO-3), math runs in fp32, weight
// grads leave as bf16 and each one fires onReady(param) the moment it is written.
//   input:  x1 = xin·Wi^T + bi                       xin (B, io) -> (B, D)
//   block:  y = x + W2·gelu(W1·LN(x) + b1) + b2      (B, D) -> (B, D), inner 4D
//   head:   out = x·Wh^T + bh                        (B, D) -> (B, io); MSE vs teacher
// Tensor parallel (spec.tp() = T > 1, Megatron-LM): a block's fc1 is
// column-parallel (this rank's 4D/T inner features), fc2 row-parallel; the
// block output is all-reduced over the TP group in forward and the LN
// output's gradient in backward. The input and head projections, LayerNorm
// and fc2's bias are whole on every TP rank: their inputs and output
// gradients are identical across the group (each follows an all-reduce), so
// their gradients are too, with no collective of their own.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "memory/buffer.h"
#include "model/model.h"
#include "model/model_spec.h"
#include "model/teacher_data.h"
#include "tensor/bf16.h"

namespace shardscope {

class MlpModel : public Model {
 public:
  MlpModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed);

  // Deterministic init of all parameters (fp32), identical on every rank.
  static void initParams(const ModelSpec& spec, uint64_t seed, float* master);
  // FLOPs of one segment's forward on `batch` samples: what forwardFlops()
  // reports here and on the GPU twin (one formula for both).
  static double segmentFlops(const ModelSpec& spec, int batch, int segment);

  void loadBatch(int step, int64_t first) override;
  void releaseBatch() override;
  void forward(int segment, const bf16* w, bool skip = false) override;
  double loss() override;  // mean squared error against the teacher
  void backward(int segment, const bf16* w, bf16* g, const std::function<void(int)>& onReady,
                bool skip = false) override;
  int localBatch() const override { return m_batch; }
  double forwardFlops(int segment) const override;
  size_t boundaryElements() const override;
  void setStageInput(const float* x) override;
  void takeStageOutput(float* x) override;
  void setStageOutputGrad(const float* dy) override;
  void takeStageInputGrad(float* dx) override;

 private:
  struct Saved {
    Buffer<float> in, ln, mean, rstd, h, a;
  };
  Buffer<float> weightsF32(int segment, const bf16* w);
  TensorParallelComm& tensorParallel();
  void emitGrad(int param, const float* grad, bf16* g_segment, int64_t seg_offset,
                const std::function<void(int)>& onReady);

  const ModelSpec& m_spec;
  MemoryLedger& m_ledger;
  int m_batch;
  TeacherData m_data;
  Buffer<float> m_targets;  // (B, io)
  Buffer<float> m_cur;   // activation flowing forward
  Buffer<float> m_grad;  // d loss / d activation flowing backward
  std::vector<Saved> m_saved;
};

}  // namespace shardscope
