// The shapes-only model of a meta run: no math and no data, but the same
// activation bookings per segment as the real model (saved in forward, freed in
// backward), every gradient's ready hook in reverse registration order, and the
// real model's FLOP counts for the modeled clock.
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
  double loss() override { return 0.0; }
  void backward(int segment, const bf16* w, bf16* g, const std::function<void(int)>& onReady,
                bool skip = false) override;
  int localBatch() const override { return m_batch; }
  double forwardFlops(int segment) const override { return m_flops[segment]; }

 private:
  int64_t savedFloats(int segment) const;  // activations a segment keeps for backward

  const ModelSpec& m_spec;
  MemoryLedger& m_ledger;
  int m_batch;
  std::vector<double> m_flops;
  std::vector<Buffer<float>> m_saved;
  Buffer<float> m_batchBuffers;
};

}  // namespace shardscope
