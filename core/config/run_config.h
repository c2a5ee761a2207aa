// Every knob of a run. The settings table (config/settings.h) gives each its
// flag, JSON key, default, range and help; the CLI, the validator, the config
// JSON in traces and summaries, presets and the GUI's form all come from it,
// so a bad value gets the same message everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/kinds.h"
#include "config/model_shape.h"

namespace shardscope {

struct InjectBranch {
  int rank = 0;
  int block = 0;
  bool operator==(const InjectBranch&) const = default;
};

struct RunConfig {
  Strategy strategy = Strategy::Ddp;
  int ranks = 4;
  // Tensor parallelism (Megatron-LM): T consecutive ranks split every block's
  // matrices; the P/T groups of ranks with the same TP rank are the
  // data-parallel axis the strategy runs along. 1: no tensor parallelism.
  int tp = 1;
  // Pipeline parallelism: the model's layers split into pp stages of
  // contiguous segments; the global batch of each step flows through them in
  // `microbatches` microbatches (gradients accumulate over them). The mesh's
  // rank order: r = t + T·(d + D·s) for TP rank t, data-parallel rank d of
  // D = P/(T·pp) and stage s (Megatron-LM's tp-dp-pp order: TP innermost,
  // inside a node; stages outermost, across nodes). 1: no pipeline.
  int pp = 1;
  std::optional<int> microbatches;                 // [1]
  std::optional<PipelineSchedule> pp_schedule;     // [1f1b]
  std::optional<int> virtual_stages;               // interleaved: model chunks per stage [2]
  int microbatchCount() const { return microbatches.value_or(1); }
  PipelineSchedule pipelineSchedule() const { return pp_schedule.value_or(PipelineSchedule::OneFOneB); }
  int virtualStages() const {
    return pipelineSchedule() == PipelineSchedule::Interleaved ? virtual_stages.value_or(2) : 1;
  }
  // The pipeline engine runs the step (stages, or microbatches on one stage).
  bool pipelined() const { return pp > 1 || microbatchCount() > 1; }
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
  std::optional<Wrap> wrap;                  // what one FSDP unit wraps [block]
  std::optional<CommDType> reduce_dtype;     // FSDP MixedPrecision reduce_dtype [bf16]
  std::optional<CommDType> param_dtype;      // FSDP MixedPrecision param_dtype (gathers) [bf16]
  // ddp/zero1: the dtype of the gradient buffers and their reduction [bf16];
  // fp32 is Megatron-LM's main_grad (accumulate and all-reduce in fp32).
  std::optional<CommDType> grad_dtype;

  bool isSharded() const { return shardscope::isSharded(strategy); }
  int unitBlocks() const { return unit_blocks.value_or(1); }
  Prefetch prefetchMode() const { return prefetch.value_or(Prefetch::Both); }
  bool reshardAfterForward() const { return reshard_after_forward.value_or(true); }
  Wrap wrapPolicy() const { return wrap.value_or(Wrap::Block); }
  CommDType reduceDType() const { return reduce_dtype.value_or(CommDType::Bf16); }
  CommDType paramDType() const { return param_dtype.value_or(CommDType::Bf16); }
  bool fp32Grads() const {
    return grad_dtype.value_or(CommDType::Bf16) == CommDType::Fp32 &&
           (strategy == Strategy::Ddp || strategy == Strategy::Zero1);
  }
  // Ranks along the data-parallel axis: P / (T·pp).
  int dataParallelSize() const { return tp > 0 && pp > 0 ? ranks / (tp * pp) : ranks; }
  // Samples one forward pass carries: a data-parallel rank's share of the
  // batch, split over the microbatches.
  int microBatchSize() const {
    const int dp = dataParallelSize(), m = microbatchCount();
    return dp > 0 && m > 0 ? batch / (dp * m) : batch;
  }
  // The pipeline stage of a rank (r = t + T·(d + D·s)).
  int stageOf(int rank) const {
    const int per_stage = pp > 0 ? ranks / pp : ranks;
    return per_stage > 0 ? rank / per_stage : 0;
  }
  // Ranks that shard one copy of the model state (of one TP slice): P / T, or G under hsdp.
  int shardGroupSize() const {
    return isHybrid(strategy) ? shard_group.value_or(dataParallelSize()) : dataParallelSize();
  }
  std::optional<InjectBranch> inject_branch;
  // measured: CPU wall time. modeled: op costs priced under a hardware
  // profile (deterministic; what the profile's GPUs would do).
  ClockKind clock = ClockKind::Measured;
  Backend backend = Backend::Cpu;
  std::optional<std::string> profile;  // modeled only [h100-sxm]
  std::string profileName() const { return profile.value_or("h100-sxm"); }
  bool replicate = true;  // meta, 64+ symmetric ranks: simulate rank 0 once and copy it (Run::setReplication)
  // Breakpoints (lockstep gate): stop all ranks before these compute ops /
  // units (or blocks); the CLI prints each stop and goes on.
  std::vector<BreakOp> break_on;
  std::vector<int> break_units;
  std::string trace_path;
  std::string summary_path;
  std::string flight_recorder_dir;  // --flight-recorder: per-rank dumps when the run ends (core/postmortem/fr_dump_writer.h)
  // How the ranks run (not what runs: no part of the config JSON, nor of
  // runArgs, so a processes run's trace is byte for byte a threads run's).
  Launch launch = Launch::Threads;
  // Several machines (--launch processes), with torchrun's names: this node's
  // place, its ranks (procsPerNode() of them: node_rank * K ..), where the
  // nodes meet (--rdzv; a fresh directory on this host by default), the run's
  // name there, and the address the other nodes reach this one at.
  int nnodes = 1;
  int node_rank = 0;
  std::optional<int> nproc_per_node;
  std::string rdzv;
  std::string rdzv_id = "shardscope";
  std::string node_addr = "127.0.0.1";
  // --rdzv-timeout: how long a rank waits at --rdzv for the others (node 0's
  // collector, then every rank's connection) before it names who is missing.
  int rdzv_timeout_s = 300;
  // --serve ADDR: inspectors may attach to the live run there (config/serve_address.h).
  std::string serve;
  int serve_wait_s = 0;  // --serve-wait: hold the start until an inspector attaches (at most this long)
  int procsPerNode() const { return nproc_per_node.value_or(nnodes > 0 ? ranks / nnodes : ranks); }
};

// Throws ConfigError naming the flag, the allowed range and a hint.
void validate(const RunConfig& config);

// Parses `shardscope-cli run` arguments (without the "run"). Throws ConfigError;
// sets *help when --help was given.
RunConfig parseRunArgs(const std::vector<std::string>& args, bool* help = nullptr);
std::string runUsage();
// The CLI's exit codes, as `--help` and `run --help` end.
const char* exitCodesText();
// The `run` flags that give this config back: parseRunArgs(runArgs(c)) equals
// c for every config the CLI can express (not --trace/--summary, nor io_dim).
// Traces carry them, so an opened trace can be run again.
std::vector<std::string> runArgs(const RunConfig& config);
// The same as one shell-ready line: "shardscope-cli run --strategy zero3 …".
std::string runCommandLine(const RunConfig& config);

}  // namespace shardscope
