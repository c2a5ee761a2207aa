#include "analysis/formulas.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "common/checked_math.h"
#include "common/collective.h"
#include "common/units.h"
#include "model/model_spec.h"
#include "parallel/fsdp_units.h"
#include "parallel/pipeline_stages.h"

namespace shardscope {

namespace {

// The ZeRO paper's split of the 16 bytes: replicated bytes per parameter, and
// the bytes sharded over `shard_ranks` (bf16 param 2, bf16 grad 2, fp32 master
// 4, Adam m 4, Adam v 4).
struct StateSplit {
  int replicated = 16;
  int sharded = 0;
  int shard_ranks = 1;
};

StateSplit stateSplit(const RunConfig& c) {
  const int p = c.dataParallelSize();
  // --grad-dtype fp32 (Megatron-LM's main_grad): the gradient takes 4 bytes, not 2.
  const int grad = c.fp32Grads() ? 4 : 2;
  switch (c.strategy) {
    case Strategy::Ddp: return {14 + grad, 0, 1};
    case Strategy::Zero1: return {2 + grad, 12, p};
    case Strategy::Zero2: return {2, 14, p};
    case Strategy::Zero3:
    case Strategy::Fsdp: return {0, 16, p};
    case Strategy::Hsdp: return {0, 16, c.shardGroupSize()};
  }
  return {};
}

}  // namespace

double strategyBytesPerParam(const RunConfig& c) {
  const StateSplit s = stateSplit(c);
  return s.replicated + static_cast<double>(s.sharded) / (s.shard_ranks > 0 ? s.shard_ranks : 1);
}

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

std::string formulaSource(const RunConfig& c) {
  std::string departs;
  const auto add = [&departs](const char* what) { departs += (departs.empty() ? "" : ", ") + std::string(what); };
  if (isHybrid(c.strategy)) add("hybrid sharding");
  if (c.tp > 1) add("tensor parallelism");
  if (c.pp > 1) add("pipeline stages");
  else if (c.pipelined()) add("microbatches");
  if (c.isSharded() && c.reduceDType() == CommDType::Fp32) add("fp32 reduce");
  if (c.isSharded() && c.paramDType() == CommDType::Fp32) add("fp32 gathers");
  if (c.isSharded() && !c.reshardAfterForward()) add("no resharding");
  if (!c.isSharded() && c.fp32Grads()) add("fp32 gradients");
  return departs.empty() ? "ZeRO paper" : "ZeRO paper, adapted to " + departs;
}

RunConfig formulaConfig(Strategy strategy, int ranks, int shard_group) {
  RunConfig c;
  c.strategy = strategy;
  c.ranks = ranks;
  c.tp = 1;
  if (isHybrid(strategy) && shard_group > 0) c.shard_group = shard_group;
  return c;
}

int64_t modelParams(const RunConfig& c) { return ModelSpec(c.model).numParams(); }

int64_t sliceParams(const RunConfig& c) { return c.tp > 1 ? ModelSpec(c.model, c.tp).numParams() : modelParams(c); }

double expectedBytesPerParam(const RunConfig& c) {
  // Pipeline stages: rank 0's, stage 0's share of the parameters.
  if (c.pp > 1) return strategyBytesPerParam(c) * double(stageParams(c, 0)) / double(modelParams(c));
  return strategyBytesPerParam(c) / (c.tp > 1 ? c.tp : 1);
}

std::string modelStateFormulaText(const RunConfig& c) {
  std::string f;
  switch (c.strategy) {
    case Strategy::Ddp: f = c.fp32Grads() ? "18" : "16"; break;
    case Strategy::Zero1: f = c.fp32Grads() ? "6 + 12/P" : "4 + 12/P"; break;
    case Strategy::Zero2: f = "2 + 14/P"; break;
    case Strategy::Zero3:
    case Strategy::Fsdp: f = "16/P"; break;
    case Strategy::Hsdp: f = "16/G"; break;
  }
  if (c.tp > 1) f = "(" + f + ")/T";
  if (c.pp > 1) f += " x the stage's share of the parameters";
  return f;
}

int64_t stageParams(const RunConfig& c, int stage) {
  if (c.pp <= 1) return sliceParams(c);
  const ModelSpec slice(c.model, c.tp);
  const PipelineStages stages = pipelineStagesFor(c, slice);
  int64_t n = 0;
  for (const PipelineChunk& chunk : stages.chunksOf(stage))
    for (int seg = chunk.first_segment; seg < chunk.last_segment; ++seg) n += slice.segmentElements(seg);
  return n;
}

double expectedModelStateBytes(const RunConfig& c, int64_t params) {
  if (params < 0) params = c.pp > 1 ? stageParams(c, 0) : sliceParams(c);
  return strategyBytesPerParam(c) * static_cast<double>(params);
}

int64_t expectedModelStateBytesRoundedUp(const RunConfig& c, int64_t params) {
  const StateSplit s = stateSplit(c);
  const int64_t shard = ceilDiv(params, static_cast<int64_t>(s.shard_ranks > 0 ? s.shard_ranks : 1));
  return s.replicated * params + s.sharded * shard;
}

ExpectedTraffic expectedTraffic(const RunConfig& c, int64_t params) {
  ExpectedTraffic t;
  if (params < 0) params = c.pp > 1 ? stageParams(c, 0) : sliceParams(c);
  t.n_bytes = 2.0 * static_cast<double>(params);
  const int p = c.dataParallelSize();
  const double n = t.n_bytes;
  // One reduce-scatter or all-gather of the whole gradient moves N·(P−1)/P per rank.
  const auto cast = [](double v) { return static_cast<int64_t>(v); };
  const bool sharded = c.isSharded();
  // FSDP MixedPrecision: fp32 moves 4 bytes per element where the formula counts bf16's 2.
  const double reduce_scale = sharded && c.reduceDType() == CommDType::Fp32 ? 2.0 : 1.0;
  const double gather_scale = sharded && c.paramDType() == CommDType::Fp32 ? 2.0 : 1.0;
  // --grad-dtype fp32: ddp's all-reduce and zero1's reduce-scatter move fp32.
  const double grad_scale = !sharded && c.fp32Grads() ? 2.0 : 1.0;
  const double gathers = c.reshardAfterForward() ? 2.0 : 1.0;
  if (isHybrid(c.strategy)) {
    const int g = c.shardGroupSize();
    const int replicas = g > 0 ? p / g : 1;
    // Under a pipeline (parallel/stage_state.h) every microbatch gathers each
    // block twice and reduces its gradients: M times a step's traffic.
    const double m = c.pipelined() ? c.microbatchCount() : 1.0;
    const double step_gathers = c.pipelined() ? 2.0 : gathers;
    t.data_parallel.all_gather = cast(m * gather_scale * step_gathers * ringBytesPerRank(Collective::AllGather, n, g));
    t.data_parallel.reduce_scatter = cast(m * reduce_scale * ringBytesPerRank(Collective::ReduceScatter, n, g));
    // The replicas all-reduce the reduced shard, N/G.
    t.data_parallel.all_reduce = cast(m * reduce_scale * ringBytesPerRank(Collective::AllReduce, n / g, replicas));
    t.notation = (step_gathers > 1 ? std::string("3N·(G−1)/G") : std::string("2N·(G−1)/G")) + " + 2(N/G)·(R−1)/R";
    if (c.pipelined()) t.notation = "M·(" + t.notation + "), M = " + std::to_string(c.microbatchCount());
    // The same unit as every other strategy, N·(P−1)/P over all P data-parallel
    // ranks, so a column of k compares hsdp with zero3 as their bytes compare
    // (G = 4, R = 2: 2.857 against zero3's 3 at P = 8, 0.95× the bytes).
    t.ring_ranks = p;
    const double unit = ringBytesPerRank(Collective::AllGather, n, p);
    t.coefficient = unit > 0 ? static_cast<double>(t.dataParallelTotal()) / unit : 0.0;
  } else {
    t.ring_ranks = p;
    if (reducesByAllReduce(c.strategy)) {
      t.data_parallel.all_reduce = cast(grad_scale * ringBytesPerRank(Collective::AllReduce, n, p));
    } else if (!sharded) {  // zero1, zero2: reduce-scatter the grads, all-gather the updated params
      // zero2 under a pipeline reduce-scatters every microbatch's gradients.
      const double m = c.strategy == Strategy::Zero2 && c.pipelined() ? c.microbatchCount() : 1.0;
      t.data_parallel.reduce_scatter = cast(m * grad_scale * ringBytesPerRank(Collective::ReduceScatter, n, p));
      t.data_parallel.all_gather = cast(ringBytesPerRank(Collective::AllGather, n, p));
    } else if (c.pipelined()) {
      // zero3/fsdp under a pipeline (parallel/stage_state.h): every microbatch
      // gathers each block for its forward and again for its backward and
      // reduce-scatters its gradients: M times a step's 3N.
      const double m = c.microbatchCount();
      t.data_parallel.reduce_scatter = cast(m * ringBytesPerRank(Collective::ReduceScatter, n, p));
      t.data_parallel.all_gather = cast(2.0 * m * ringBytesPerRank(Collective::AllGather, n, p));
    } else {  // zero3, fsdp: all-gather in forward (and again in backward), reduce-scatter the grads
      t.data_parallel.reduce_scatter = cast(reduce_scale * ringBytesPerRank(Collective::ReduceScatter, n, p));
      t.data_parallel.all_gather = cast(gather_scale * gathers * ringBytesPerRank(Collective::AllGather, n, p));
    }
    // In units of N·(P−1)/P: an all-reduce is two, each reduce-scatter or all-gather one.
    const bool zero2_micro = c.strategy == Strategy::Zero2 && c.pipelined();
    t.coefficient = zero2_micro ? c.microbatchCount() + 1.0
                    : !sharded  ? 2.0 * grad_scale - (reducesByAllReduce(c.strategy) ? 0.0 : grad_scale - 1.0)
                    : c.pipelined() ? 3.0 * c.microbatchCount() : reduce_scale + gather_scale * gathers;
    t.notation = sharded && c.pipelined() ? "3M·N·(P−1)/P, M = " + std::to_string(c.microbatchCount())
                 : zero2_micro            ? "(M + 1)N·(P−1)/P, M = " + std::to_string(c.microbatchCount())
                                          : fmt("%g", t.coefficient) + "N·(P−1)/P";
  }
  if (c.tp > 1) {
    // Megatron-LM: a ring all-reduce of the (B·S, D) activation in bf16 per
    // row-parallel layer (attention's and the MLP's in a GPT block; one in the
    // residual MLP block); backward all-reduces the column-parallel layers'
    // input gradients, as many bytes.
    const bool sequence = hasTokenBlocks(c);
    const int64_t tokens = int64_t(c.batch / c.dataParallelSize()) * (sequence ? c.model.seq : 1);
    t.tp_all_reduces_per_layer = sequence ? 2 : 1;
    t.tp_per_layer = cast(t.tp_all_reduces_per_layer *
                          ringBytesPerRank(Collective::AllReduce, double(tokens) * c.model.hidden * 2.0, c.tp));
    t.tp_notation = std::to_string(t.tp_all_reduces_per_layer) + " × 2(T−1)/T × " + (sequence ? "B·S·D" : "B·D") +
                    " × 2 B";
    t.tp_forward_per_layer = c.model.checkpointing == Checkpointing::Full ? 2 * t.tp_per_layer : t.tp_per_layer;
    t.tp_backward_per_layer = t.tp_per_layer;
    if (sequence && c.model.sequence_parallel) {
      // Sequence parallelism: each all-reduce is a reduce-scatter plus an
      // all-gather (the same ring bytes); backward gathers both norms'
      // outputs again for the weight gradients (Megatron-LM keeps them sharded).
      t.tp_notation = "2 × (reduce-scatter + all-gather) = 2 × 2(T−1)/T × B·S·D × 2 B";
      t.tp_backward_per_layer = t.tp_per_layer + t.tp_per_layer / 2;
    }
    if (c.pp <= 1) {
      // The step: L blocks, and (token models) the embedding's forward sum and
      // the head's backward sum, each one collective of the (B·S, D) activation.
      const int64_t layers = c.model.layers;
      const double tensor = double(tokens) * c.model.hidden * 2.0;
      const std::string shape = std::string(sequence ? "B·S·D" : "B·D") + " × 2 B";
      const int full = c.model.checkpointing == Checkpointing::Full ? 2 : 1;  // the recompute repeats the forward's
      if (sequence && c.model.sequence_parallel) {
        // Per block: forward 2 gathers + 2 reduce-scatters (× 2 with full
        // checkpointing), backward 4 gathers + 2 reduce-scatters; the embedding
        // reduce-scatters forward and gathers backward; the head gathers
        // forward and gathers and reduce-scatters backward.
        const int64_t scatters = layers * (2 * full + 2) + 2, gathers = layers * (2 * full + 4) + 3;
        t.tensor_parallel.reduce_scatter = cast(double(scatters) * ringBytesPerRank(Collective::ReduceScatter, tensor, c.tp));
        t.tensor_parallel.all_gather = cast(double(gathers) * ringBytesPerRank(Collective::AllGather, tensor, c.tp));
        t.tp_step_notation = std::to_string(scatters) + " reduce-scatters + " + std::to_string(gathers) +
                             " all-gathers × (T−1)/T × " + shape + " (" + std::to_string(layers) +
                             " layers, embedding, head)";
      } else {
        const int64_t per_layer = int64_t(t.tp_all_reduces_per_layer) * (full + 1);
        const int64_t ends = sequence ? 2 : 0;  // the embedding's and the head's sums
        const int64_t sums = layers * per_layer + ends;
        t.tensor_parallel.all_reduce = cast(double(sums) * ringBytesPerRank(Collective::AllReduce, tensor, c.tp));
        t.tp_step_notation = std::to_string(sums) + " × 2(T−1)/T × " + shape + " (" + std::to_string(per_layer) +
                             " per layer × " + std::to_string(layers) + " layers" +
                             (sequence ? ", embedding, head)" : ")");
      }
      if (sequence) {
        // The vocab-parallel loss: each token's row maximum gathered, its
        // softmax sum and target logit summed, in fp32 (B·S tokens).
        t.tensor_parallel.all_gather += cast(ringBytesPerRank(Collective::AllGather, double(tokens) * 4.0 * c.tp, c.tp));
        t.tensor_parallel.all_reduce += cast(ringBytesPerRank(Collective::AllReduce, double(tokens) * 2.0 * 4.0, c.tp));
        t.tp_step_notation += " + the loss's fp32 statistics";
      }
    }
  }
  return t;
}

double ExpectedTraffic::inUnitsOfN(double bytes) const {
  const double unit = ringBytesPerRank(Collective::AllGather, n_bytes, ring_ranks);
  return unit > 0 ? bytes / unit : 0.0;
}

std::string ExpectedTraffic::valueText() const {
  const double total = static_cast<double>(dataParallelTotal());
  std::string s = notation;
  if (coefficient > 0 && ring_ranks > 1)
    s += " = " + fmt("%.3f", coefficient * (ring_ranks - 1.0) / ring_ranks) + " N at P = " + std::to_string(ring_ranks);
  return s + " (" + bytesText(total, 2, ByteUnit::MiB) + ", N = " + bytesText(n_bytes, 2, ByteUnit::MiB) + ")";
}

GatheredPeak expectedGatheredPeak(const RunConfig& c) {
  GatheredPeak g;
  if (!c.isSharded()) return g;
  const ModelSpec spec(c.model, c.tp);
  const FsdpUnits units(spec, c.unitBlocks(), c.shardGroupSize(), c.wrapPolicy());
  const int64_t element = c.paramDType() == CommDType::Fp32 ? 4 : 2;
  std::vector<int64_t> blocks;  // gathered bytes of each block unit
  int64_t all = 0;
  for (const FsdpUnit& u : units.units()) {
    const int64_t bytes = u.gatheredElements() * element;
    all += bytes;
    if (u.index == 0) g.root_bytes = bytes;
    else blocks.push_back(bytes);
  }
  std::sort(blocks.begin(), blocks.end(), std::greater<>());
  g.unit_bytes = blocks.empty() ? 0 : blocks.front();
  const bool prefetch = c.prefetchMode() != Prefetch::None;
  g.units_held = std::min<int>(prefetch ? 2 : 1, static_cast<int>(blocks.size()));
  g.whole_model = !c.reshardAfterForward() || g.units_held == static_cast<int>(blocks.size());
  const auto mib = [](int64_t b) { return bytesText(static_cast<double>(b), 2, ByteUnit::MiB); };
  if (!c.reshardAfterForward()) {
    g.bytes = all;
    g.text = "every unit stays gathered from its forward to its backward (no resharding after forward): the whole model, " +
             mib(all);
    return g;
  }
  g.bytes = g.root_bytes;
  for (int i = 0; i < g.units_held; ++i) g.bytes += blocks[static_cast<size_t>(i)];
  g.text = "root " + mib(g.root_bytes) + " + " + std::to_string(g.units_held) + (g.units_held == 1 ? " unit" : " units") +
           " × " + mib(g.unit_bytes) + (prefetch ? " (one computing, one prefetched)" : " (the one computing)") + " = " +
           mib(g.bytes) + (g.whole_model ? ": the whole model" : "");
  return g;
}

bool hasTokenBlocks(const RunConfig& c) { return c.model.kind == ModelKind::Gpt || !c.model.preset.empty(); }

double expectedActivationBytesPerLayer(const RunConfig& c) {
  const double s = double(c.model.seq), b = double(c.microBatchSize()), h = double(c.model.hidden),
               a = double(c.model.heads), t = c.tp > 1 ? c.tp : 1;
  const double sbh = s * b * h;
  if (c.model.checkpointing == Checkpointing::Full)  // the layer's input (sequence parallel: 1/t of it)
    return 2.0 * sbh / (c.model.sequence_parallel && c.tp > 1 ? t : 1.0);
  const double kv = c.model.kv_heads > 0 ? double(c.model.kv_heads) / a : 1.0;  // K/V width over h
  const double f = (c.model.ffn > 0 ? double(c.model.ffn) : 4.0 * h) / h;      // MLP width over h
  // The published shapes without biases use RMSNorm.
  const bool rms_norm = !c.model.preset.empty() && !c.model.biases;
  // Korthikanti's 34·s·b·h term by term (bytes per s·b·h); sequence
  // parallelism splits the whole ones (norms, residual) over the sequence: 34/t.
  const double sp = c.model.sequence_parallel && c.tp > 1 ? t : 1.0;
  const double norm_inputs = 4.0 / sp;            // 2 + 2: both norms' inputs (whole without sequence parallelism)
  const double qkv_input = 2.0 / sp;              // norm1's output (whole)
  const double qkv = 2.0 * (1.0 + 2.0 * kv) / t;  // Q, K (their 4) and V (2); grouped K/V narrower
  const double proj_input = 2.0 / t;              // the heads' output
  const double mlp_input = 2.0 / sp;              // norm2's output (whole)
  const double mlp_inner = 2.0 * f * (c.model.gated_mlp ? 3.0 : 2.0) / t;  // GELU in and out (8 + 8); gated: 3 of f·h
  // Their dropout masks (sbh after attention, sbh after the MLP, whole under
  // TP, split with sequence parallelism): a shape with dropout (GPT-3's,
  // Megatron-LM's) keeps them.
  const double dropout_masks = c.model.dropout ? 2.0 : 0.0;
  // Not in their count: the norms' fp32 statistics per token (mean and rstd; RMSNorm rstd).
const double norm_stats = 2.0 * (rms_norm ? 4.0 : 8.0) / h / sp;
  double bytes = sbh * (norm_inputs + qkv_input + qkv + proj_input + mlp_input + mlp_inner + dropout_masks / sp +
                        norm_stats);
  if (c.model.checkpointing == Checkpointing::None) {
    // The attention core: their 5·a·s²·b is the softmax (2), its dropout mask
    // (1) and output (2); without dropout only the softmax, 2·a·s²·b/t. Flash
    // keeps one fp32 statistic per row instead: 4·a·s·b/t.
    const double naive = c.model.dropout ? 5.0 : 2.0;
    bytes += c.model.attention == Attention::Naive ? naive * a * s * s * b / t : 4.0 * a * s * b / t;
  }
  return bytes;
}

double expectedStageBoundaryBytes(const RunConfig& c) {
  const double tokens = double(c.model.seq) * double(c.microBatchSize()), h = double(c.model.hidden);
  const double sp = c.model.sequence_parallel && c.tp > 1 ? double(c.tp) : 1.0;
  return tokens * 2.0 * h / sp;
}

double expectedTokenIdBytes(const RunConfig& c) { return double(c.model.seq) * double(c.microBatchSize()) * 4.0; }

double expectedEmbeddingActivationBytes(const RunConfig& c) {
  return expectedTokenIdBytes(c) + expectedStageBoundaryBytes(c);
}

double expectedHeadActivationBytes(const RunConfig& c) {
  const double tokens = double(c.model.seq) * double(c.microBatchSize()), h = double(c.model.hidden);
  const int64_t t = c.tp > 1 ? c.tp : 1;
  const double vocab_slice = double((int64_t(c.model.vocab) + t - 1) / t);
  return expectedTokenIdBytes(c) + tokens * (2.0 * h + 8.0 + 4.0 * vocab_slice);
}

double expectedRecomputeBytesPerLayer(const RunConfig& c) {
  if (c.model.checkpointing == Checkpointing::None) return 0.0;
  RunConfig none = c;
  none.model.checkpointing = Checkpointing::None;
  return expectedActivationBytesPerLayer(none) - expectedActivationBytesPerLayer(c);
}

double megatronIterationFlops(const ModelShape& m, int global_batch, bool full_recompute) {
  const double B = global_batch, s = m.seq, l = m.layers, h = m.hidden, V = m.vocab;
  return (full_recompute ? 96.0 : 72.0) * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

double sixNIterationFlops(const ModelShape& m, int64_t params, int global_batch) {
  const double tokens = double(global_batch) * m.seq;
  return 6.0 * double(params) * tokens + 12.0 * m.layers * double(m.hidden) * m.seq * tokens;
}

}  // namespace shardscope
