#include "config/model_shape.h"

#include "config/model_presets.h"

namespace shardscope {

ModelShape presetShape(const std::string& name) { return transformerShape(findModelPreset(name)); }

ModelShape transformerShape(const ModelPreset& p) {
  ModelShape s;
  s.kind = ModelKind::Gpt;
  s.preset = p.name;
  s.layers = p.layers;
  s.hidden = p.hidden;
  s.heads = p.heads;
  s.seq = p.seq;
  s.vocab = p.vocab;
  s.ffn = p.ffn;
  s.kv_heads = p.kv_heads;
  s.learned_positions = p.learned_positions;
  s.tied_embeddings = p.tied_embeddings;
  s.gated_mlp = p.gated_mlp;
  s.biases = p.biases;
  return s;
}

}  // namespace shardscope
