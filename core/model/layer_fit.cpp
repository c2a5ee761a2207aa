#include "model/layer_fit.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/errors.h"

#include "model/model_spec.h"

namespace shardscope {

namespace {

bool hasHeads(const ModelShape& m) { return m.kind == ModelKind::Gpt || !m.preset.empty(); }

int64_t blockBytes(const ModelShape& shape, int tp) { return 4 * ModelSpec(shape, tp).segmentElements(1); }

}  // namespace

bool tensorParallelSplits(const ModelShape& m, int t) {
  const int ffn = m.ffn > 0 ? m.ffn : 4 * m.hidden;
  if (t < 1 || ffn % t != 0) return false;
  if (!hasHeads(m)) return true;
  if (m.heads % t != 0 || (m.kv_heads > 0 && m.kv_heads % t != 0)) return false;
  return !m.preset.empty() || m.vocab % t == 0;
}

LayerFit singleLayerFit(const ModelShape& shape, int tp, double capacity_bytes) {
  LayerFit f;
  if (shape.layers < 1) return f;
  f.block_params = ModelSpec(shape, tp).segmentElements(1);
  f.bytes = 4 * f.block_params;
  const int ffn = shape.ffn > 0 ? shape.ffn : 4 * shape.hidden;
  f.max_tp = hasHeads(shape) ? (shape.kv_heads > 0 ? shape.kv_heads : shape.heads) : std::min(ffn, 1024);
  f.fits = static_cast<double>(f.bytes) <= capacity_bytes;
  if (f.fits) return f;
  for (int t = tp + 1; t <= f.max_tp; ++t)
    if (tensorParallelSplits(shape, t) && static_cast<double>(blockBytes(shape, t)) <= capacity_bytes) {
      f.smallest_tp = t;
      break;
    }
  return f;
}

void requireLayerFitsDevice(const RunConfig& c, const HardwareProfile& profile) {
  const double capacity = profile.device.mem_capacity;
  if (!(capacity > 0)) return;
  const LayerFit f = singleLayerFit(c.model, c.tp, capacity);
  if (f.fits) return;
  const auto gb = [](double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GB", bytes * 1e-9);
    return std::string(text);
  };
  std::string what = "a single layer does not fit one device of profile '" + profile.name + "' (" + gb(capacity) +
                     "): one block's gathered bf16 params and unsharded bf16 grads are " +
                     gb(static_cast<double>(f.bytes)) + (c.tp > 1 ? " at --tp " + std::to_string(c.tp) : "") +
                     ", at any --ranks; data parallelism cannot split a layer, tensor parallelism does: ";
  if (f.smallest_tp > 0)
    what += "--tp " + std::to_string(f.smallest_tp) + " is the smallest that fits (T divides --ranks)";
  else
    what += "no --tp up to " + std::to_string(f.max_tp) + " makes one fit (fewer --hidden, or a larger device)";
  throw ConfigError(what);
}

}  // namespace shardscope
