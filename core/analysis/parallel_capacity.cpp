#include "analysis/parallel_capacity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "analysis/formulas.h"
#include "common/checked_math.h"
#include "common/errors.h"
#include "model/model_spec.h"
#include "parallel/pipeline_schedule.h"
#include "parallel/pipeline_stages.h"
#include "parallel/pipeline_timing.h"

namespace shardscope {

namespace {

// Transformer blocks in a chunk (segment 0 is the embedding, L + 1 the head).
int pcapBlocksIn(const PipelineChunk& chunk, int layers) {
  const int first = std::max(chunk.first_segment, 1), last = std::min(chunk.last_segment, layers + 1);
  return std::max(0, last - first);
}

}  // namespace

ParallelPlan planParallelCapacity(const RunConfig& c, double capacity_bytes) {
  if (!hasTokenBlocks(c))
    throw ConfigError("a stage plan needs a transformer: --model gpt or a published shape (the residual MLP keeps no "
                      "per-layer activations of the formula)");
  ParallelPlan p;
  p.config = c;
  p.capacity_bytes = capacity_bytes;
  p.per_layer_bytes = expectedActivationBytesPerLayer(c);
  p.embedding_bytes = expectedEmbeddingActivationBytes(c);
  p.head_bytes = expectedHeadActivationBytes(c);
  p.recompute_bytes = expectedRecomputeBytesPerLayer(c);
  p.bubble = expectedPipelineBubble(c);
  const double boundary = expectedStageBoundaryBytes(c);

  const int layers = c.model.layers;
  const int stages = std::max(1, c.pp);
  const ModelSpec slice(c.model, c.tp);
  const PipelineStages split = pipelineStagesFor(c, slice);
  const PipelineScheduleOrder order(c.pipelineSchedule(), stages, c.microbatchCount(), c.virtualStages());
  const int64_t dp = std::max(1, c.dataParallelSize());
  const bool sharded = c.isSharded();

  for (int s = 0; s < stages; ++s) {
    StagePlan st;
    st.stage = s;
    st.rank = stages > 1 ? pipelineStageRank(c, s) : 0;
    st.params = stageParams(c, s);
    st.model_state_bytes = expectedModelStateBytesRoundedUp(c, st.params);
    st.in_flight = expectedMicrobatchesInFlight(c, s);
    // What one segment's pass adds beside the activations, freed with the
    // pass: its unsharded bf16 gradients in backward; zero3/fsdp also gather
    // its parameters (padded to D shards) for forward and backward.
    const auto buffers = [&](int segment, bool backward) -> double {
      const int64_t n = slice.segmentElements(segment);
      if (!sharded) return backward ? 2.0 * double(n) : 0.0;
      const double gathered = 2.0 * double(ceilDiv(n, dp) * dp);
      return backward ? 2.0 * gathered : gathered;
    };
    // What a segment keeps from its forward to its backward; the token ids
    // (inputs on the first stage, targets on the last) live per microbatch
    // from its first forward on the stage to its last backward there.
    const double ids = expectedTokenIdBytes(c);
    const auto saved = [&](int segment) {
      return segment == 0 ? p.embedding_bytes - ids : segment == layers + 1 ? p.head_bytes - ids : p.per_layer_bytes;
    };
    double stage_ids = 0;
    int chunks_here = 0;
    for (const PipelineChunk& chunk : split.chunksOf(s)) {
      ++chunks_here;
      st.blocks += pcapBlocksIn(chunk, layers);
      st.holds += (st.holds.empty() ? "" : "; ") + split.describe(chunk.index, layers);
      if (chunk.first_segment == 0) stage_ids += ids;
      if (chunk.last_segment == layers + 2) stage_ids += ids;
      for (int seg = chunk.first_segment; seg < chunk.last_segment; ++seg)
        st.buffer_bytes = std::max(st.buffer_bytes, static_cast<int64_t>(buffers(seg, true)));
    }
    // The stage's passes in the schedule's order, segment by segment: a
    // forward books each segment's activations until that microbatch's
    // backward of it. A backward pass starts with the received output
    // gradient booked (not on the head's chunk), recomputes a checkpointed
    // block and books the segment's gradients. The plan counts all of it at
    // once, an upper bound: ddp and zero1 runs without recompute free the
    // block's activations and the received gradient before booking the
    // gradients, by at most a block's activations and 2·s·b·h/sp less.
    std::vector<int> chunks_left(static_cast<size_t>(c.microbatchCount()), chunks_here);
    std::vector<bool> started(static_cast<size_t>(c.microbatchCount()), false);
    double live = 0, activation_peak = 0, peak = 0;
    for (const PipelineAction& a : order.actions(s)) {
      const PipelineChunk& chunk = split.chunk(a.chunk);
      const auto mb = static_cast<size_t>(a.microbatch);
      if (a.pass == PipelineAction::Pass::Forward) {
        if (!started[mb]) live += stage_ids;
        started[mb] = true;
        for (int seg = chunk.first_segment; seg < chunk.last_segment; ++seg) {
          live += saved(seg);
          activation_peak = std::max(activation_peak, live);
          peak = std::max(peak, live + buffers(seg, false));
        }
        continue;
      }
      double received = chunk.last_segment < layers + 2 ? boundary : 0.0;
      for (int seg = chunk.last_segment - 1; seg >= chunk.first_segment; --seg) {
        const double recompute = seg >= 1 && seg <= layers ? p.recompute_bytes : 0.0;
        activation_peak = std::max(activation_peak, live + recompute + received);
        peak = std::max(peak, live + recompute + received + buffers(seg, true));
        live -= saved(seg);
        received = 0;
      }
      if (--chunks_left[mb] == 0) live -= stage_ids;
    }
    st.activation_bytes = static_cast<int64_t>(std::llround(activation_peak));
    if (!c.pipelined()) {
      // One pass without stages runs the strategy's own buffers: zero3/fsdp/hsdp's
      // gathered units (with prefetch) and one unit's full gradients; ddp, zero1
      // and zero2's gradient buckets, a bf16 copy of every gradient of the
      // slice (as run_memory's estimate books them), held through backward.
      if (sharded) {
        const GatheredPeak g = expectedGatheredPeak(c);
        st.buffer_bytes = g.bytes + g.unit_bytes;
      } else {
        st.buffer_bytes = 2 * st.params;
      }
      peak = activation_peak + double(st.buffer_bytes);
    }
    // zero1 ends the step with its reduce-scattered gradient shard and the
    // updated parameter shard it all-gathers (bf16 each), the activations gone.
    if (c.strategy == Strategy::Zero1 && c.pipelined()) peak = std::max(peak, 4.0 * double(ceilDiv(st.params, dp)));
    st.peak_bytes = st.model_state_bytes + static_cast<int64_t>(std::llround(peak));
    p.stages.push_back(std::move(st));
  }
  for (size_t s = 1; s < p.stages.size(); ++s)
    if (p.stages[s].peakBytes() > p.stages[static_cast<size_t>(p.most_loaded)].peakBytes()) p.most_loaded = int(s);
  return p;
}

RunConfig parallelCandidate(const RunConfig& base, int tp, int pp, int microbatches, int micro_batch) {
  RunConfig c = base;
  c.tp = tp;
  c.pp = pp;
  c.microbatches = microbatches;
  const int dp = tp * pp > 0 && c.ranks % (tp * pp) == 0 ? c.ranks / (tp * pp) : 1;
  const int64_t batch = int64_t(micro_batch) * dp * microbatches;
  if (batch > (int64_t(1) << 20))
    throw ConfigError("--micro-batch " + std::to_string(micro_batch) + " × " + std::to_string(dp) +
                      " data-parallel ranks × --microbatches " + std::to_string(microbatches) + " = a global batch of " +
                      std::to_string(batch) + " samples; a run takes at most 1048576 (use a smaller --micro-batch)");
  c.batch = static_cast<int>(batch);
  validate(c);
  return c;
}

FitSearch searchSmallestTpPp(const RunConfig& base, double capacity_bytes, int micro_batch,
                             std::optional<int> microbatches) {
  FitSearch search;
  struct Shape {
    int tp, pp;
  };
  std::vector<Shape> shapes;
  const bool interleaved = base.pipelineSchedule() == PipelineSchedule::Interleaved;
  for (int t : {1, 2, 4, 8}) {
    if (base.ranks % t != 0) continue;
    search.tp_choices.push_back(t);
    const int rest = base.ranks / t;
    for (int s = 1; s <= rest; ++s) {
      const int chunks = s * (interleaved && s > 1 ? base.virtual_stages.value_or(2) : 1);
      if (rest % s == 0 && chunks <= base.model.layers) shapes.push_back({t, s});
    }
  }
  std::stable_sort(shapes.begin(), shapes.end(), [](const Shape& a, const Shape& b) {
    return a.tp * a.pp != b.tp * b.pp ? a.tp * a.pp < b.tp * b.pp : a.tp < b.tp;
  });
  for (const Shape& shape : shapes) {
    if (search.chosen >= 0) {
      const FitCandidate& best = search.tried[static_cast<size_t>(search.chosen)];
      if (shape.tp * shape.pp > best.tp * best.pp) break;
    }
    FitCandidate f;
    f.tp = shape.tp;
    f.pp = shape.pp;
    try {
      const RunConfig c = parallelCandidate(base, shape.tp, shape.pp, microbatches.value_or(shape.pp), micro_batch);
      f.plan = planParallelCapacity(c, capacity_bytes);
    } catch (const ConfigError& e) {
      f.refused = e.what();
    }
    search.tried.push_back(std::move(f));
    if (search.chosen < 0 && search.tried.back().fits()) search.chosen = int(search.tried.size()) - 1;
  }
  return search;
}

}  // namespace shardscope
