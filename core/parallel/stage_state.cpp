#include "parallel/stage_state.h"

#include <algorithm>
#include <cstring>

#include "common/errors.h"
#include "kernels/cpu_kernels.h"

namespace shardscope {

namespace {

cpu::AdamConfig stageAdam(const RunConfig& c) {
  cpu::AdamConfig adam;
  adam.lr = static_cast<float>(c.lr);
  return adam;
}

// ddp and zero1: every rank of the axis holds the stage's bf16 parameters and
// its accumulated gradients whole — in bf16, or in fp32 with --grad-dtype fp32
// (Megatron-LM's main_grad: every microbatch adds into fp32, reduced in fp32).
class ReplicatedStageState final : public StageState {
 public:
  ReplicatedStageState(RankEnv& env, std::vector<StageSegment> segments, int microbatches)
      : m_env(env), m_segments(std::move(segments)), m_microbatches(microbatches),
        m_zero1(env.config.strategy == Strategy::Zero1),
        m_fp32(env.config.fp32Grads()) {
    for (const StageSegment& s : m_segments) m_elements += s.elements;
    const int64_t dp = env.dp_size;
    m_padded = m_zero1 ? (m_elements + dp - 1) / dp * dp : m_elements;
  }

  void setup(const std::vector<float>& stage) override {
    MemoryLedger& ledger = m_env.ctx.ledger;
    const auto n = static_cast<size_t>(m_padded);
    const size_t owned = m_zero1 ? n / static_cast<size_t>(m_env.dp_size) : n;
    m_params = Buffer<bf16>(ledger, Category::Param, n);
    if (m_fp32)
      m_grads32 = Buffer<float>(ledger, Category::Grad, n);
    else
      m_grads = Buffer<bf16>(ledger, Category::Grad, n);
    m_master = Buffer<float>(ledger, Category::Master, owned);
    m_adamM = Buffer<float>(ledger, Category::AdamM, owned);
    m_adamV = Buffer<float>(ledger, Category::AdamV, owned);
    if (m_env.ctx.meta()) return;
    std::vector<float> padded(stage);
    padded.resize(n, 0.0f);
    cpu::f32ToBf16(padded.data(), m_params.data(), n);
    std::memcpy(m_master.data(), padded.data() + shardBegin(), m_master.bytes());
  }

  void beginStep() override {
    void* grads = m_fp32 ? static_cast<void*>(m_grads32.data()) : static_cast<void*>(m_grads.data());
    const size_t bytes = m_fp32 ? m_grads32.bytes() : m_grads.bytes();
    if (!m_env.ctx.meta()) std::memset(grads, 0, bytes);
    m_env.ctx.chargeMemory(double(bytes));
  }

  const bf16* acquireWeights(int segment, int, bool) override { return m_params.data() + find(segment).local_offset; }
  void releaseWeights(int) override {}

  bf16* microbatchGrads(int segment) override {
    m_segmentGrads = Buffer<bf16>(m_env.ctx.ledger, Category::GradFull, static_cast<size_t>(find(segment).elements));
    return m_segmentGrads.data();
  }
  void accumulate(int segment, int) override {
    // In fp32, rounded once to bf16. On a GPU the weight-gradient GEMM adds in
    // place (Megatron-LM's gradient_accumulation_fusion): the modeled clock
    // charges no extra pass.
    const StageSegment& s = find(segment);
    if (!m_env.ctx.meta()) {
      const auto n = static_cast<size_t>(s.elements);
      if (m_fp32)
        cpu::addBf16ToF32(m_grads32.data() + s.local_offset, m_segmentGrads.data(), n);
      else
        cpu::addBf16InPlace(m_grads.data() + s.local_offset, m_segmentGrads.data(), n);
    }
    m_segmentGrads.reset();
  }

  void finishStep(int step) override {
    RankContext& ctx = m_env.ctx;
    const auto n = static_cast<size_t>(m_padded);
    // The mean over the M microbatches and the D data-parallel ranks: each
    // rank's sum is pre-divided, the reduction adds the ranks' parts.
    const float mean = 1.0f / float(m_microbatches * m_env.dp_size);
    const cpu::AdamConfig adam = stageAdam(m_env.config);
    if (m_fp32) {
      if (!ctx.meta()) cpu::scaleInPlace(m_grads32.data(), mean, n);
      ctx.chargeMemory(8.0 * double(n));
      finishStepFp32(step, adam);
      return;
    }
    if (!ctx.meta()) ctx.ops().scaleBf16(m_grads.data(), mean, n);
    ctx.chargeMemory(4.0 * double(n));
    if (!m_zero1) {
      if (m_env.dp_size > 1) {
        ctx.gatePoint(EventKind::AllReduce);
        m_env.world.allReduce(m_grads.data(), n, DType::BF16, {}, Lane::Comm);
      }
      ctx.gatePoint(EventKind::OptimizerStep);
      ScopedEvent scope(ctx, Lane::Compute, EventKind::OptimizerStep);
      if (!ctx.meta())
        ctx.ops().adamStep(m_master.data(), m_adamM.data(), m_adamV.data(), m_grads.data(), m_params.data(), n, adam,
                           step + 1);
      ctx.chargeMemory(kAdamBytesPerElement * double(n));
      return;
    }
    // zero1: this rank's shard of the summed gradients, its Adam step, then
    // every rank's updated shard gathered back into the stage's parameters.
    const size_t shard = n / static_cast<size_t>(m_env.dp_size);
    Buffer<bf16> reduced(ctx.ledger, Category::Bucket, shard);
    ctx.gatePoint(EventKind::ReduceScatter);
    m_env.world.reduceScatter(m_grads.data(), reduced.data(), shard, DType::BF16, {}, Lane::Comm);
    Buffer<bf16> updated(ctx.ledger, Category::Workspace, shard);
    {
      ctx.gatePoint(EventKind::OptimizerStep);
      ScopedEvent scope(ctx, Lane::Compute, EventKind::OptimizerStep);
      if (!ctx.meta())
        ctx.ops().adamStep(m_master.data(), m_adamM.data(), m_adamV.data(), reduced.data(), updated.data(), shard, adam,
                           step + 1);
      ctx.chargeMemory(kAdamBytesPerElement * double(shard));
    }
    reduced.reset();
    ctx.gatePoint(EventKind::AllGather);
    m_env.world.allGather(updated.data(), m_params.data(), shard, DType::BF16, {}, Lane::Comm);
  }

  // --grad-dtype fp32: the same steps over the fp32 gradients.
  void finishStepFp32(int step, const cpu::AdamConfig& adam) {
    RankContext& ctx = m_env.ctx;
    const auto n = static_cast<size_t>(m_padded);
    const size_t shard = m_zero1 ? n / static_cast<size_t>(m_env.dp_size) : n;
    Buffer<float> reduced;
    const float* grads = m_grads32.data();
    if (m_zero1) {
      reduced = Buffer<float>(ctx.ledger, Category::Bucket, shard);
      ctx.gatePoint(EventKind::ReduceScatter);
      m_env.world.reduceScatter(m_grads32.data(), reduced.data(), shard, DType::F32, {}, Lane::Comm);
      grads = reduced.data();
    } else if (m_env.dp_size > 1) {
      ctx.gatePoint(EventKind::AllReduce);
      m_env.world.allReduce(m_grads32.data(), n, DType::F32, {}, Lane::Comm);
    }
    Buffer<bf16> updated;
    if (m_zero1) updated = Buffer<bf16>(ctx.ledger, Category::Workspace, shard);
    {
      ctx.gatePoint(EventKind::OptimizerStep);
      ScopedEvent scope(ctx, Lane::Compute, EventKind::OptimizerStep);
      if (!ctx.meta())
        cpu::adamStep(m_master.data(), m_adamM.data(), m_adamV.data(), grads,
                      m_zero1 ? updated.data() : m_params.data(), shard, adam, step + 1);
      ctx.chargeMemory((kAdamBytesPerElement + 2) * double(shard));
    }
    if (!m_zero1) return;
    reduced.reset();
    ctx.gatePoint(EventKind::AllGather);
    m_env.world.allGather(updated.data(), m_params.data(), shard, DType::BF16, {}, Lane::Comm);
  }

  void copyOwnedMaster(std::vector<float>& full) const override {
    if (!m_zero1 && m_env.dp_rank != 0) return;
    std::vector<float> master(m_master.size());
    m_env.ctx.ops().download(master.data(), m_master.data(), m_master.bytes());
    const int64_t begin = shardBegin(), end = begin + static_cast<int64_t>(master.size());
    for (const StageSegment& s : m_segments)
      for (int64_t i = std::max(begin, s.local_offset); i < std::min(end, s.local_offset + s.elements); ++i)
        full[static_cast<size_t>(s.spec_offset + (i - s.local_offset))] = master[static_cast<size_t>(i - begin)];
  }

  int64_t paddingElements() const override { return m_padded - m_elements; }
  // zero1: each rank's shard of master, m and v spans padding/D elements.
  int64_t paddingStateBytes() const override { return m_zero1 ? 12 * (m_padded - m_elements) / m_env.dp_size : 0; }

 private:
  const StageSegment& find(int segment) const {
    for (const StageSegment& s : m_segments)
      if (s.segment == segment) return s;
    throw RunError("pipeline: this stage holds no segment " + std::to_string(segment));
  }
  int64_t shardBegin() const { return m_zero1 ? m_env.dp_rank * (m_padded / m_env.dp_size) : 0; }

  RankEnv& m_env;
  std::vector<StageSegment> m_segments;
  const int m_microbatches;
  const bool m_zero1, m_fp32;
  int64_t m_elements = 0, m_padded = 0;
  Buffer<bf16> m_params, m_grads, m_segmentGrads;
  Buffer<float> m_grads32;  // --grad-dtype fp32
  Buffer<float> m_master, m_adamM, m_adamV;
};

// zero2, zero3/fsdp and hsdp: each segment is a unit sharded over G ranks
// (G = D; hsdp: its shard group), padded to a multiple of G. A rank holds its
// shard of the gradients, master and Adam state; zero3/fsdp/hsdp also shard
// the parameters (16/G bytes per parameter of the stage) and gather a unit
// around each pass, zero2 keeps them whole (2 + 14/D) and all-gathers the
// updated shards after the step. Every microbatch's gradients are
// reduce-scattered at once; hsdp then all-reduces the shard across replicas.
class ShardedStageState final : public StageState {
 public:
  ShardedStageState(RankEnv& env, std::vector<StageSegment> segments, int microbatches)
      : m_env(env),
        m_segments(std::move(segments)),
        m_microbatches(microbatches),
        m_shardParams(env.config.strategy != Strategy::Zero2),
        m_group(env.config.strategy == Strategy::Hsdp ? env.config.shardGroupSize() : env.dp_size),
        m_groupRank(env.dp_rank % m_group) {
    for (const StageSegment& s : m_segments) {
      const int64_t chunk = (s.elements + m_group - 1) / m_group;
      m_units.push_back({m_shardElements, chunk, m_paddedElements});
      m_shardElements += chunk;
      m_paddedElements += chunk * m_group;
      m_padding += chunk * m_group - s.elements;
    }
    m_gathered.resize(m_segments.size());
  }

  void setup(const std::vector<float>& stage) override {
    MemoryLedger& ledger = m_env.ctx.ledger;
    const auto n = static_cast<size_t>(m_shardElements);
    if (m_shardParams)
      m_paramShard = Buffer<bf16>(ledger, Category::Param, n);
    else
      m_params = Buffer<bf16>(ledger, Category::Param, static_cast<size_t>(m_paddedElements));
    m_gradShard = Buffer<bf16>(ledger, Category::Grad, n);
    m_master = Buffer<float>(ledger, Category::Master, n);
    m_adamM = Buffer<float>(ledger, Category::AdamM, n);
    m_adamV = Buffer<float>(ledger, Category::AdamV, n);
    if (m_env.ctx.meta()) return;
    std::vector<float> master(n, 0.0f), padded(static_cast<size_t>(m_paddedElements), 0.0f);
    for (size_t u = 0; u < m_segments.size(); ++u) {
      const StageSegment& seg = m_segments[u];
      std::copy_n(stage.begin() + seg.local_offset, seg.elements, padded.begin() + m_units[u].padded_offset);
      for (int64_t i = 0; i < m_units[u].chunk; ++i) {
        const int64_t element = m_groupRank * m_units[u].chunk + i;  // within the segment
        if (element < seg.elements)
          master[static_cast<size_t>(m_units[u].shard_offset + i)] = stage[static_cast<size_t>(seg.local_offset + element)];
      }
    }
    std::memcpy(m_master.data(), master.data(), m_master.bytes());
    if (m_shardParams)
      cpu::f32ToBf16(master.data(), m_paramShard.data(), n);
    else
      cpu::f32ToBf16(padded.data(), m_params.data(), padded.size());
  }

  void beginStep() override {
    if (!m_env.ctx.meta()) std::memset(static_cast<void*>(m_gradShard.data()), 0, m_gradShard.bytes());
    m_env.ctx.chargeMemory(double(m_gradShard.bytes()));
  }

  const bf16* acquireWeights(int segment, int, bool) override {
    const size_t u = index(segment);
    const Unit& unit = m_units[u];
    if (!m_shardParams) return m_params.data() + unit.padded_offset;
    RankContext& ctx = m_env.ctx;
    m_gathered[u] = Buffer<bf16>(ctx.ledger, Category::Gathered, static_cast<size_t>(unit.chunk * m_group));
    CollectiveTag tag;
    tag.unit = static_cast<int>(u);
    tag.block = segment;
    gatherGroup().allGather(m_paramShard.data() + unit.shard_offset, m_gathered[u].data(),
                            static_cast<size_t>(unit.chunk), DType::BF16, tag, Lane::Gather);
    return m_gathered[u].data();
  }
  void releaseWeights(int segment) override { m_gathered[index(segment)].reset(); }

  bf16* microbatchGrads(int segment) override {
    const Unit& unit = m_units[index(segment)];
    m_fullGrads = Buffer<bf16>(m_env.ctx.ledger, Category::GradFull, static_cast<size_t>(unit.chunk * m_group));
    if (!m_env.ctx.meta()) std::memset(static_cast<void*>(m_fullGrads.data()), 0, m_fullGrads.bytes());  // the padding
    return m_fullGrads.data();
  }
  void accumulate(int segment, int) override {
    // Each microbatch's gradients are reduce-scattered at once (FSDP without
    // no_sync, DeepSpeed's ZeRO-2 at every micro-step): the full gradient
    // lives for one backward, the shard accumulates.
    const size_t u = index(segment);
    const Unit& unit = m_units[u];
    RankContext& ctx = m_env.ctx;
    Buffer<bf16> reduced(ctx.ledger, Category::Bucket, static_cast<size_t>(unit.chunk));
    CollectiveTag tag;
    tag.unit = static_cast<int>(u);
    tag.block = segment;
    reduceGroup().reduceScatter(m_fullGrads.data(), reduced.data(), static_cast<size_t>(unit.chunk), DType::BF16, tag,
                                Lane::Reduce);
    m_fullGrads.reset();
    // hsdp: the shard group's sum, summed again over the replicas.
    if (m_env.replicate) m_env.replicate->allReduce(reduced.data(), reduced.size(), DType::BF16, tag, Lane::Reduce);
    if (!ctx.meta())
      cpu::addBf16InPlace(m_gradShard.data() + unit.shard_offset, reduced.data(), static_cast<size_t>(unit.chunk));
  }

  void finishStep(int step) override {
    RankContext& ctx = m_env.ctx;
    const auto n = static_cast<size_t>(m_shardElements);
    if (!ctx.meta()) ctx.ops().scaleBf16(m_gradShard.data(), 1.0f / float(m_microbatches * m_env.dp_size), n);
    ctx.chargeMemory(4.0 * double(n));
    Buffer<bf16> updated;
    if (!m_shardParams) updated = Buffer<bf16>(ctx.ledger, Category::Workspace, n);
    {
      ctx.gatePoint(EventKind::OptimizerStep);
      ScopedEvent scope(ctx, Lane::Compute, EventKind::OptimizerStep);
      if (!ctx.meta())
        ctx.ops().adamStep(m_master.data(), m_adamM.data(), m_adamV.data(), m_gradShard.data(),
                           m_shardParams ? m_paramShard.data() : updated.data(), n, stageAdam(m_env.config),
                           step + 1);
      ctx.chargeMemory(kAdamBytesPerElement * double(n));
    }
    if (m_shardParams) return;
    // zero2: every rank's updated shard of each unit, gathered into the whole parameters.
    ctx.gatePoint(EventKind::AllGather);
    for (size_t u = 0; u < m_units.size(); ++u) {
      CollectiveTag tag;
      tag.unit = static_cast<int>(u);
      tag.block = m_segments[u].segment;
      m_env.world.allGather(updated.data() + m_units[u].shard_offset, m_params.data() + m_units[u].padded_offset,
                            static_cast<size_t>(m_units[u].chunk), DType::BF16, tag, Lane::Comm);
    }
  }

  void copyOwnedMaster(std::vector<float>& full) const override {
    std::vector<float> master(m_master.size());
    m_env.ctx.ops().download(master.data(), m_master.data(), m_master.bytes());
    for (size_t u = 0; u < m_segments.size(); ++u)
      for (int64_t i = 0; i < m_units[u].chunk; ++i) {
        const int64_t element = m_groupRank * m_units[u].chunk + i;
        if (element < m_segments[u].elements)
          full[static_cast<size_t>(m_segments[u].spec_offset + element)] = master[static_cast<size_t>(m_units[u].shard_offset + i)];
      }
  }

  int64_t paddingElements() const override { return m_padding; }
  // The padding's share of what a rank shards: 16/G bytes per element, or
  // ZeRO-2's 14/D beside its whole (padded) bf16 parameters.
  int64_t paddingStateBytes() const override {
    return m_shardParams ? 16 * m_padding / m_group : 14 * m_padding / m_group + 2 * m_padding;
  }

 private:
  struct Unit {
    int64_t shard_offset = 0;   // into this rank's shard buffers
    int64_t chunk = 0;          // elements per rank
    int64_t padded_offset = 0;  // zero2: into the whole padded parameters
  };
  size_t index(int segment) const {
    for (size_t u = 0; u < m_segments.size(); ++u)
      if (m_segments[u].segment == segment) return u;
    throw RunError("pipeline: this stage holds no segment " + std::to_string(segment));
  }
  // zero3/fsdp shard over the whole axis (its world); hsdp over its shard group.
  bool hybrid() const { return m_env.config.strategy == Strategy::Hsdp; }
  ProcessGroup& gatherGroup() { return hybrid() ? *m_env.gather : m_env.world; }
  ProcessGroup& reduceGroup() { return hybrid() ? *m_env.reduce : m_env.world; }

  RankEnv& m_env;
  std::vector<StageSegment> m_segments;
  const int m_microbatches;
  const bool m_shardParams;
  const int m_group, m_groupRank;
  std::vector<Unit> m_units;
  int64_t m_shardElements = 0, m_paddedElements = 0, m_padding = 0;
  Buffer<bf16> m_params;  // zero2: whole, each unit padded to a multiple of D
  Buffer<bf16> m_paramShard, m_gradShard, m_fullGrads;
  Buffer<float> m_master, m_adamM, m_adamV;
  std::vector<Buffer<bf16>> m_gathered;  // per segment, while its pass runs
};

}  // namespace

std::unique_ptr<StageState> makeStageState(RankEnv& env, std::vector<StageSegment> segments, int microbatches) {
  if (env.config.isSharded() || env.config.strategy == Strategy::Zero2)
    return std::make_unique<ShardedStageState>(env, std::move(segments), microbatches);
  return std::make_unique<ReplicatedStageState>(env, std::move(segments), microbatches);
}

}  // namespace shardscope
