// A model's parameter table: names, shapes and where each tensor sits in the
// flat parameter vector (registration order). Segments are the input (mlp:
// projection; gpt: token + position embeddings), blocks 0..L-1, and the head
// (mlp: projection; gpt: final LN + LM head); backward visits them in reverse,
// so gradients become ready in reverse registration order.
//   gpt block: ln1.{weight,bias}, attn.qkv.{weight (3D,D), bias}, attn.proj.{weight (D,D), bias},
//              ln2.{weight,bias}, fc1.{weight (4D,D), bias}, fc2.{weight (D,4D), bias}
#pragma once

#include <cstdint>
#include <utility>
#include <string>
#include <vector>

#include "config/model_shape.h"

namespace shardscope {

// How tensor parallelism splits a parameter over the T ranks of its group
// (Megatron-LM). Rows: dim 0 (a column-parallel weight's output features, a
// vocab-parallel embedding's or LM head's vocabulary rows); Cols: dim 1 (a
// row-parallel weight's input features, a column-parallel layer's bias);
// Rows3/Cols3: the fused q | k | v, each third split alike. None: every TP rank
// holds it whole (norms, row-parallel biases, position embeddings).
enum class TpSplit : uint8_t { None, Rows, Cols, Rows3, Cols3 };

struct ParamInfo {
  std::string name;    // e.g. "block3.fc2.weight"
  int rows = 1;        // weight: (out, in); vectors: (1, n)
  int cols = 1;
  int64_t offset = 0;  // elements into the flat parameter vector
  int segment = 0;     // 0 = input, 1..L = block0..L-1, L+1 = head
  TpSplit split = TpSplit::None;  // rows/cols above are this TP rank's slice
  int64_t numel() const { return static_cast<int64_t>(rows) * cols; }
};

class ModelSpec {
 public:
  // tp > 1: the parameter table of one tensor-parallel rank's slice (same
  // names and order, split shapes; every TP rank's slice has the same shapes).
  explicit ModelSpec(const ModelShape& shape, int tp = 1);

  const ModelShape& shape() const { return m_shape; }
  int tp() const { return m_tp; }
  const std::vector<ParamInfo>& params() const { return m_params; }
  int64_t numParams() const { return m_numParams; }
  int segmentCount() const { return m_shape.layers + 2; }
  std::string segmentName(int segment) const;  // "input", "block3", "head"
  // Index range [first, last) of the params of one segment.
  std::pair<int, int> segmentParams(int segment) const;
  int64_t segmentOffset(int segment) const;    // flat offset of its first parameter
  int64_t segmentElements(int segment) const;  // parameters in the segment
  int paramIndex(const std::string& name) const;  // -1 if unknown

 private:
  void add(const std::string& name, int rows, int cols, int segment, TpSplit split = TpSplit::None);
  void addPresetTransformer();

  ModelShape m_shape;
  int m_tp = 1;
  std::vector<ParamInfo> m_params;
  std::vector<std::pair<int, int>> m_segmentRanges;
  int64_t m_numParams = 0;
};

}  // namespace shardscope
