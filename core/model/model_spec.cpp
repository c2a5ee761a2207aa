#include "model/model_spec.h"

#include "config/model_presets.h"

namespace shardscope {

ModelSpec::ModelSpec(const ModelShape& shape, int tp) : m_shape(shape), m_tp(tp > 1 ? tp : 1) {
  using enum TpSplit;
  const int D = shape.hidden, F = 4 * shape.hidden;
  m_segmentRanges.resize(segmentCount());
  if (!shape.preset.empty()) {
    addPresetTransformer();
    return;
  }
  if (shape.kind == ModelKind::Gpt) {
    add("wte.weight", shape.vocab, D, 0, Rows);
    add("wpe.weight", shape.seq, D, 0);
    for (int b = 0; b < shape.layers; ++b) {
      const std::string p = "block" + std::to_string(b) + ".";
      add(p + "ln1.weight", 1, D, b + 1);
      add(p + "ln1.bias", 1, D, b + 1);
      add(p + "attn.qkv.weight", 3 * D, D, b + 1, Rows3);
      add(p + "attn.qkv.bias", 1, 3 * D, b + 1, Cols3);
      add(p + "attn.proj.weight", D, D, b + 1, Cols);
      add(p + "attn.proj.bias", 1, D, b + 1);
      add(p + "ln2.weight", 1, D, b + 1);
      add(p + "ln2.bias", 1, D, b + 1);
      add(p + "fc1.weight", F, D, b + 1, Rows);
      add(p + "fc1.bias", 1, F, b + 1, Cols);
      add(p + "fc2.weight", D, F, b + 1, Cols);
      add(p + "fc2.bias", 1, D, b + 1);
    }
    add("lnf.weight", 1, D, shape.layers + 1);
    add("lnf.bias", 1, D, shape.layers + 1);
    add("lm_head.weight", shape.vocab, D, shape.layers + 1, Rows);
    return;
  }
  add("input.weight", D, shape.io_dim, 0);
  add("input.bias", 1, D, 0);
  for (int b = 0; b < shape.layers; ++b) {
    const std::string p = "block" + std::to_string(b) + ".";
    add(p + "ln.weight", 1, D, b + 1);
    add(p + "ln.bias", 1, D, b + 1);
    add(p + "fc1.weight", F, D, b + 1, Rows);
    add(p + "fc1.bias", 1, F, b + 1, Cols);
    add(p + "fc2.weight", D, F, b + 1, Cols);
    add(p + "fc2.bias", 1, D, b + 1);
  }
  add("head.weight", shape.io_dim, D, shape.layers + 1);
  add("head.bias", 1, shape.io_dim, shape.layers + 1);
}

void ModelSpec::addPresetTransformer() {
  const ModelShape& m = m_shape;
  const int D = m.hidden, F = m.ffn, KV = m.kv_heads * (m.hidden / m.heads), L = m.layers;
  // column: split by output features (its bias too); row: by input features
  // (its bias is added after the all-reduce, whole on every TP rank).
  enum Parallel { Column, Row };
  auto linear = [&](const std::string& name, int out, int in, int seg, Parallel par) {
    add(name + ".weight", out, in, seg, par == Column ? TpSplit::Rows : TpSplit::Cols);
    if (m.biases) add(name + ".bias", 1, out, seg, par == Column ? TpSplit::Cols : TpSplit::None);
  };
  auto norm = [&](const std::string& name, int seg) {
    add(name + ".weight", 1, D, seg);
    if (m.biases) add(name + ".bias", 1, D, seg);
  };
  add("wte.weight", m.vocab, D, 0, TpSplit::Rows);
  if (m.learned_positions) add("wpe.weight", m.seq, D, 0);
  for (int b = 0; b < L; ++b) {
    const std::string p = "block" + std::to_string(b) + ".";
    norm(p + "attn_norm", b + 1);
    linear(p + "attn.q", D, D, b + 1, Column);
    linear(p + "attn.k", KV, D, b + 1, Column);
    linear(p + "attn.v", KV, D, b + 1, Column);
    linear(p + "attn.o", D, D, b + 1, Row);
    norm(p + "mlp_norm", b + 1);
    if (m.gated_mlp) {
      linear(p + "mlp.gate", F, D, b + 1, Column);
      linear(p + "mlp.up", F, D, b + 1, Column);
      linear(p + "mlp.down", D, F, b + 1, Row);
    } else {
      linear(p + "mlp.fc1", F, D, b + 1, Column);
      linear(p + "mlp.fc2", D, F, b + 1, Row);
    }
  }
  norm("final_norm", L + 1);
  if (!m.tied_embeddings) add("lm_head.weight", m.vocab, D, L + 1, TpSplit::Rows);
}

void ModelSpec::add(const std::string& name, int rows, int cols, int segment, TpSplit split) {
  // One TP rank's slice; a dimension T does not divide (a published shape's
  // vocabulary) is padded up, as Megatron-LM pads its vocabulary.
  const auto part = [this](int n) { return (n + m_tp - 1) / m_tp; };
  if (m_tp > 1) {
    if (split == TpSplit::Rows || split == TpSplit::Rows3) rows = part(rows);
    if (split == TpSplit::Cols || split == TpSplit::Cols3) cols = part(cols);
  }
  ParamInfo p{name, rows, cols, m_numParams, segment, split};
  auto& range = m_segmentRanges[segment];
  if (range.first == range.second) range.first = static_cast<int>(m_params.size());
  range.second = static_cast<int>(m_params.size()) + 1;
  m_numParams += p.numel();
  m_params.push_back(std::move(p));
}

std::string ModelSpec::segmentName(int segment) const {
  if (segment == 0) return m_shape.kind == ModelKind::Gpt ? "embed" : "input";
  if (segment == m_shape.layers + 1) return "head";
  return "block" + std::to_string(segment - 1);
}

std::pair<int, int> ModelSpec::segmentParams(int segment) const {
  return m_segmentRanges.at(segment);
}

int64_t ModelSpec::segmentOffset(int segment) const {
  return m_params[m_segmentRanges.at(segment).first].offset;
}

int64_t ModelSpec::segmentElements(int segment) const {
  const ParamInfo& end = m_params[m_segmentRanges.at(segment).second - 1];
  return end.offset + end.numel() - segmentOffset(segment);
}

int ModelSpec::paramIndex(const std::string& name) const {
  for (size_t i = 0; i < m_params.size(); ++i)
    if (m_params[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace shardscope
