// The residual-MLP model (model/mlp_model.h) on one CUDA device: same segments,
// parameter layout, init (MlpModel::initParams), data and FLOP counts. Mixed
// precision like bf16 autocast: weights, activations and grads are bf16 in
// device memory, maths inside kernels is fp32 (GEMMs accumulate in fp32,
// LayerNorm keeps mean/rstd in fp32), so results match the CPU model to bf16
// rounding, not bit for bit. Every method but the constructor and destructor
// runs on the rank's compute stream thread and only enqueues work on its CUDA
// stream (currentDeviceQueue()); nothing here synchronizes. Buffers are device
// memory booked in the ledger; never read one on the host.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cuda/gpu_model_support.h"
#include "memory/buffer.h"
#include "model/model.h"
#include "model/model_spec.h"
#include "model/teacher_data.h"
#include "tensor/bf16.h"

namespace shardscope::gpu {

class BlasHandle;

class GpuMlpModel final : public Model {
 public:
  // Throws std::invalid_argument unless the spec is an MLP and local_batch >= 1;
  // allocates the pinned host double the loss lands in.
  GpuMlpModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed);
  ~GpuMlpModel() override;
  GpuMlpModel(const GpuMlpModel&) = delete;
  GpuMlpModel& operator=(const GpuMlpModel&) = delete;

  void loadBatch(int step, int64_t first) override;
  void releaseBatch() override;
  void forward(int segment, const bf16* w, bool skip = false) override;
  // Enqueues the MSE and its sum (into pinned host memory) and seeds backward;
  // returns NaN. finishLoss() reads the value once the compute queue is drained.
  double loss() override;
  double finishLoss(double from_loss) override;
  void backward(int segment, const bf16* w, bf16* g, const std::function<void(int)>& onReady,
                bool skip = false) override;
  int localBatch() const override { return m_batch; }
  double forwardFlops(int segment) const override;

 private:
  struct Saved {
    Buffer<bf16> in, ln, h, a;  // (B, in), (B, D), (B, 4D), (B, 4D)
    Buffer<float> mean, rstd;   // (B)
  };
  BlasHandle& blas();  // created on first use, on the compute thread's device

  const ModelSpec& m_spec;
  MemoryLedger& m_ledger;
  int m_batch;
  TeacherData m_data;
  // Host staging of the batch: members, so an async upload's source outlives loadBatch().
  std::vector<float> m_hostX, m_hostY;
  std::vector<bf16> m_stageX, m_stageY;
  Buffer<bf16> m_targets;  // (B, io)
  Buffer<bf16> m_cur;      // activation flowing forward
  Buffer<bf16> m_grad;     // d loss / d activation flowing backward
  std::vector<Saved> m_saved;
  std::unique_ptr<BlasHandle> m_blas;
  PinnedLoss m_loss;
};

}  // namespace shardscope::gpu
