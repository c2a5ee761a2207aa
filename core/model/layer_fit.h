// Whether a single layer fits one device. ZeRO-3 shards model state over
// ranks, but the unit it computes on is whole on one rank: one block's bf16
// params gathered and its bf16 grads before the reduce-scatter, 4 bytes per
// param of the block, at any number of ranks. Only tensor parallelism splits
// the block itself; this finds the smallest T that makes it fit. `calc` and a
// run on the modeled clock both ask here.
#pragma once

#include <cstdint>

#include "config/model_shape.h"
#include "config/run_config.h"
#include "rank/hardware_profile.h"

namespace shardscope {

struct LayerFit {
  int64_t block_params = 0;  // one block of the TP slice
  int64_t bytes = 0;         // 4 x block_params
  bool fits = true;
  int smallest_tp = 0;       // the smallest T above tp whose block fits; 0 = none up to max_tp
  int max_tp = 0;            // the largest T tried: the key/value heads (gpt: heads), else the MLP's inner width
};

// A T the model can be split by: it divides the MLP's inner width, and for a
// GPT or a published shape the heads and key/value heads (a custom GPT's
// vocabulary too), as --tp's rule asks.
bool tensorParallelSplits(const ModelShape& shape, int t);

LayerFit singleLayerFit(const ModelShape& shape, int tp, double capacity_bytes);

// A run on the modeled clock whose one layer exceeds the profile's device
// memory: a ConfigError that says so and names the smallest --tp that fits.
void requireLayerFitsDevice(const RunConfig& config, const HardwareProfile& profile);

}  // namespace shardscope
