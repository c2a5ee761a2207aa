// Every knob of a run, with the CLI's flag names, and the one validator both
// the CLI and the GUI use, so a bad value gets the same message everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model_spec.h"

namespace shardscope {

struct InjectBranch {
  int rank = 0;
  int block = 0;
};

struct RunConfig {
  std::string strategy = "ddp";
  int ranks = 4;
  ModelShape model;
  int batch = 32;          // global batch; each rank takes batch / ranks samples
  int steps = 3;
  double bucket_mb = 25.0;       // DDP bucket cap (MiB), as PyTorch's bucket_cap_mb
  double first_bucket_mb = 1.0;  // PyTorch's first-bucket cap (_DEFAULT_FIRST_BUCKET_BYTES)
  uint64_t seed = 1;
  double lr = 1e-4;
  int timeout_ms = 3000;   // collective fingerprint check / readiness timeout
  std::optional<InjectBranch> inject_branch;
  std::string trace_path;
  std::string summary_path;
};

// Throws ConfigError naming the flag, the allowed range and a hint.
void validate(const RunConfig& config);

// Parses `shardscope-cli run` arguments (without the "run"). Throws ConfigError;
// sets *help when --help was given.
RunConfig parseRunArgs(const std::vector<std::string>& args, bool* help = nullptr);
std::string runUsage();

}  // namespace shardscope
