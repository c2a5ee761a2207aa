#include "parallel/tensor_parallel.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cpu_kernels.h"
#include "memory/buffer.h"

namespace shardscope {

TensorParallelLayout::TensorParallelLayout(const ModelSpec& global, const ModelSpec& local, int tp_rank)
    : m_global(global), m_tpRank(tp_rank) {
  const int t = tp_rank;
  for (size_t i = 0; i < global.params().size(); ++i) {
    const ParamInfo& g = global.params()[i];
    const ParamInfo& l = local.params()[i];
    if (l.split == TpSplit::None) {
      m_spans.push_back({l.offset, g.offset, g.numel(), true});
      m_whole += g.numel();
      continue;
    }
    const bool thirds = l.split == TpSplit::Rows3 || l.split == TpSplit::Cols3;
    const bool rows = l.split == TpSplit::Rows || l.split == TpSplit::Rows3;
    const int parts = thirds ? 3 : 1;
    if ((rows ? g.rows : g.cols) != (rows ? l.rows : l.cols) * local.tp() || (rows ? l.rows : l.cols) % parts != 0)
      throw std::invalid_argument("TensorParallelLayout: " + g.name + " does not split evenly " +
                                  std::to_string(local.tp()) + " ways");
    if (rows) {
      // Row blocks: part j of the slice is rows [j·R/parts + t·Rl/parts, ...) of the full tensor.
      const int64_t part_rows = l.rows / parts, full_part_rows = g.rows / parts;
      for (int j = 0; j < parts; ++j)
        m_spans.push_back({l.offset + j * part_rows * l.cols, g.offset + (j * full_part_rows + t * part_rows) * g.cols,
                           part_rows * l.cols, false});
    } else {
      const int64_t part_cols = l.cols / parts, full_part_cols = g.cols / parts;
      for (int j = 0; j < parts; ++j)
        m_spans.push_back({l.offset + j * part_cols, g.offset + j * full_part_cols + t * part_cols, part_cols, false,
                           l.rows, l.cols, g.cols});
    }
  }
}

void TensorParallelLayout::slice(const float* global, float* local) const {
  for (const Span& s : m_spans)
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t i = 0; i < s.count; ++i)
        local[s.local + r * s.local_stride + i] = global[s.global + r * s.global_stride + i];
}

TensorParallelSplit tensorParallelSplit(const ModelSpec& global, const ModelSpec& local) {
  TensorParallelSplit split;
  for (size_t i = 0; i < global.params().size(); ++i)
    if (local.params()[i].split == TpSplit::None) split.whole_elements += global.params()[i].numel();
  split.slice_elements = local.numParams();
  return split;
}

TensorParallelGroup::TensorParallelGroup(RankContext& ctx, ProcessGroup& group, int segments)
    : m_ctx(ctx), m_group(group), m_forward(static_cast<size_t>(segments), 0),
      m_backward(static_cast<size_t>(segments), 0) {}

void TensorParallelGroup::beginStep() {
  m_group.resetStepBytes();
  std::fill(m_forward.begin(), m_forward.end(), 0);
  std::fill(m_backward.begin(), m_backward.end(), 0);
}

namespace {

// The op the collective interrupts: its piece so far ends here, the rest
// begins when the collective is done.
class Interrupt {
 public:
  Interrupt() : m_op(ScopedEvent::open()) {
    if (m_op) m_op->pause();
  }
  ~Interrupt() {
    if (m_op) m_op->resume();
  }
  Interrupt(const Interrupt&) = delete;
  Interrupt& operator=(const Interrupt&) = delete;
  int32_t op() const { return m_op ? m_op->event().op : -1; }

 private:
  ScopedEvent* m_op;
};

CollectiveTag tagFor(int segment, int32_t op) {
  CollectiveTag tag;
  tag.block = segment;
  tag.dep = op;
  return tag;
}

}  // namespace

void TensorParallelGroup::allReduceActivation(float* data, size_t n, int segment, bool backward, double flops_done) {
  m_ctx.chargeComputeUpTo(flops_done);  // the collective starts where the op's math so far ends
  Interrupt op;
  const int64_t before = m_group.stepBytes().all_reduce;
  if (m_ctx.meta() || !data) {
    m_group.allReduce(nullptr, n, DType::BF16, tagFor(segment, op.op()), Lane::Compute);
  } else {
    Buffer<bf16> wire(m_ctx.ledger, Category::Workspace, n);
    cpu::f32ToBf16(data, wire.data(), n);
    m_group.allReduce(wire.data(), n, DType::BF16, tagFor(segment, op.op()), Lane::Compute);
    cpu::bf16ToF32(wire.data(), data, n);
  }
  (backward ? m_backward : m_forward)[static_cast<size_t>(segment)] += m_group.stepBytes().all_reduce - before;
}

void TensorParallelGroup::reduceScatterActivation(const float* full, float* chunk, size_t n, int segment,
                                                  bool backward, double flops_done) {
  m_ctx.chargeComputeUpTo(flops_done);
  Interrupt op;
  const int64_t before = m_group.stepBytes().reduce_scatter;
  const size_t part = n / static_cast<size_t>(size());
  if (m_ctx.meta() || !full) {
    m_group.reduceScatter(nullptr, nullptr, part, DType::BF16, tagFor(segment, op.op()), Lane::Compute);
  } else {
    Buffer<bf16> wire(m_ctx.ledger, Category::Workspace, n), mine(m_ctx.ledger, Category::Workspace, part);
    cpu::f32ToBf16(full, wire.data(), n);
    m_group.reduceScatter(wire.data(), mine.data(), part, DType::BF16, tagFor(segment, op.op()), Lane::Compute);
    cpu::bf16ToF32(mine.data(), chunk, part);
  }
  (backward ? m_backward : m_forward)[static_cast<size_t>(segment)] += m_group.stepBytes().reduce_scatter - before;
}

void TensorParallelGroup::allGatherActivation(const float* chunk, float* full, size_t n, int segment, bool backward,
                                              double flops_done) {
  m_ctx.chargeComputeUpTo(flops_done);
  Interrupt op;
  const int64_t before = m_group.stepBytes().all_gather;
  const size_t part = n / static_cast<size_t>(size());
  if (m_ctx.meta() || !chunk) {
    m_group.allGather(nullptr, nullptr, part, DType::BF16, tagFor(segment, op.op()), Lane::Compute);
  } else {
    // Every chunk arrives through bf16, this rank's own too: the group holds one identical tensor.
    Buffer<bf16> mine(m_ctx.ledger, Category::Workspace, part), wire(m_ctx.ledger, Category::Workspace, n);
    cpu::f32ToBf16(chunk, mine.data(), part);
    m_group.allGather(mine.data(), wire.data(), part, DType::BF16, tagFor(segment, op.op()), Lane::Compute);
    cpu::bf16ToF32(wire.data(), full, n);
  }
  (backward ? m_backward : m_forward)[static_cast<size_t>(segment)] += m_group.stepBytes().all_gather - before;
}

void TensorParallelGroup::allReduceF32(float* data, size_t n, int segment) {
  Interrupt op;
  m_group.allReduce(m_ctx.meta() ? nullptr : data, n, DType::F32, tagFor(segment, op.op()), Lane::Compute);
}

void TensorParallelGroup::allGatherF32(const float* in, float* out, size_t n, int segment) {
  Interrupt op;
  m_group.allGather(m_ctx.meta() ? nullptr : in, m_ctx.meta() ? nullptr : out, n, DType::F32,
                    tagFor(segment, op.op()), Lane::Compute);
}

}  // namespace shardscope
