// Capacity calculator: model-state memory per rank for each sharding stage, from
// the ZeRO paper's bytes/param formulas (analysis/formulas.h). Per-rank bytes count a
// shard as ceil(N / P) params, as a padded flat shard holds, so "fits" is exact
// integer arithmetic and 70B on 14 ranks fits 80 GB. Activations are not counted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/kinds.h"

namespace shardscope {

inline constexpr double kBytesPerGb = 1e9;  // capacities here are decimal GB, as datasheets print

struct CapacityInput {
  int64_t params = 0;          // N
  int ranks = 1;               // P
  int shard_group = 0;         // G for hsdp; 0 = no hsdp row
  // Tensor parallel: params is one TP rank's slice and ranks its data-parallel
  // ranks (the job has ranks·T); 1 without TP.
  int tp = 1;
  double capacity_bytes = 80 * kBytesPerGb;  // per rank
};

struct StageCapacity {
  Strategy stage = Strategy::Ddp;    // ddp, zero1, zero2, hsdp, zero3
  double bytes_per_param = 0;        // the formula at P (or G), per parameter of params (a TP slice)
  // Per parameter of the whole model, as `run` reports it: (formula)/T under
  // TP (expectedBytesPerParam), bytes_per_param without.
  double bytes_per_model_param = 0;
  int64_t bytes_per_rank = 0;        // model states on one rank
  bool fits = false;                 // bytes_per_rank <= capacity_bytes
};

struct CapacityReport {
  CapacityInput input;
  // Least sharding first: ddp, zero1, zero2, then hsdp (shards over G <= P)
  // when a shard group is given, then zero3.
  std::vector<StageCapacity> stages;
  std::optional<Strategy> smallest_fitting_stage;  // first of `stages` that fits
  // Smallest P at which zero3 fits: ceil(N / floor(C / 16)), about 16 N / C;
  // 0 when not even one param's 16 bytes fit in C.
  int64_t zero3_min_ranks = 0;
};

// Throws ConfigError on params < 1, ranks < 1, capacity <= 0, or a shard group
// that does not divide ranks.
CapacityReport computeCapacity(const CapacityInput& input);

// A parameter count as people write it: 124439808, 7e9, 7B, 70b, 124M, 1.5T, 350K
// (K 1e3, M 1e6, B 1e9, T 1e12). Must be a whole number in 1..1e15; throws a
// ConfigError naming `flag` otherwise.
int64_t parseParamCount(const std::string& flag, const std::string& text);

}  // namespace shardscope
