// The shape of the model a run trains: the CPU models' knobs, or a published
// transformer's table (config/model_presets.h) for the meta backend.
#pragma once

#include <string>

#include "config/kinds.h"

namespace shardscope {

struct ModelShape {
  ModelKind kind = ModelKind::Mlp;
  int layers = 8;     // residual blocks
  int hidden = 512;   // D; the block's inner width is 4D
  int io_dim = 64;    // mlp: input features and regression targets
  int heads = 4;      // gpt: attention heads (head dim D / heads)
  int seq = 64;       // gpt: tokens per sample (T)
  int vocab = 256;    // gpt: vocabulary (byte-level tokens need >= 256)
  // A published transformer (config/model_presets.h) for the meta backend: its
  // parameter table follows the preset's architecture (GQA, SwiGLU, tied
  // embeddings, biases or not) instead of the CPU GPT block's.
  std::string preset;
  int ffn = 0;        // preset: MLP inner width
  int kv_heads = 0;   // preset: key/value heads
  bool learned_positions = false, tied_embeddings = false, gated_mlp = false, biases = true;
  // preset: dropout after attention's softmax and after each residual branch
  // (GPT-2/3, Megatron-LM): its 1-byte masks are kept for backward.
  bool dropout = false;
  // gpt and published shapes: what each block keeps for backward (the MLP ignores both).
  Attention attention = Attention::Flash;
  Checkpointing checkpointing = Checkpointing::None;
  // Sequence parallelism (Korthikanti et al. 2022), with tensor parallelism:
  // the TP all-reduces become reduce-scatters and all-gathers, and the norms',
  // residual and stage-boundary activations are split over the sequence (1/T).
  bool sequence_parallel = false;
};

struct ModelPreset;

// The shape of a published model preset (throws ConfigError for unknown names).
ModelShape presetShape(const std::string& name);
// The shape of any published transformer's table, named or not (validate's
// rows describe theirs in the table); p.name labels it in traces and summaries.
ModelShape transformerShape(const ModelPreset& p);

}  // namespace shardscope
