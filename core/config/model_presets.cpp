#include "config/model_presets.h"

#include "common/errors.h"

namespace shardscope {

int64_t ModelPreset::params() const {
  const int64_t d = hidden, f = ffn, v = vocab;
  const int64_t kv = d / heads * kv_heads;  // width of K and V: kv_heads x head_dim
  const int64_t norm = biases ? 2 * d : d;  // LayerNorm (gain + bias) or RMSNorm (gain)

  const int64_t attention = d * d + 2 * d * kv + d * d  // q, k, v, o
                            + (biases ? d + 2 * kv + d : 0);
  const int64_t mlp = (gated_mlp ? 3 : 2) * d * f + (biases ? (gated_mlp ? 2 * f : f) + d : 0);
  const int64_t block = attention + mlp + 2 * norm;

  const int64_t embeddings = v * d + (learned_positions ? static_cast<int64_t>(seq) * d : 0);
  const int64_t head = tied_embeddings ? 0 : v * d;
  return embeddings + layers * block + norm + head;  // `norm`: the final norm before the head
}

const std::vector<ModelPreset>& modelPresets() {
  static const std::vector<ModelPreset> presets = [] {
    std::vector<ModelPreset> p(4);
    // Radford et al. 2019; 124,439,808 as counted by HF GPT2LMHeadModel.
    p[0] = {"gpt2-124m", "GPT-2 small: LayerNorm, GELU MLP, learned positions, tied embeddings",
            12, 768, 3072, 12, 12, 50257, 1024, true, true, false, true};
    // Touvron et al. 2023 (Llama 2), HF config: 6,738,415,616.
    p[1] = {"llama2-7b", "Llama 2 7B: RMSNorm, SwiGLU MLP, RoPE, untied head",
            32, 4096, 11008, 32, 32, 32000, 4096, false, false, true, false};
    // Llama 2 70B, grouped-query attention with 8 KV heads: 68,976,648,192.
    p[2] = {"llama2-70b", "Llama 2 70B: as 7B, with grouped-query attention (8 KV heads)",
            80, 8192, 28672, 64, 8, 32000, 4096, false, false, true, false};
    // Llama 3 405B (Dubey et al. 2024, Table 3; HF config): 126 layers, hidden
    // 16384, FFN 53248, 128 heads with 8 KV heads, vocabulary 128256, trained
    // at sequence 8192: 405,853,388,800 parameters.
    p[3] = {"llama3-405b", "Llama 3 405B: as Llama 2 70B (GQA, 8 KV heads), 128K vocabulary, sequence 8192",
            126, 16384, 53248, 128, 8, 128256, 8192, false, false, true, false};
    return p;
  }();
  return presets;
}

const ModelPreset& findModelPreset(const std::string& name) {
  std::string known;
  for (const ModelPreset& p : modelPresets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw ConfigError("--model must be one of " + known + "; got '" + name + "' (or give --params N instead)");
}

}  // namespace shardscope
