// The interface every data-parallel strategy implements on one rank. The Run
// drives it from the rank's host thread: setup() once, then step() per training
// step; the strategy enqueues work on the rank's streams and returns the local
// loss when the step is complete on this rank.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/process_group.h"
#include "device/cpu_stream.h"
#include "rank/rank_context.h"
#include "config/run_config.h"
#include "model/model.h"
#include "model/model_spec.h"
#include "model/tensor_parallel_comm.h"
#include "parallel/bucket_plan.h"

namespace shardscope {

// Memory traffic of one AdamW element: read master, m, v (fp32) and the bf16
// grad; write master, m, v and the bf16 param (modeled clock).
inline constexpr double kAdamBytesPerElement = 4 * 3 + 2 + 4 * 3 + 2;

class TensorParallelLayout;

struct RankEnv {
  RankContext& ctx;
  const RunConfig& config;
  const ModelSpec& spec;
  ProcessGroup& world;  // all ranks, used on the comm stream
  CpuStream& compute;
  CpuStream& comm;
  // Sharded strategies (zero3/fsdp/hsdp) only, else null: the shard group's
  // communicators for the gather and reduce streams, and (hsdp) the group of
  // ranks holding the same shard in the other replicas.
  ProcessGroup* gather = nullptr;
  ProcessGroup* reduce = nullptr;
  ProcessGroup* replicate = nullptr;
  CpuStream* gather_stream = nullptr;
  CpuStream* reduce_stream = nullptr;
  // The rank's place on the data-parallel axis, which world spans: rank and P
  // without tensor parallelism; with it (config.tp > 1), spec is this rank's
  // TP slice, tensor its TP group's collectives and tp_layout where the slice
  // sits in the full model.
  int dp_rank = 0;
  int dp_size = 1;
  // DDP, ZeRO-1/2: the run's bucket plan (planned once, for every rank).
  const std::vector<Bucket>* buckets = nullptr;
  TensorParallelComm* tensor = nullptr;
  const TensorParallelLayout* tp_layout = nullptr;
  // Pipelined runs (config.pipelined()): this rank's stage and its pipeline
  // group (one rank per stage, group rank = stage; null with one stage).
  int stage = 0;
  ProcessGroup* pipeline = nullptr;
};

class ParallelStrategy {
 public:
  virtual ~ParallelStrategy() = default;
  virtual void setup() = 0;
  virtual double step(int step) = 0;  // local mean loss of this rank's slice
  // Writes the fp32 master weights this rank owns into `full` (size N); ranks
  // own disjoint parts, DDP's rank 0 owns all.
  virtual void copyOwnedMaster(std::vector<float>& full) const = 0;
  virtual CommBytes stepCommBytes() const = 0;
  // Buckets in the order this rank launched their collectives in the last step.
  virtual std::vector<int> lastFireOrder() const { return {}; }
  // Flat-parameter padding (elements, whole model) added so shards split evenly,
  // and the model-state bytes this rank spends on its part of it.
  virtual int64_t paddingElements() const { return 0; }
  virtual int64_t paddingStateBytes() const { return 0; }
  // FSDP: the (op, unit) pairs this rank issued in the last step, in issue order.
  virtual std::vector<std::pair<std::string, int>> lastUnitOrder() const { return {}; }
  // The model's activation bytes per block, measured on the ledger (Model::activationBytesPerLayer).
  virtual int64_t activationBytesPerLayer() const { return 0; }
};

std::unique_ptr<ParallelStrategy> makeStrategy(RankEnv& env);
// The rank's model on its device (the GPU model on a GPU run), for its slice of the batch.
std::unique_ptr<Model> makeRankModel(RankEnv& env);
// Rank 0's initial fp32 weights reach every rank by a broadcast (DDP's
// constructor, FSDP's sync_module_states); returned on the host (empty on a
// meta run). On a GPU run the broadcast moves a device buffer, booked as
// Workspace while it lives.
std::vector<float> broadcastInitialWeights(RankEnv& env);

}  // namespace shardscope
