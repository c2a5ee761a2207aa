#include "parallel/fsdp_strategy.h"

#include <algorithm>

#include "kernels/cpu_kernels.h"
#include "parallel/recompute_span.h"

namespace shardscope {

FsdpStrategy::FsdpStrategy(RankEnv& env)
    : m_env(env),
      m_units(env.spec, env.config.unitBlocks(), env.gather->groupSize(), env.config.wrapPolicy()),
      m_shard(m_units.shardOf(env.gather->groupRank())),
      m_model(makeRankModel(env)),
      m_prefetchForward(env.config.prefetchMode() == Prefetch::Forward ||
                        env.config.prefetchMode() == Prefetch::Both),
      m_prefetchBackward(env.config.prefetchMode() == Prefetch::Backward ||
                         env.config.prefetchMode() == Prefetch::Both),
      m_reshard(env.config.reshardAfterForward()),
      m_reduceFp32(env.config.reduceDType() == CommDType::Fp32),
      m_paramFp32(env.config.paramDType() == CommDType::Fp32) {
  if (env.config.inject_branch && env.config.inject_branch->rank == env.ctx.rank)
    m_skipSegment = env.config.inject_branch->block + 1;
  const size_t n = m_units.units().size();
  m_gathered.resize(n);
  m_gradFull.resize(n);
  m_gatheredEvent.resize(n);
  m_freedEvent.resize(n);
  m_gatherOp.assign(n, -1);
  m_lastComputeOp.assign(n, -1);
  m_live.assign(n, false);
}

void FsdpStrategy::setup() {
  MemoryLedger& ledger = m_env.ctx.ledger;
  const auto s = static_cast<size_t>(m_shard.elements);
  // As FSDP's sync_module_states: rank 0's initial weights reach every rank,
  // then each keeps only its shard.
  const std::vector<float> init = broadcastInitialWeights(m_env);
  m_paramShard = Buffer<bf16>(ledger, Category::Param, s);
  m_gradShard = Buffer<bf16>(ledger, Category::Grad, s);
  m_master = Buffer<float>(ledger, Category::Master, s);
  m_adamM = Buffer<float>(ledger, Category::AdamM, s);
  m_adamV = Buffer<float>(ledger, Category::AdamV, s);
  if (m_env.ctx.meta()) return;
  std::vector<float> master(s, 0.0f);
  for (const ShardSpan& span : m_shard.spans)
    for (int64_t i = 0; i < span.count; ++i) master[span.shard_offset + i] = init[span.flat_offset + i];
  std::vector<bf16> params(s);
  cpu::f32ToBf16(master.data(), params.data(), s);
  m_env.ctx.ops().upload(m_master.data(), master.data(), m_master.bytes());
  m_env.ctx.ops().upload(m_paramShard.data(), params.data(), m_paramShard.bytes());
}

bool FsdpStrategy::skipsUnit(int unit) const {
  // A rank-dependent branch around a whole unit skips FSDP's hooks too: no
  // all-gather, no reduce-scatter on this rank, so the ranks' collectives diverge.
  const FsdpUnit& u = m_units.units()[unit];
  return m_skipSegment >= 0 && u.segments.size() == 1 && u.segments[0] == m_skipSegment;
}

bf16* FsdpStrategy::gatheredSegment(int unit, int segment) {
  const FsdpUnit& u = m_units.units()[unit];
  for (size_t i = 0; i < u.segments.size(); ++i)
    if (u.segments[i] == segment) return m_gathered[unit].data() + u.segment_offset[i];
  return nullptr;
}

bf16* FsdpStrategy::gradSegment(int unit, int segment) {
  const FsdpUnit& u = m_units.units()[unit];
  for (size_t i = 0; i < u.segments.size(); ++i)
    if (u.segments[i] == segment) return m_gradFull[unit].data() + u.segment_offset[i];
  return nullptr;
}

void FsdpStrategy::issueGather(int unit, Phase phase) {
  if (skipsUnit(unit) || m_live[unit]) return;
  RankContext& ctx = m_env.ctx;
  CpuStream& gather = *m_env.gather_stream;
  const bool prefetching = phase == Phase::Forward ? m_prefetchForward : m_prefetchBackward;
  int32_t dep = -1;
  if (m_freedEvent[unit]) {
    // Gathering a unit again (backward after forward): its old buffer must be
    // gone first, and that free happens on the compute stream.
    gather.waitEvent(m_freedEvent[unit]);
    dep = m_freedEvent[unit]->opId();
  }
  if (!prefetching) {
    // Without prefetch the gather starts only once the compute issued so far
    // (the previous unit) has finished: every unit stalls on its own gather.
    // Stepping stops at its launch there.
    if (ctx.gated()) m_env.compute.enqueue([&ctx, unit] { ctx.gatePoint(EventKind::AllGather, -1, unit); });
    StreamEventPtr ev = m_env.compute.record();
    gather.waitEvent(ev);
    dep = *std::max_element(m_lastComputeOp.begin(), m_lastComputeOp.end());
  } else if (unit > 0) {
    // limit_all_gathers: a third block unit waits until the one gathered two
    // before it in this phase has been freed.
    const size_t k = m_phaseGathers.size();
    if (k >= 2) {
      const int older = m_phaseGathers[k - 2];
      if (m_freedEvent[older]) {
        gather.waitEvent(m_freedEvent[older]);
        dep = m_freedEvent[older]->opId();
      }
    }
  }
  if (unit > 0) m_phaseGathers.push_back(unit);
  const FsdpUnit& u = m_units.units()[unit];
  // One all-gather per flat parameter (one per unit with block wrapping, one
  // per Linear with linear wrapping), in offset order: each piece's padding
  // lands where the next piece is then written.
  // Each flat parameter's pre-forward (pre-backward) hook issues its all-gather.
  const int pieces = static_cast<int>(u.pieces.size());
  m_env.ctx.hostIssue(pieces, pieces);
  std::vector<int32_t> ops;
  std::vector<int64_t> tickets;
  for (size_t i = 0; i < u.pieces.size(); ++i) {
    ops.push_back(ctx.newOp());
    // The gather and reduce streams share the rank's link: tickets in issue order.
    tickets.push_back(m_env.gather->takeLinkTicket());
  }
  m_gatherOp[unit] = ops.back();
  m_live[unit] = true;
  m_freedEvent[unit] = nullptr;
  m_order.emplace_back("all_gather", unit);
  gather.enqueue([this, &ctx, unit, ops, dep, tickets, &u] {
    const auto n = static_cast<size_t>(u.gatheredElements());
    m_gathered[unit] = Buffer<bf16>(ctx.ledger, Category::Gathered, n);
    // param_dtype fp32: the fp32 master shard is what moves; the model then
    // computes on a bf16 cast of it, as autocast casts fp32 weights.
    Buffer<float> gathered32;
    if (m_paramFp32) gathered32 = Buffer<float>(ctx.ledger, Category::Gathered, n);
    for (size_t i = 0; i < u.pieces.size(); ++i) {
      const FsdpPiece& piece = u.pieces[i];
      CollectiveTag tag;
      tag.unit = unit;
      tag.dep = dep;
      tag.op = ops[i];
      tag.link_ticket = tickets[i];
      const auto chunk = static_cast<size_t>(piece.padded / u.group);
      const int64_t from = m_shard.unit_offset[unit] + piece.shard_offset;
      if (m_paramFp32)
        m_env.gather->allGather(m_master.data() + from, gathered32.data() + piece.offset, chunk, DType::F32, tag,
                                Lane::Gather);
      else
        m_env.gather->allGather(m_paramShard.data() + from, m_gathered[unit].data() + piece.offset, chunk,
                                DType::BF16, tag, Lane::Gather);
    }
    if (m_paramFp32) {
      if (!ctx.meta()) ctx.ops().f32ToBf16(gathered32.data(), m_gathered[unit].data(), n);
      ctx.chargeMemory(6.0 * double(n));  // read fp32, write bf16
    }
  });
  m_gatheredEvent[unit] = gather.record(ops.back());
}

void FsdpStrategy::issueFree(int unit) {
  if (skipsUnit(unit)) return;
  RankContext& ctx = m_env.ctx;
  m_env.compute.enqueue([this, &ctx, unit] {
    ctx.gatePoint(EventKind::Free, -1, unit);
    m_gathered[unit].reset();
  });
  const int32_t op = ctx.newOp();
  m_freedEvent[unit] = m_env.compute.record(op);
  m_live[unit] = false;
  m_order.emplace_back("free", unit);
}

void FsdpStrategy::issueCompute(int unit, const std::vector<int>& segments, Phase phase) {
  if (skipsUnit(unit)) return;
  RankContext& ctx = m_env.ctx;
  StreamEventPtr gathered = m_gatheredEvent[unit];
  const int32_t gather_op = m_gatherOp[unit];
  m_env.compute.enqueue([&ctx, gathered, gather_op, unit] {
    Event w;
    w.dep = gather_op;
    w.unit = static_cast<int16_t>(unit);
    ScopedEvent scope(ctx, Lane::Compute, EventKind::Wait, w);
    gathered->wait(ctx.control);
  });
  const FsdpUnit& u = m_units.units()[unit];
  if (phase == Phase::Backward && segments.front() == u.segments.back()) {
    // The unit's first backward segment: its full (unsharded) gradient appears.
    m_env.compute.enqueue([this, &ctx, unit, &u] {
      m_gradFull[unit] = Buffer<bf16>(ctx.ledger, Category::GradFull, static_cast<size_t>(u.gatheredElements()));
    });
  }
  for (int seg : segments) {
    // The host launches the segment's kernels before the stream can run them.
    const auto [first_param, last_param] = m_env.spec.segmentParams(seg);
    m_env.ctx.hostIssue((phase == Phase::Forward ? 1 : 2) * (last_param - first_param), 0);
    const int32_t op = ctx.newOp();
    m_lastComputeOp[unit] = op;
    m_order.emplace_back(phase == Phase::Forward ? "forward" : "backward", unit);
    m_env.compute.enqueue([this, &ctx, unit, seg, op, phase, gather_op] {
      Event f;
      f.block = static_cast<int16_t>(seg);
      f.unit = static_cast<int16_t>(unit);
      f.op = op;
      f.dep = gather_op;
      const bool skip = seg == m_skipSegment;
      const double weight_bytes = 2.0 * double(m_env.spec.segmentElements(seg));
      if (phase == Phase::Forward) {
        ctx.gatePoint(EventKind::Forward, seg, unit);
        ScopedEvent scope(ctx, Lane::Compute, EventKind::Forward, f);
        m_model->forward(seg, gatheredSegment(unit, seg), skip);
        if (!skip) ctx.chargeCompute(m_model->forwardFlops(seg), weight_bytes);
      } else {
        ctx.gatePoint(EventKind::Backward, seg, unit);
        if (!skip) recomputeSpan(ctx, *m_model, seg, gatheredSegment(unit, seg), f, weight_bytes);
        ScopedEvent scope(ctx, Lane::Compute, EventKind::Backward, f);
        m_model->backward(seg, gatheredSegment(unit, seg), gradSegment(unit, seg), nullptr, skip);
        if (!skip) ctx.chargeCompute(2.0 * m_model->forwardFlops(seg), 2.0 * weight_bytes);
      }
    });
  }
}

void FsdpStrategy::issueReduce(int unit) {
  if (skipsUnit(unit)) return;
  RankContext& ctx = m_env.ctx;
  const int32_t bwd_op = m_lastComputeOp[unit];
  // The reduce starts once the compute stream is past here: stepping stops at its launch.
  if (ctx.gated()) m_env.compute.enqueue([&ctx, unit] { ctx.gatePoint(EventKind::ReduceScatter, -1, unit); });
  m_env.reduce_stream->waitEvent(m_env.compute.record(bwd_op));
  m_order.emplace_back("reduce_scatter", unit);
  const FsdpUnit& u = m_units.units()[unit];
  // Each flat parameter's post-backward hook issues its reduce-scatter.
  m_env.ctx.hostIssue(static_cast<int>(u.pieces.size()), static_cast<int>(u.pieces.size()));
  // Tickets in the order the reduce stream uses them (last piece first).
  std::vector<int64_t> reduce_tickets(u.pieces.size()), replicate_tickets(u.pieces.size());
  for (size_t k = u.pieces.size(); k-- > 0;) {
    reduce_tickets[k] = m_env.reduce->takeLinkTicket();
    replicate_tickets[k] = m_env.replicate ? m_env.replicate->takeLinkTicket() : -1;
  }
  if (m_reduceFp32) {
    m_env.reduce_stream->enqueue([this, unit, bwd_op, reduce_tickets, replicate_tickets] {
      reduceFp32(unit, bwd_op, reduce_tickets, replicate_tickets);
    });
    return;
  }
  m_env.reduce_stream->enqueue([this, &ctx, unit, bwd_op, reduce_tickets, replicate_tickets, &u] {
    Buffer<bf16>& full = m_gradFull[unit];
    // Pre-divide by the data-parallel size: the shard-group sum (and, for HSDP, the
    // sum across replicas) then yields the mean gradient, as in DDP.
    if (m_env.dp_size > 1 && !ctx.meta())
      ctx.ops().scaleBf16(full.data(), 1.0f / static_cast<float>(m_env.dp_size), full.size());
    ctx.chargeMemory(2.0 * full.bytes());
    // One reduce-scatter per flat parameter, last piece first: a piece's
    // padding reads the start of the next piece, already reduced by then.
    for (size_t k = u.pieces.size(); k-- > 0;) {
      const FsdpPiece& piece = u.pieces[k];
      bf16* shard = m_gradShard.data() + m_shard.unit_offset[unit] + piece.shard_offset;
      const auto chunk = static_cast<size_t>(piece.padded / u.group);
      CollectiveTag tag;
      tag.unit = unit;
      tag.dep = bwd_op;
      tag.link_ticket = reduce_tickets[k];
      m_env.reduce->reduceScatter(full.data() + piece.offset, shard, chunk, DType::BF16, tag, Lane::Reduce);
      if (k == 0) full.reset();  // every piece reduced: the full gradient goes
      if (m_env.replicate) {
        tag.link_ticket = replicate_tickets[k];  // its own link's queue when it crosses nodes
        m_env.replicate->allReduce(shard, chunk, DType::BF16, tag, Lane::Reduce);
      }
    }
  });
}

void FsdpStrategy::reduceFp32(int unit, int32_t bwd_op, const std::vector<int64_t>& reduce_tickets,
                              const std::vector<int64_t>& replicate_tickets) {
  // reduce_dtype fp32: the bf16 gradient is cast up, pre-divided and reduced
  // in fp32 (every partial sum in fp32); the reduced shard is cast back to
  // the bf16 gradient shard the optimizer reads.
  RankContext& ctx = m_env.ctx;
  const FsdpUnit& u = m_units.units()[unit];
  Buffer<bf16>& full = m_gradFull[unit];
  Buffer<float> full32(ctx.ledger, Category::GradFull, full.size());
  Buffer<float> shard32(ctx.ledger, Category::GradFull, static_cast<size_t>(u.chunk()));
  if (!ctx.meta()) {
    cpu::bf16ToF32(full.data(), full32.data(), full.size());
    const float scale = 1.0f / static_cast<float>(m_env.dp_size);
    for (size_t i = 0; i < full32.size(); ++i) full32.data()[i] *= scale;
  }
  ctx.chargeMemory(6.0 * double(full.size()) + 2.0 * full32.bytes());  // cast up, scale
  for (size_t k = u.pieces.size(); k-- > 0;) {
    const FsdpPiece& piece = u.pieces[k];
    float* shard = shard32.data() + piece.shard_offset;
    const auto chunk = static_cast<size_t>(piece.padded / u.group);
    CollectiveTag tag;
    tag.unit = unit;
    tag.dep = bwd_op;
    tag.link_ticket = reduce_tickets[k];
    m_env.reduce->reduceScatter(full32.data() + piece.offset, shard, chunk, DType::F32, tag, Lane::Reduce);
    if (k == 0) {
      full.reset();
      full32.reset();
    }
    if (m_env.replicate) {
      tag.link_ticket = replicate_tickets[k];
      m_env.replicate->allReduce(shard, chunk, DType::F32, tag, Lane::Reduce);
    }
  }
  if (!ctx.meta()) ctx.ops().f32ToBf16(shard32.data(), m_gradShard.data() + m_shard.unit_offset[unit], shard32.size());
  ctx.chargeMemory(6.0 * double(shard32.size()));
}

double FsdpStrategy::step(int step) {
  RankContext& ctx = m_env.ctx;
  const ModelSpec& spec = m_env.spec;
  const int64_t first = static_cast<int64_t>(m_env.dp_rank) * m_model->localBatch();
  const int L = spec.shape().layers;
  const int n_units = static_cast<int>(m_units.units().size());
  for (ProcessGroup* pg : {m_env.gather, m_env.reduce, m_env.replicate})
    if (pg) pg->resetStepBytes();
  m_order.clear();
  std::fill(m_lastComputeOp.begin(), m_lastComputeOp.end(), -1);

  m_env.compute.enqueue([this, step, first] { m_model->loadBatch(step, first); });

  // Forward: root (input projection), block units in order, root (head).
  m_phaseGathers.clear();
  issueGather(0, Phase::Forward);
  for (int u = 0; u < n_units; ++u) {
    const int next = u + 1 < n_units ? u + 1 : -1;
    if (next >= 0 && m_prefetchForward) issueGather(next, Phase::Forward);  // before unit u computes
    issueCompute(u, u == 0 ? std::vector<int>{0} : m_units.units()[u].segments, Phase::Forward);
    if (u > 0 && m_reshard) issueFree(u);
    if (next >= 0 && !m_prefetchForward) issueGather(next, Phase::Forward);  // after unit u computed
  }
  issueCompute(0, {L + 1}, Phase::Forward);
  m_env.compute.enqueue([this, &ctx] {
    ScopedEvent scope(ctx, Lane::Compute, EventKind::Loss);
    m_loss = m_model->loss();
  });
  if (m_reshard) issueFree(0);

  // Backward, in reverse: root (head), block units U..1, root (input projection).
  m_phaseGathers.clear();
  std::vector<std::pair<int, std::vector<int>>> order;
  order.push_back({0, {L + 1}});
  for (int u = n_units - 1; u >= 1; --u) {
    auto segs = m_units.units()[u].segments;
    std::reverse(segs.begin(), segs.end());
    order.push_back({u, segs});
  }
  order.push_back({0, {0}});
  for (size_t i = 0; i < order.size(); ++i) {
    const int u = order[i].first;
    issueGather(u, Phase::Backward);  // no-op when still live (prefetched, or not resharded)
    const int next = i + 1 < order.size() && order[i + 1].first != u ? order[i + 1].first : -1;
    if (next >= 0 && m_prefetchBackward) issueGather(next, Phase::Backward);  // BACKWARD_PRE
    issueCompute(u, order[i].second, Phase::Backward);
    const bool unit_done = u != 0 || order[i].second.front() == 0;
    if (unit_done) {
      issueReduce(u);
      issueFree(u);
    }
  }

  // Update: each rank steps only its shard, once every reduce-scatter is done.
  StreamEventPtr reduced = m_env.reduce_stream->record();
  m_env.compute.enqueue([&ctx, reduced] {
    ScopedEvent scope(ctx, Lane::Compute, EventKind::Wait);
    reduced->wait(ctx.control);
  });
  m_env.ctx.hostIssue(1, 0);  // one fused Adam kernel over the shard
  m_env.compute.enqueue([this, &ctx, step] {
    ctx.gatePoint(EventKind::OptimizerStep);
    ScopedEvent scope(ctx, Lane::Compute, EventKind::OptimizerStep);
    cpu::AdamConfig adam;
    adam.lr = static_cast<float>(m_env.config.lr);
    if (!ctx.meta())
      ctx.ops().adamStep(m_master.data(), m_adamM.data(), m_adamV.data(), m_gradShard.data(), m_paramShard.data(),
                    m_master.size(), adam, step + 1);
    ctx.chargeMemory(kAdamBytesPerElement * double(m_master.size()));
  });
  m_env.compute.synchronize();
  m_env.gather_stream->synchronize();
  m_model->releaseBatch();
  m_lastOrder = m_order;
  return m_model->finishLoss(m_loss);
}

void FsdpStrategy::copyOwnedMaster(std::vector<float>& full) const {
  // Under HSDP every replica holds the same shard; replica 0 reports it.
  if (m_env.replicate && m_env.replicate->groupRank() != 0) return;
  std::vector<float> master(m_master.size());
  m_env.ctx.ops().download(master.data(), m_master.data(), m_master.bytes());
  for (const ShardSpan& span : m_shard.spans)
    for (int64_t i = 0; i < span.count; ++i) full[span.flat_offset + i] = master[span.shard_offset + i];
}

int64_t FsdpStrategy::paddingStateBytes() const {
  // Every rank holds S elements of each of the five states and S·G = N + padding.
  const int64_t group = m_env.gather->groupSize();
  return 16 * (m_shard.elements * group - m_env.spec.numParams()) / group;
}

CommBytes FsdpStrategy::stepCommBytes() const {
  CommBytes total;
  for (ProcessGroup* pg : {m_env.gather, m_env.reduce, m_env.replicate})
    if (pg) total += pg->stepBytes();
  return total;
}

}  // namespace shardscope
