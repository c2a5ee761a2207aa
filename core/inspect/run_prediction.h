// What the formulas (analysis/formulas.h) predict for the run a store shows,
// computed once from its RunConfig — or, for a trace that names only its
// strategy, from the strategy, ranks and parameter count — so a view draws a
// prediction without assembling formula inputs itself.
#pragma once

#include <optional>
#include <string>

#include "analysis/formulas.h"

namespace shardscope {

class EventStore;

struct RunPrediction {
  RunConfig config;                 // the run's, or formulaConfig(strategy, ranks, shard group)
  int64_t params = 0;               // the whole model's
  double bytes_per_param = 0;       // model state per parameter on one rank (expectedBytesPerParam)
  double model_state_bytes = 0;     // per rank (expectedModelStateBytes)
  std::string model_state_formula;  // "4 + 12/P", "(16/P)/T"
  ExpectedTraffic traffic;
  GatheredPeak gathered;            // zero3/fsdp/hsdp with a config (bytes 0 otherwise)
};

// None for a trace without a strategy ShardScope knows (an imported PyTorch
// trace) or without a parameter count.
std::optional<RunPrediction> predictRun(const EventStore& store);

}  // namespace shardscope
