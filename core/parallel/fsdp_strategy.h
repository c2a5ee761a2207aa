// ZeRO-3 / FSDP (and HSDP): parameters, gradients and optimizer state all
// sharded over the shard group. Per unit, forward: all-gather -> compute ->
// free; backward, in reverse: all-gather again -> compute -> reduce-scatter ->
// free the gathered params and the full gradient; then each rank steps its own
// shard, no further communication. All-gathers run on the gather stream,
// reduce-scatters on the reduce stream; compute waits on events. The host
// issues everything up front (like PyTorch's CPU thread running ahead);
// prefetch decides where each all-gather sits in that issue order, and at most
// two block units are gathered at once (PyTorch's limit_all_gathers).
// HSDP adds an all-reduce of each reduced gradient shard across replicas.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "memory/buffer.h"
#include "model/model.h"
#include "parallel/fsdp_units.h"
#include "parallel/strategy.h"

namespace shardscope {

class FsdpStrategy : public ParallelStrategy {
 public:
  explicit FsdpStrategy(RankEnv& env);
  void setup() override;
  double step(int step) override;
  void copyOwnedMaster(std::vector<float>& full) const override;
  CommBytes stepCommBytes() const override;
  int64_t paddingElements() const override { return m_units.paddingElements(); }
  int64_t paddingStateBytes() const override;
  std::vector<std::pair<std::string, int>> lastUnitOrder() const override { return m_lastOrder; }
  int64_t activationBytesPerLayer() const override { return m_model->activationBytesPerLayer(); }

  const FsdpUnits& units() const { return m_units; }

 private:
  enum class Phase { Forward, Backward };
  // Host-side issue helpers; each enqueues work on the rank's streams.
  void issueGather(int unit, Phase phase);
  void issueFree(int unit);
  void issueCompute(int unit, const std::vector<int>& segments, Phase phase);
  void issueReduce(int unit);
  void reduceFp32(int unit, int32_t bwd_op, const std::vector<int64_t>& reduce_tickets,
                  const std::vector<int64_t>& replicate_tickets);
  bool skipsUnit(int unit) const;
  bf16* gatheredSegment(int unit, int segment);
  bf16* gradSegment(int unit, int segment);

  RankEnv& m_env;
  FsdpUnits m_units;
  FsdpUnits::Shard m_shard;
  std::unique_ptr<Model> m_model;
  const bool m_prefetchForward, m_prefetchBackward, m_reshard;
  const bool m_reduceFp32, m_paramFp32;  // MixedPrecision reduce_dtype / param_dtype fp32
  int m_skipSegment = -1;  // inject-branch on this rank

  Buffer<bf16> m_paramShard, m_gradShard;
  Buffer<float> m_master, m_adamM, m_adamV;
  std::vector<Buffer<bf16>> m_gathered, m_gradFull;  // per unit, transient

  // Issue bookkeeping (host thread only).
  std::vector<StreamEventPtr> m_gatheredEvent, m_freedEvent;
  std::vector<int32_t> m_gatherOp, m_lastComputeOp;
  std::vector<bool> m_live;          // gathered (or gathering) and not yet freed
  std::vector<int> m_phaseGathers;   // block units gathered in the current phase
  std::vector<std::pair<std::string, int>> m_order, m_lastOrder;
  double m_loss = 0;
};

}  // namespace shardscope
