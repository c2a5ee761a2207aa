// Published transformer shapes for the capacity calculator. params() counts
// every weight from the architecture (not a hard-coded total), so the unit
// tests comparing it with the published counts check the formula itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope {

struct ModelPreset {
  std::string name;         // "llama2-7b"
  std::string description;  // one line: family and what sets its count
  int layers = 0;
  int hidden = 0;   // d_model
  int ffn = 0;      // MLP inner width
  int heads = 0;    // query heads; head_dim = hidden / heads
  int kv_heads = 0; // key/value heads (< heads under grouped-query attention)
  int vocab = 0;
  int seq = 0;      // context length
  bool learned_positions = false;  // GPT-2: a (seq, hidden) position table; Llama: RoPE, no weights
  bool tied_embeddings = false;    // the LM head reuses the token embedding
  bool gated_mlp = false;          // SwiGLU: gate, up, down (3 matrices) instead of 2
  bool biases = false;             // GPT-2: every linear has a bias and LayerNorm has beta; Llama: none

  int64_t params() const;
};

const std::vector<ModelPreset>& modelPresets();
// Throws ConfigError naming the known presets.
const ModelPreset& findModelPreset(const std::string& name);

}  // namespace shardscope
