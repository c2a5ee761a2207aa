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

// zero3/fsdp: each segment is an FSDP unit sharded over the axis (padded to
// a multiple of D); a rank holds its shard of the parameters, gradients,
// master and Adam state: 16/D bytes per parameter of the stage.
class ShardedStageState final : public StageState {
 public:
  ShardedStageState(RankEnv& env, std::vector<StageSegment> segments, int microbatches)
      : m_env(env), m_segments(std::move(segments)), m_microbatches(microbatches) {
    const int64_t dp = env.dp_size;
    for (const StageSegment& s : m_segments) {
      const int64_t chunk = (s.elements + dp - 1) / dp;
      m_units.push_back({m_shardElements, chunk});
      m_shardElements += chunk;
      m_padding += chunk * dp - s.elements;
    }
    m_gathered.resize(m_segments.size());
  }

  void setup(const std::vector<float>& stage) override {
    MemoryLedger& ledger = m_env.ctx.ledger;
    const auto n = static_cast<size_t>(m_shardElements);
    m_paramShard = Buffer<bf16>(ledger, Category::Param, n);
    m_gradShard = Buffer<bf16>(ledger, Category::Grad, n);
    m_master = Buffer<float>(ledger, Category::Master, n);
    m_adamM = Buffer<float>(ledger, Category::AdamM, n);
    m_adamV = Buffer<float>(ledger, Category::AdamV, n);
    if (m_env.ctx.meta()) return;
    std::vector<float> master(n, 0.0f);
    for (size_t u = 0; u < m_segments.size(); ++u)
      for (int64_t i = 0; i < m_units[u].chunk; ++i) {
        const int64_t element = m_env.dp_rank * m_units[u].chunk + i;  // within the segment
        if (element < m_segments[u].elements)
          master[static_cast<size_t>(m_units[u].shard_offset + i)] = stage[static_cast<size_t>(m_segments[u].local_offset + element)];
      }
    std::memcpy(m_master.data(), master.data(), m_master.bytes());
    cpu::f32ToBf16(master.data(), m_paramShard.data(), n);
  }

  void beginStep() override {
    if (!m_env.ctx.meta()) std::memset(static_cast<void*>(m_gradShard.data()), 0, m_gradShard.bytes());
    m_env.ctx.chargeMemory(double(m_gradShard.bytes()));
  }

  const bf16* acquireWeights(int segment, int, bool) override {
    const size_t u = index(segment);
    const Unit& unit = m_units[u];
    RankContext& ctx = m_env.ctx;
    m_gathered[u] = Buffer<bf16>(ctx.ledger, Category::Gathered, static_cast<size_t>(unit.chunk * m_env.dp_size));
    CollectiveTag tag;
    tag.unit = static_cast<int>(u);
    tag.block = segment;
    m_env.world.allGather(m_paramShard.data() + unit.shard_offset, m_gathered[u].data(), static_cast<size_t>(unit.chunk),
                          DType::BF16, tag, Lane::Gather);
    return m_gathered[u].data();
  }
  void releaseWeights(int segment) override { m_gathered[index(segment)].reset(); }

  bf16* microbatchGrads(int segment) override {
    const Unit& unit = m_units[index(segment)];
    m_fullGrads = Buffer<bf16>(m_env.ctx.ledger, Category::GradFull, static_cast<size_t>(unit.chunk * m_env.dp_size));
    if (!m_env.ctx.meta()) std::memset(static_cast<void*>(m_fullGrads.data()), 0, m_fullGrads.bytes());  // the padding
    return m_fullGrads.data();
  }
  void accumulate(int segment, int) override {
    // Each microbatch's gradients are reduce-scattered at once (FSDP without
    // no_sync): the full gradient lives for one backward, the shard accumulates.
    const size_t u = index(segment);
    const Unit& unit = m_units[u];
    RankContext& ctx = m_env.ctx;
    Buffer<bf16> reduced(ctx.ledger, Category::Bucket, static_cast<size_t>(unit.chunk));
    CollectiveTag tag;
    tag.unit = static_cast<int>(u);
    tag.block = segment;
    m_env.world.reduceScatter(m_fullGrads.data(), reduced.data(), static_cast<size_t>(unit.chunk), DType::BF16, tag,
                              Lane::Reduce);
    m_fullGrads.reset();
    if (!ctx.meta())
      cpu::addBf16InPlace(m_gradShard.data() + unit.shard_offset, reduced.data(), static_cast<size_t>(unit.chunk));
  }

  void finishStep(int step) override {
    RankContext& ctx = m_env.ctx;
    const auto n = static_cast<size_t>(m_shardElements);
    if (!ctx.meta()) ctx.ops().scaleBf16(m_gradShard.data(), 1.0f / float(m_microbatches * m_env.dp_size), n);
    ctx.chargeMemory(4.0 * double(n));
    ctx.gatePoint(EventKind::OptimizerStep);
    ScopedEvent scope(ctx, Lane::Compute, EventKind::OptimizerStep);
    if (!ctx.meta())
      ctx.ops().adamStep(m_master.data(), m_adamM.data(), m_adamV.data(), m_gradShard.data(), m_paramShard.data(), n,
                         stageAdam(m_env.config), step + 1);
    ctx.chargeMemory(kAdamBytesPerElement * double(n));
  }

  void copyOwnedMaster(std::vector<float>& full) const override {
    std::vector<float> master(m_master.size());
    m_env.ctx.ops().download(master.data(), m_master.data(), m_master.bytes());
    for (size_t u = 0; u < m_segments.size(); ++u)
      for (int64_t i = 0; i < m_units[u].chunk; ++i) {
        const int64_t element = m_env.dp_rank * m_units[u].chunk + i;
        if (element < m_segments[u].elements)
          full[static_cast<size_t>(m_segments[u].spec_offset + element)] = master[static_cast<size_t>(m_units[u].shard_offset + i)];
      }
  }

  int64_t paddingElements() const override { return m_padding; }
  int64_t paddingStateBytes() const override { return 16 * m_padding / m_env.dp_size; }

 private:
  struct Unit {
    int64_t shard_offset = 0;  // into this rank's shard buffers
    int64_t chunk = 0;         // elements per rank
  };
  size_t index(int segment) const {
    for (size_t u = 0; u < m_segments.size(); ++u)
      if (m_segments[u].segment == segment) return u;
    throw RunError("pipeline: this stage holds no segment " + std::to_string(segment));
  }

  RankEnv& m_env;
  std::vector<StageSegment> m_segments;
  const int m_microbatches;
  std::vector<Unit> m_units;
  int64_t m_shardElements = 0, m_padding = 0;
  Buffer<bf16> m_paramShard, m_gradShard, m_fullGrads;
  Buffer<float> m_master, m_adamM, m_adamV;
  std::vector<Buffer<bf16>> m_gathered;  // per segment, while its pass runs
};

}  // namespace

std::unique_ptr<StageState> makeStageState(RankEnv& env, std::vector<StageSegment> segments, int microbatches) {
  if (env.config.isSharded()) return std::make_unique<ShardedStageState>(env, std::move(segments), microbatches);
  return std::make_unique<ReplicatedStageState>(env, std::move(segments), microbatches);
}

}  // namespace shardscope
