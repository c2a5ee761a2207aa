// The enumerated choices of a run: strategy, backend, clock, prefetch, model
// kind and the ops a breakpoint can stop before. Their CLI / trace names map
// to the values here and nowhere else; code asks the predicates below instead
// of comparing names.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

// fsdp behaves as zero3 but stays its own value: summaries and traces write
// the name the user chose.
enum class Strategy { Ddp, Zero1, Zero2, Zero3, Fsdp, Hsdp };
// cpu: real math and memory on CPU ranks. meta: shapes only — no math, no
// bytes, but the same engine, ledger accounting and the modeled clock.
// cuda: one rank per GPU, NCCL collectives. cuda-emulated: P ranks on one GPU,
// collectives as device copies and reductions (NCCL refuses two ranks per GPU).
enum class Backend { Cpu, Meta, Cuda, CudaEmulated };
// measured: this machine's (or GPU's) time. modeled: op costs priced under a
// hardware profile (deterministic).
enum class ClockKind { Measured, Modeled };
enum class Prefetch { None, Forward, Backward, Both };
// threads: every rank a thread of this process. processes: one worker process
// per rank, as torchrun starts them (core/launch). env: this process is one
// rank that a cluster launcher (torchrun, mpirun, srun) started; its rank and
// the world size come from the environment (launch/launcher_env.h).
enum class Launch { Threads, Processes, Env };
enum class ModelKind { Mlp, Gpt };
// gpt: how attention keeps its softmax for backward. naive: the (B, H, S, S)
// probabilities; flash: only the per-row softmax statistics (FlashAttention's
// memory), the scores recomputed blockwise in backward.
enum class Attention { Naive, Flash };
// gpt, per block: what forward keeps for backward. none: every tensor backward
// reads; selective: not the attention core (scores, softmax), recomputed in
// backward (Korthikanti et al. 2022); full: only the block's input, the whole
// block recomputed in backward.
enum class Checkpointing { None, Selective, Full };
// What a lockstep breakpoint (--break-on) stops before: a compute op, a free of
// a unit's gathered parameters, or the launch of an all-gather or reduce-scatter.
// zero3/fsdp/hsdp: what one FSDP unit wraps. block: K consecutive blocks
// (--unit-blocks); linear: every Linear layer alone, as FSDP's
// ModuleWrapPolicy({nn.Linear}).
enum class Wrap { Block, Linear };
// FSDP MixedPrecision: the dtype gradients are reduced in (reduce_dtype) and
// parameters are gathered in (param_dtype).
enum class CommDType { Bf16, Fp32 };
// Pipeline parallelism: the order each stage runs its microbatches' forward
// and backward passes. gpipe: all forwards, then all backwards; 1f1b
// (PipeDream-Flush): P - k warm-up forwards on stage k, then one forward and
// one backward in turn; interleaved: 1f1b over V model chunks per stage
// (Megatron-LM), a bubble V times smaller.
enum class PipelineSchedule { GPipe, OneFOneB, Interleaved };
enum class BreakOp { Forward, Backward, OptimizerStep, Free, AllGather, ReduceScatter };

// Every value of each kind, in the order the CLI's help and the form list them.
const std::vector<Strategy>& allStrategies();
const std::vector<Backend>& allBackends();

std::string strategyName(Strategy s);  // "zero3"
std::string backendName(Backend b);    // the --backend value
std::string clockName(ClockKind c);
std::string launchName(Launch l);
std::string prefetchName(Prefetch p);
std::string modelKindName(ModelKind m);
std::string breakOpName(BreakOp op);
std::string attentionName(Attention a);
std::string checkpointingName(Checkpointing c);
std::string wrapName(Wrap w);
std::string commDTypeName(CommDType d);
std::string pipelineScheduleName(PipelineSchedule s);

// nullopt for a name that is not one of the kind's values.
std::optional<Strategy> parseStrategy(std::string_view name);
std::optional<Backend> parseBackend(std::string_view name);
std::optional<ClockKind> parseClock(std::string_view name);
std::optional<Launch> parseLaunch(std::string_view name);
std::optional<Prefetch> parsePrefetch(std::string_view name);
std::optional<ModelKind> parseModelKind(std::string_view name);
std::optional<BreakOp> parseBreakOp(std::string_view name);
std::optional<Attention> parseAttention(std::string_view name);
std::optional<Checkpointing> parseCheckpointing(std::string_view name);
std::optional<Wrap> parseWrap(std::string_view name);
std::optional<CommDType> parseCommDType(std::string_view name);
std::optional<PipelineSchedule> parsePipelineSchedule(std::string_view name);

// The names of a kind's values ("none", "forward", …), for help texts and menus.
std::vector<std::string> strategyNames();
std::vector<std::string> backendNames();
std::vector<std::string> clockNames();
std::vector<std::string> launchNames();
std::vector<std::string> prefetchNames();
std::vector<std::string> breakOpNames();
std::vector<std::string> attentionNames();
std::vector<std::string> checkpointingNames();
std::vector<std::string> wrapNames();
std::vector<std::string> commDTypeNames();
std::vector<std::string> pipelineScheduleNames();

// zero3, fsdp and hsdp: parameters, gradients and optimizer state sharded in FSDP units.
bool isSharded(Strategy s);
// ddp, zero1 and zero2 reduce gradients in buckets (sharded strategies per unit).
bool usesBuckets(Strategy s);
// hsdp: shard within a group of G ranks, replicate across groups.
bool isHybrid(Strategy s);
// ZeRO stage of the model state: 0 (ddp), 1, 2, or 3 (zero3, fsdp, hsdp).
int zeroStage(Strategy s);
// ddp reduces gradients with all-reduce; every other strategy reduce-scatters them.
bool reducesByAllReduce(Strategy s);

bool isGpuBackend(Backend b);

}  // namespace shardscope
