#include "parallel/pipeline_strategy.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/errors.h"
#include "kernels/cpu_kernels.h"
#include "parallel/recompute_span.h"
#include "parallel/tensor_parallel.h"

namespace shardscope {

namespace {

using Pass = PipelineAction::Pass;

}  // namespace

PipelineStrategy::PipelineStrategy(RankEnv& env)
    : m_env(env),
      m_microbatches(env.config.microbatchCount()),
      m_microBatchSize(env.config.batch / (env.dp_size * env.config.microbatchCount())),
      m_schedule(env.config.pipelineSchedule(), env.config.pp, env.config.microbatchCount(), env.config.virtualStages()) {
  const ModelSpec& spec = env.spec;
  m_stages = std::make_unique<PipelineStages>(pipelineStagesFor(env.config, spec));
  int64_t local = 0;
  for (const PipelineChunk& c : m_stages->chunksOf(env.stage)) {
    Chunk chunk;
    chunk.where = c;
    chunk.local_offset = local;
    chunk.spec_offset = spec.segmentOffset(c.first_segment);
    for (int seg = c.first_segment; seg < c.last_segment; ++seg) chunk.elements += spec.segmentElements(seg);
    local += chunk.elements;
    m_chunks.push_back(chunk);
  }
  m_elements = local;
  std::vector<StageSegment> segments;
  for (const Chunk& c : m_chunks)
    for (int seg = c.where.first_segment; seg < c.where.last_segment; ++seg)
      segments.push_back({seg, c.local_offset + (spec.segmentOffset(seg) - c.spec_offset), spec.segmentOffset(seg),
                          spec.segmentElements(seg)});
  m_state = makeStageState(env, std::move(segments), m_microbatches);
  if (env.config.inject_branch && env.config.inject_branch->rank == env.ctx.rank)
    m_skipSegment = env.config.inject_branch->block + 1;
  // The embedding is chunk 0's, the head the last chunk's.
  bool embeds = false;
  for (const Chunk& c : m_chunks) {
    embeds |= c.where.index == 0;
    m_holdsLoss |= c.where.index == m_stages->chunkCount() - 1;
  }
  const bool loss = m_holdsLoss;
  // One model instance per microbatch (its activations live from its forward to its backward).
  m_models.push_back(makeModel(spec, env.ctx.ledger, m_microBatchSize, env.config.seed));
  m_models.back()->setTensorParallel(env.tensor);
  m_models.back()->setStageRole(embeds, loss);
  for (int mb = 1; mb < m_microbatches; ++mb) {
    std::unique_ptr<Model> next = m_models.front()->another();
    if (!next) {
      next = makeModel(spec, env.ctx.ledger, m_microBatchSize, env.config.seed);
      next->setTensorParallel(env.tensor);
      next->setStageRole(embeds, loss);
    }
    m_models.push_back(std::move(next));
  }
}

const PipelineStrategy::Chunk& PipelineStrategy::chunkFor(int global_chunk) const {
  for (const Chunk& c : m_chunks)
    if (c.where.index == global_chunk) return c;
  throw RunError("pipeline: stage " + std::to_string(m_env.stage) + " holds no model chunk " +
                 std::to_string(global_chunk));
}

void PipelineStrategy::setup() {
  RankContext& ctx = m_env.ctx;
  // A receive legitimately waits while the stages before it compute (GPipe:
  // all M forwards before a backward comes back): the check's timeout per
  // pass it may wait through, so only a stage that never sends is a hang.
  if (m_env.pipeline)
    m_env.pipeline->setPointToPointTimeout(
        static_cast<int>(std::min<int64_t>(int64_t(m_env.pipeline->pointToPointTimeout()) * (m_microbatches + m_env.config.pp),
                                           24LL * 3600 * 1000)));
  const auto n = static_cast<size_t>(m_elements);
  // Data-parallel rank 0 of the axis initialises the model (its TP slice)
  // and sends its stage's part to the axis: every stage starts from the
  // weights of the one-rank run.
  std::vector<float> stage(ctx.meta() ? 0 : n, 0.0f);
  if (m_env.dp_rank == 0 && !ctx.meta()) {
    std::vector<float> whole(static_cast<size_t>(m_env.spec.numParams()));
    if (m_env.tp_layout) {
      std::vector<float> full(static_cast<size_t>(m_env.tp_layout->global().numParams()));
      initModelParams(m_env.tp_layout->global(), m_env.config.seed, full.data());
      m_env.tp_layout->slice(full.data(), whole.data());
    } else {
      initModelParams(m_env.spec, m_env.config.seed, whole.data());
    }
    for (const Chunk& c : m_chunks)
      std::copy_n(whole.begin() + c.spec_offset, c.elements, stage.begin() + c.local_offset);
  }
  m_env.world.broadcast(stage.data(), n, DType::F32, 0, Lane::Comm);
  m_state->setup(stage);
}

void PipelineStrategy::runForward(int step, const PipelineAction& a) {
  RankContext& ctx = m_env.ctx;
  const Chunk& c = chunkFor(a.chunk);
  Model& model = *m_models[static_cast<size_t>(a.microbatch)];
  const int L = m_env.spec.shape().layers;
  const bool first_pass = a.chunk == m_chunks.front().where.index;
  if (first_pass) {
    // The microbatch's samples: this data-parallel rank's slice, then the microbatch's part of it.
    const int64_t first = int64_t(m_env.dp_rank) * m_microBatchSize * m_microbatches + int64_t(a.microbatch) * m_microBatchSize;
    model.loadBatch(step, first);
  }
  const size_t width = model.boundaryElements();
  if (c.where.first_segment > 0) {
    P2pTag tag{a.microbatch, chunkTag(a.chunk), false, c.where.first_segment - 1};
    m_wire.resize(ctx.meta() ? 0 : width);
    m_env.pipeline->recv(m_wire.data(), width, DType::BF16, m_schedule.stageOf(a.chunk - 1), tag);
    if (!ctx.meta()) {
      m_boundary.resize(width);
      cpu::bf16ToF32(m_wire.data(), m_boundary.data(), width);
    }
    model.setStageInput(m_boundary.data());
  }
  int32_t last_op = -1;
  const bool branch = a.microbatch == std::min(1, m_microbatches - 1) && m_skipSegment >= c.where.first_segment &&
                      m_skipSegment < c.where.last_segment;
  for (int seg = c.where.first_segment; seg < c.where.last_segment; ++seg) {
    ctx.gatePoint(EventKind::Forward, seg);
    const bf16* w = m_state->acquireWeights(seg, a.microbatch, false);  // zero3/fsdp: the all-gather first
    {
      Event f;
      f.block = static_cast<int16_t>(seg);
      f.param = static_cast<int16_t>(a.microbatch);
      ScopedEvent scope(ctx, Lane::Compute, EventKind::Forward, f);
      const bool skip = branch && seg == m_skipSegment;
      model.forward(seg, w, skip);
      if (!skip) ctx.chargeCompute(model.forwardFlops(seg), 2.0 * double(m_env.spec.segmentElements(seg)));
      last_op = scope.event().op;
    }
    m_state->releaseWeights(seg);
  }
  if (branch && c.where.last_segment < L + 2) return;  // the branch returns before the send
  if (c.where.last_segment == L + 2) {
    Event l;
    l.param = static_cast<int16_t>(a.microbatch);
    ScopedEvent scope(ctx, Lane::Compute, EventKind::Loss, l);
    m_loss += model.loss() / m_microbatches;
    return;
  }
  if (!ctx.meta()) m_boundary.resize(width);
  model.takeStageOutput(m_boundary.data());
  m_wire.resize(ctx.meta() ? 0 : width);
  if (!ctx.meta()) cpu::f32ToBf16(m_boundary.data(), m_wire.data(), width);
  P2pTag tag{a.microbatch, chunkTag(a.chunk + 1), false, c.where.last_segment - 1, last_op};
  m_env.pipeline->send(m_wire.data(), width, DType::BF16, m_schedule.stageOf(a.chunk + 1), tag);
}

void PipelineStrategy::runBackward(const PipelineAction& a) {
  RankContext& ctx = m_env.ctx;
  const Chunk& c = chunkFor(a.chunk);
  Model& model = *m_models[static_cast<size_t>(a.microbatch)];
  const int L = m_env.spec.shape().layers;
  const size_t width = model.boundaryElements();
  if (c.where.last_segment < L + 2) {
    P2pTag tag{a.microbatch, chunkTag(a.chunk), true, c.where.last_segment};
    m_wire.resize(ctx.meta() ? 0 : width);
    m_env.pipeline->recv(m_wire.data(), width, DType::BF16, m_schedule.stageOf(a.chunk + 1), tag);
    if (!ctx.meta()) {
      m_boundary.resize(width);
      cpu::bf16ToF32(m_wire.data(), m_boundary.data(), width);
    }
    model.setStageOutputGrad(m_boundary.data());
  }
  int32_t last_op = -1;
  for (int seg = c.where.last_segment - 1; seg >= c.where.first_segment; --seg) {
    ctx.gatePoint(EventKind::Backward, seg);
    Event f;
    f.block = static_cast<int16_t>(seg);
    f.param = static_cast<int16_t>(a.microbatch);
    const double weight_bytes = 2.0 * double(m_env.spec.segmentElements(seg));
    const bf16* w = m_state->acquireWeights(seg, a.microbatch, true);
    recomputeSpan(ctx, model, seg, w, f, weight_bytes);
    {
      ScopedEvent scope(ctx, Lane::Compute, EventKind::Backward, f);
      model.backward(seg, w, m_state->microbatchGrads(seg), nullptr);
      ctx.chargeCompute(2.0 * model.forwardFlops(seg), 2.0 * weight_bytes);
      last_op = scope.event().op;
    }
    m_state->releaseWeights(seg);
    m_state->accumulate(seg, a.microbatch);
  }
  if (c.where.first_segment > 0) {
    if (!ctx.meta()) m_boundary.resize(width);
    model.takeStageInputGrad(m_boundary.data());
    m_wire.resize(ctx.meta() ? 0 : width);
    if (!ctx.meta()) cpu::f32ToBf16(m_boundary.data(), m_wire.data(), width);
    P2pTag tag{a.microbatch, chunkTag(a.chunk - 1), true, c.where.first_segment, last_op};
    m_env.pipeline->send(m_wire.data(), width, DType::BF16, m_schedule.stageOf(a.chunk - 1), tag);
  }
  if (--m_lastBackward[static_cast<size_t>(a.microbatch)] == 0) model.releaseBatch();
}

double PipelineStrategy::step(int step) {
  RankContext& ctx = m_env.ctx;
  // hsdp's stages gather and reduce in their shard group, and all-reduce across replicas.
  for (ProcessGroup* pg : {&m_env.world, m_env.pipeline, m_env.gather, m_env.reduce, m_env.replicate})
    if (pg) pg->resetStepBytes();
  m_loss = 0;
  m_lastBackward.assign(static_cast<size_t>(m_microbatches), static_cast<int>(m_chunks.size()));
  CpuStream& compute = m_env.compute;
  compute.enqueue([this] { m_state->beginStep(); });
  const int64_t step_slot = int64_t(step) * m_schedule.slotsPerStep();
  const std::vector<PipelineAction>& actions = m_schedule.actions(m_env.stage);
  for (size_t i = 0; i < actions.size(); ++i) {
    const PipelineAction& a = actions[i];
    // The host launches the pass's kernels (one per weight forward, two
    // backward) before the stream runs them, as it runs ahead in PyTorch.
    const PipelineChunk& where = chunkFor(a.chunk).where;
    const auto [p0, p1] = std::pair{m_env.spec.segmentParams(where.first_segment).first,
                                    m_env.spec.segmentParams(where.last_segment - 1).second};
    ctx.hostIssue((a.pass == Pass::Forward ? 1 : 2) * (p1 - p0), 0);
    const int64_t slot = step_slot + m_schedule.slot(m_env.stage, i);
    compute.enqueue([this, &ctx, step, a, slot, first = where.first_segment, last = where.last_segment] {
      // The pass's gate point comes before its receive: a stage stopped
      // there waits on no other (pipeline_schedule.h, slot()).
      ctx.gate_slot = slot;
      ctx.gate_microbatch = a.microbatch;
      ctx.gatePoint(a.pass == Pass::Forward ? EventKind::Forward : EventKind::Backward,
                    a.pass == Pass::Forward ? first : last - 1);
      if (a.pass == Pass::Forward) runForward(step, a);
      else runBackward(a);
    });
  }
  ctx.hostIssue(1, 0);  // one fused Adam kernel
  compute.enqueue([this, &ctx, step, flush_slot = step_slot + m_schedule.slotsPerStep() - 1] {
    // The flush's gate point comes before it waits for its sends' receivers.
    ctx.gate_slot = flush_slot;
    ctx.gate_microbatch = -1;
    ctx.gatePoint(EventKind::OptimizerStep);
    if (m_env.pipeline) m_env.pipeline->flushSends();  // the pipeline's flush: every transfer delivered
    m_state->finishStep(step);
    ctx.gate_slot = -1;
  });
  compute.synchronize();
  // Only a stage holding the head computes the loss; the others report none.
  return m_holdsLoss ? m_models.front()->finishLoss(m_loss) : std::numeric_limits<double>::quiet_NaN();
}

void PipelineStrategy::copyOwnedMaster(std::vector<float>& full) const { m_state->copyOwnedMaster(full); }

CommBytes PipelineStrategy::stepCommBytes() const {
  CommBytes total = m_env.world.stepBytes();
  if (m_env.pipeline) total += m_env.pipeline->stepBytes();
  if (m_env.config.strategy == Strategy::Hsdp)  // zero3/fsdp stages use the world (their gather and reduce groups are idle)
    for (ProcessGroup* pg : {m_env.gather, m_env.reduce, m_env.replicate})
      if (pg) total += pg->stepBytes();
  return total;
}

int64_t PipelineStrategy::activationBytesPerLayer() const {
  int64_t peak = 0;
  for (const auto& m : m_models) peak = std::max(peak, m->activationBytesPerLayer());
  return peak;
}

}  // namespace shardscope
