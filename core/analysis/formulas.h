// The formulas every measured figure is shown beside, in one place and taking
// the run's RunConfig, so tensor parallelism, the communication dtypes,
// resharding and the shard group are applied once: the CLI summary, the
// memory, communication and compare views, the Runs table, the capacity page,
// the experiment form and figure legends all call these and nothing else.
//  - model state (ZeRO paper, mixed precision + Adam: 2 + 2 + 4 + 4 + 4 bytes
//    per parameter): ddp 16, zero1 4 + 12/P, zero2 2 + 14/P, zero3/fsdp 16/P,
//    hsdp 16/G; under --tp T the strategy runs on the P/T data-parallel ranks
//    and each holds one TP slice.
//  - traffic per rank per step in the reference texts' notation, N = the
//    model's (one TP slice's) gradient bytes in bf16: 2N·(P−1)/P for ddp,
//    zero1, zero2; 3N·(P−1)/P for zero3/fsdp (2N without resharding); a
//    reduce or gather in fp32 moves twice its bytes.
//  - tensor parallelism (Megatron-LM): the activation all-reduces per layer.
//  - activations (Korthikanti et al. 2022) per layer.
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.h"
#include "rank/comm_bytes.h"

namespace shardscope {

// A config for a run described by less than a RunConfig (the capacity page's
// stages, a trace that names only its strategy): `strategy` on `ranks`
// data-parallel ranks, hsdp's shard group `shard_group` (0: all ranks), the
// defaults for the rest.
RunConfig formulaConfig(Strategy strategy, int ranks, int shard_group = 0);

// Whose formulas a run's predictions are, for every label that names them:
// "ZeRO paper" where they are the paper's own (ddp, zero1, zero2, zero3/fsdp
// on P data-parallel ranks, bf16 communication, resharding after forward),
// else "ZeRO paper, adapted to " what departs from it ("hybrid sharding",
// "tensor parallelism", "pipeline stages", "fp32 reduce", "fp32 gathers",
// "no resharding", "microbatches"), joined by ", ".
std::string formulaSource(const RunConfig& c);

// --- model state -----------------------------------------------------------

// Parameters of the whole model and of one TP rank's slice (the whole ones —
// norms, row-parallel biases — included), as the run builds them.
int64_t modelParams(const RunConfig& c);
int64_t sliceParams(const RunConfig& c);

// Model-state bytes per parameter of the whole model on one rank:
// the strategy's figure on the data-parallel ranks, divided by T (zero3 under
// --tp 2 on 8 ranks: 16/(2·4) = 2). Pipeline stages: rank 0's, the strategy's
// figure × stage 0's share of the parameters.
double expectedBytesPerParam(const RunConfig& c);
// The same as text: "16", "4 + 12/P", "2 + 14/P", "16/P", "16/G", and under
// tensor parallelism "(16/P)/T" (P: data-parallel ranks).
std::string modelStateFormulaText(const RunConfig& c);
// Model-state bytes one rank holds: the strategy's bytes per parameter on the
// data-parallel ranks × the parameters of its TP slice (the whole model
// without --tp). `params` < 0: the config's model (with pipeline stages,
// stage 0's part of it: rank 0's).
double expectedModelStateBytes(const RunConfig& c, int64_t params = -1);
// Bytes per parameter of the slice a rank holds (16, 4 + 12/P, …), before TP.
double strategyBytesPerParam(const RunConfig& c);
// Pipeline stages: the parameters stage s holds (of one TP rank's slice); the
// slice's parameters without pipeline stages.
int64_t stageParams(const RunConfig& c, int stage);
// The same in whole bytes with every shard rounded up (ceil(N/P) elements per
// shard), as a planner sizes it: the capacity page's figure.
int64_t expectedModelStateBytesRoundedUp(const RunConfig& c, int64_t params);

// --- traffic ---------------------------------------------------------------

struct ExpectedTraffic {
  // Bytes one rank sends per step on the data-parallel axis, by collective.
  CommBytes data_parallel;
  double n_bytes = 0;          // N: one TP slice's parameters × 2 bytes (bf16 gradients)
  int ring_ranks = 1;          // P of (P−1)/P: the data-parallel ranks, for every strategy
  // k in kN·(P−1)/P: 2 ddp/zero1/zero2, 3 zero3; hsdp's sum in the same unit
  // (G = 4, R = 2: 2.857), so every strategy's k compares as its bytes do.
  double coefficient = 0;
  std::string notation;        // "2N·(P−1)/P", "3N·(P−1)/P", hsdp's sum
  // Tensor parallelism: one rank's activation all-reduce bytes per layer,
  // forward (backward sends as much); 0 without --tp.
  int64_t tp_per_layer = 0;
  // What a layer's forward ops send: tp_per_layer, twice under full
  // activation checkpointing (backward's recompute runs the forward again,
  // all-reduces included, as Megatron-LM's full recompute does).
  int64_t tp_forward_per_layer = 0;
  // What a layer's backward sends: tp_per_layer; with sequence parallelism
  // 1.5 × (the norms' outputs gathered again).
  int64_t tp_backward_per_layer = 0;
  int tp_all_reduces_per_layer = 0;  // row-parallel layers per block: 2 (gpt), 1 (mlp)
  std::string tp_notation;           // "2 × 2(T−1)/T × B·S·D × 2 B"
  // Bytes one rank sends per step in its TP group, by collective: every
  // block's forward and backward activation sums (the per-layer figures × L)
  // and the vocab-parallel embedding's and head's one B·S·D sum each (under
  // sequence parallelism their reduce-scatters and gathers), and the
  // vocab-parallel loss's statistics (fp32, per token). Left out: the CPU
  // model's norm-gradient sums under sequence parallelism (a few floats per
  // parameter). Zero without --tp and with --pp (a stage's share differs).
  CommBytes tensor_parallel;
  std::string tp_step_notation;      // "130 × 2(T−1)/T × B·S·D × 2 B (4 per layer × 32 layers, embedding, head)"
  int64_t tensorParallelTotal() const {
    return tensor_parallel.all_reduce + tensor_parallel.reduce_scatter + tensor_parallel.all_gather;
  }

  int64_t dataParallelTotal() const {
    return data_parallel.all_reduce + data_parallel.reduce_scatter + data_parallel.all_gather;
  }
  // The measured bytes in units of N·(P−1)/P: 2 reads "2N", 3 reads "3N".
  double inUnitsOfN(double bytes) const;
  // "3N·(P−1)/P = 2.250 N at P = 4 (20.00 MiB)": the formula and its value here.
  std::string valueText() const;
};
// `params` < 0: the config's model (one TP slice under --tp; stage 0's part with --pp).
ExpectedTraffic expectedTraffic(const RunConfig& c, int64_t params = -1);

// --- FSDP's gathered parameters ----------------------------------------------

// The peak of a rank's gathered (unsharded) parameters under zero3/fsdp/hsdp:
// the root unit (input and head, used at both ends, kept gathered through the
// step) plus the unit computing plus, with any prefetch, the next unit already
// gathering — the largest units, at most every unit. Without resharding after
// forward every unit stays gathered from its forward to its backward: the
// whole model. Bytes in the gather dtype (bf16, or fp32 with --param-dtype
// fp32). Beside it each rank keeps its N/P shard (param category).
struct GatheredPeak {
  int64_t bytes = 0;        // 0: not a sharded strategy
  int64_t root_bytes = 0;
  int64_t unit_bytes = 0;   // the largest block unit
  int units_held = 0;       // block units gathered at once (1 computing + prefetched)
  bool whole_model = false; // every unit at once (no resharding, or units that many)
  std::string text;         // "root 0.02 MiB + 2 units × 0.06 MiB (one computing, one prefetched) = 0.14 MiB"
};
GatheredPeak expectedGatheredPeak(const RunConfig& c);

// --- activations -----------------------------------------------------------

// The runs whose blocks see sequences of tokens (gpt, published shapes).
bool hasTokenBlocks(const RunConfig& c);
// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models": s·b·h·(34 + 5·a·s/h) per layer for their GPT block,
// adapted term by term to the block built here (docs: "Activation memory"):
// dropout only where the shape has it (GPT-3's), grouped-query K/V, a gated MLP's third inner tensor, fp32 norm
// statistics, flash attention's row statistics instead of the softmax; 2·s·b·h
// under full checkpointing; TP splits the heads' and the MLP's tensors.
double expectedActivationBytesPerLayer(const RunConfig& c);
// The activation one microbatch sends across a stage boundary (and its
// gradient back): the residual stream in bf16, 2·s·b·h, 1/t of it with
// sequence parallelism (Megatron-LM sends the TP rank's part of the sequence).
double expectedStageBoundaryBytes(const RunConfig& c);
// What a pipeline's end stages keep per microbatch besides their blocks, in
// the run's dtypes: the first stage the token ids (4 bytes each, as the run
// books its inputs) and the embedding's output (expectedStageBoundaryBytes);
// the last stage the targets (4 bytes each), the final
// norm's output 2·s·b·h and fp32 statistics 8·s·b, and the logits in fp32
// over its vocabulary slice, 4·s·b·⌈V/t⌉. Without pipeline stages one rank holds both.
double expectedEmbeddingActivationBytes(const RunConfig& c);
// Of those, the token ids (or the targets) alone: 4·s·b, booked from the
// microbatch's first forward on the stage to its last backward there.
double expectedTokenIdBytes(const RunConfig& c);
double expectedHeadActivationBytes(const RunConfig& c);
// What backward adds for the one block it is working on, freed with it: a
// checkpointed block's recompute rebuilds the activations the per-layer
// figure leaves out (the formula without checkpointing less the one with).
// 0 without checkpointing.
double expectedRecomputeBytesPerLayer(const RunConfig& c);

// --- published FLOP counts ---------------------------------------------------

// Model FLOPs of one iteration as Narayanan et al. 2021 (arXiv 2104.04473,
// eq. 3) count them: 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) with full
// recompute, 72·… without. B global batch, s sequence, l layers, h hidden, V vocabulary.
double megatronIterationFlops(const ModelShape& m, int global_batch, bool full_recompute);
// 6·N per token plus attention's 12·l·h·s (Chowdhery et al. 2022, PaLM, appendix B):
// 6·N·B·s + 12·l·h·s·B·s. N: every parameter.
double sixNIterationFlops(const ModelShape& m, int64_t params, int global_batch);

}  // namespace shardscope
