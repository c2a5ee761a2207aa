// Every knob of a run, with the CLI's flag names, and the one validator both
// the CLI and the GUI use, so a bad value gets the same message everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model_spec.h"
#include "trace/event.h"

namespace shardscope {

struct InjectBranch {
  int rank = 0;
  int block = 0;
};

enum class Prefetch { None, Forward, Backward, Both };
enum class ClockKind { Measured, Modeled };
// cpu: real math and memory on CPU ranks. meta: shapes only — no math, no
// bytes, but the same engine, ledger accounting and the modeled clock.
// cuda: one rank per GPU, NCCL collectives. cuda-emulated: P ranks on one GPU,
// collectives as device copies and reductions (NCCL refuses two ranks per GPU).
enum class Backend { Cpu, Meta, Cuda, CudaEmulated };
std::string prefetchName(Prefetch p);
std::string backendName(Backend b);  // the --backend value
bool isGpuBackend(Backend b);

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
  // Sharded data parallel (zero3/fsdp/hsdp); unset = default, so a flag given
  // to a strategy it does not apply to can be named in the error.
  std::optional<int> unit_blocks;            // K consecutive blocks per FSDP unit [1]
  std::optional<Prefetch> prefetch;          // [both]
  std::optional<bool> reshard_after_forward; // [on]
  std::optional<int> shard_group;            // hsdp: G ranks per shard group

  bool isSharded() const { return strategy == "zero3" || strategy == "fsdp" || strategy == "hsdp"; }
  int unitBlocks() const { return unit_blocks.value_or(1); }
  Prefetch prefetchMode() const { return prefetch.value_or(Prefetch::Both); }
  bool reshardAfterForward() const { return reshard_after_forward.value_or(true); }
  // Ranks that shard one copy of the model state: P, or G under hsdp.
  int shardGroupSize() const { return strategy == "hsdp" ? shard_group.value_or(ranks) : ranks; }
  std::optional<InjectBranch> inject_branch;
  // measured: CPU wall time. modeled: op costs priced under a hardware
  // profile (deterministic; what the profile's GPUs would do).
  ClockKind clock = ClockKind::Measured;
  Backend backend = Backend::Cpu;
  std::optional<std::string> profile;  // modeled only [h100-sxm]
  std::string profileName() const { return profile.value_or("h100-sxm"); }
  // Breakpoints (lockstep gate): stop all ranks before these compute ops /
  // units (or blocks); the CLI prints each stop and goes on.
  bool replicate = true;  // meta, 64+ symmetric ranks: simulate rank 0 once and copy it (Run::setReplication)
  std::vector<EventKind> break_on;
  std::vector<int> break_units;
  std::string trace_path;
  std::string summary_path;
};

// Throws ConfigError naming the flag, the allowed range and a hint.
void validate(const RunConfig& config);

// Parses `shardscope-cli run` arguments (without the "run"). Throws ConfigError;
// sets *help when --help was given.
RunConfig parseRunArgs(const std::vector<std::string>& args, bool* help = nullptr);
std::string runUsage();
// The `run` flags that give this config back: parseRunArgs(runArgs(c)) equals
// c for every config the CLI can express (not --trace/--summary, nor io_dim).
// Traces carry them, so an opened trace can be run again.
std::vector<std::string> runArgs(const RunConfig& config);
// The same as one shell-ready line: "shardscope-cli run --strategy zero3 …".
std::string runCommandLine(const RunConfig& config);

}  // namespace shardscope
