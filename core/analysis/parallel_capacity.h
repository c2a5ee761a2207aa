// The capacity plan of a tensor- and pipeline-parallel run, per pipeline
// stage: model-state bytes (the stage's parameters of one TP slice, sharded
// over the data-parallel ranks as the strategy does) and the activations its
// schedule keeps in flight (the per-layer formula × the blocks of each model
// chunk in flight, the embedding and the head on the stages that hold them),
// and the search for the smallest TP × PP that fits a GPU's memory. The stage
// split and the pass order are the run's own (parallel/pipeline_stages.h,
// pipeline_schedule.h), every byte count a formula of analysis/formulas.h, so a
// meta run of the same config books the same bytes per stage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace shardscope {

struct StagePlan {
  int stage = 0;
  int rank = 0;                   // the rank the run measures it on (pipelineStageRank)
  std::string holds;              // "the embedding, blocks 0–6"
  int blocks = 0;                 // transformer blocks on the stage (all its chunks)
  int64_t params = 0;             // of one TP slice
  int64_t model_state_bytes = 0;  // the strategy's bytes/param over D ranks × params, shards rounded up
  int in_flight = 0;              // microbatch-chunks held at the peak (the schedule's count)
  int64_t activation_bytes = 0;   // the peak of the activations held, recompute's block included
  // The largest transient of one segment's backward: its unsharded bf16
  // gradients (zero3/fsdp: and its gathered bf16 parameters).
  int64_t buffer_bytes = 0;
  // Model states + the peak over the schedule of activations and buffers
  // together (a stage's largest buffer need not meet its activation peak:
  // the last stage frees the head's logits before its blocks' backward). An
  // upper bound: a run frees a block's activations before it books its
  // gradients in some orders (by at most that block's activations and the
  // received gradient, 2·s·b·h/sp, over the meta ledger in the tests).
  int64_t peak_bytes = 0;
  int64_t peakBytes() const { return peak_bytes; }
};

struct ParallelPlan {
  RunConfig config;
  double capacity_bytes = 0;       // per GPU
  double per_layer_bytes = 0;      // expectedActivationBytesPerLayer (one microbatch)
  double embedding_bytes = 0;      // expectedEmbeddingActivationBytes (one microbatch, first stage)
  double head_bytes = 0;           // expectedHeadActivationBytes (one microbatch, last stage)
  double recompute_bytes = 0;      // expectedRecomputeBytesPerLayer
  double bubble = 0;               // the formula's (S − 1)/(V·M + S − 1); 0 without stages
  std::vector<StagePlan> stages;   // S of them (one without --pp)
  int most_loaded = 0;             // the stage with the highest peak (the first of equals)
  const StagePlan& mostLoaded() const { return stages.at(static_cast<size_t>(most_loaded)); }
  bool fits() const { return double(mostLoaded().peakBytes()) <= capacity_bytes; }
};

// `config`: a validated config of a token model (a published shape or
// --model gpt), any backend. Throws ConfigError for the residual MLP.
ParallelPlan planParallelCapacity(const RunConfig& config, double capacity_bytes);

// One (T, S) the search tried.
struct FitCandidate {
  int tp = 1;
  int pp = 1;
  std::string refused;             // the settings' message when the config is not valid; "" otherwise
  std::optional<ParallelPlan> plan;
  bool fits() const { return plan && plan->fits(); }
};

struct FitSearch {
  // In search order: T·S ascending, ties by T ascending (a smaller TP group
  // first: it sends less per layer), up to every candidate with the chosen
  // product (or all of them when none fits).
  std::vector<FitCandidate> tried;
  int chosen = -1;                 // index into tried; -1: none fits
  std::vector<int> tp_choices;     // the T tried: 1, 2, 4, 8 (those dividing the world)
};

// The smallest T × S that fits: T in 1, 2, 4, 8 (one node's GPUs), S with
// T·S dividing base.ranks and S·V at most the layers. Each candidate is base
// with tp = T, pp = S, `microbatches` (none: M = S, the fewest that keep every
// stage busy) and the global batch micro_batch × D × M; invalid ones are kept
// with the settings' reason.
FitSearch searchSmallestTpPp(const RunConfig& base, double capacity_bytes, int micro_batch,
                             std::optional<int> microbatches);

// base with T, S, M and the global batch micro_batch × D × M; validated (throws ConfigError).
RunConfig parallelCandidate(const RunConfig& base, int tp, int pp, int microbatches, int micro_batch);

}  // namespace shardscope
