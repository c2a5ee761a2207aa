// Tensor parallelism's side of one rank (Megatron-LM). TP groups are T
// consecutive ranks (inside a node when T <= GPUs per node); the ranks with the
// same place in their TP group form the data-parallel axis the strategy runs
// along. Two parts:
//  - TensorParallelLayout: where this rank's slice of each parameter sits in
//    the full model, to take its initial weights from the full ones and to
//    report its trained weights back into them;
//  - TensorParallelGroup: the TP group's collectives for the model slice, on
//    the compute stream and lane: the op that issues one is split around it
//    (the collective blocks compute), and the bytes of each segment's forward
//    and backward all-reduces are measured for the summary.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/process_group.h"
#include "model/model_spec.h"
#include "model/tensor_parallel_comm.h"
#include "rank/comm_bytes.h"
#include "rank/rank_context.h"

namespace shardscope {

class TensorParallelLayout {
 public:
  // global: the full model's table; local: ModelSpec(shape, T), the slice's.
  TensorParallelLayout(const ModelSpec& global, const ModelSpec& local, int tp_rank);

  int tpRank() const { return m_tpRank; }
  const ModelSpec& global() const { return m_global; }
  // local = this rank's slice of global (flat fp32 parameter vectors).
  void slice(const float* global, float* local) const;
  // global = local over the slice. Parameters every TP rank holds whole are
  // written by TP rank 0 only (the others hold the same values).
  // written(i): whether local element i holds a value (false: skip it).
  template <class Written>
  void unslice(const float* local, float* global, Written written) const {
    for (const Span& s : m_spans) {
      if (s.whole && m_tpRank != 0) continue;
      for (int64_t r = 0; r < s.rows; ++r) {
        const int64_t l = s.local + r * s.local_stride, g = s.global + r * s.global_stride;
        for (int64_t i = 0; i < s.count; ++i)
          if (written(l + i)) global[g + i] = local[l + i];
      }
    }
  }
  // Elements of the full model every TP rank holds whole (norms, row-parallel
  // biases, position embeddings); the rest is split T ways.
  int64_t wholeElements() const { return m_whole; }

 private:
  // `rows` runs of `count` elements, each `stride` further on (a row-parallel
  // weight's columns are one run per row).
  struct Span {
    int64_t local = 0, global = 0, count = 0;
    bool whole = false;
    int64_t rows = 1, local_stride = 0, global_stride = 0;
  };
  const ModelSpec& m_global;
  std::vector<Span> m_spans;
  int m_tpRank = 0;
  int64_t m_whole = 0;
};

// Whole-model figures of a TP split, from the tables alone (no rank needed).
struct TensorParallelSplit {
  int64_t whole_elements = 0;  // held whole by every TP rank
  int64_t slice_elements = 0;  // one TP rank's parameters (its slice plus the whole ones)
};
TensorParallelSplit tensorParallelSplit(const ModelSpec& global, const ModelSpec& local);

class TensorParallelGroup final : public TensorParallelComm {
 public:
  TensorParallelGroup(RankContext& ctx, ProcessGroup& group, int segments);

  int size() const override { return m_group.groupSize(); }
  int rank() const override { return m_group.groupRank(); }
  void allReduceActivation(float* data, size_t n, int segment, bool backward, double flops_done) override;
  void reduceScatterActivation(const float* full, float* chunk, size_t n, int segment, bool backward,
                               double flops_done) override;
  void allGatherActivation(const float* chunk, float* full, size_t n, int segment, bool backward,
                           double flops_done) override;
  void allReduceF32(float* data, size_t n, int segment) override;
  void allGatherF32(const float* in, float* out, size_t n, int segment) override;

  // Host thread, before a step's work is issued: zero the step's counters.
  void beginStep();
  // After the step (its compute stream drained): bytes this rank sent in the
  // TP group, in total and per segment for the activation all-reduces.
  CommBytes stepBytes() const { return m_group.stepBytes(); }
  const std::vector<int64_t>& forwardBytes() const { return m_forward; }
  const std::vector<int64_t>& backwardBytes() const { return m_backward; }

 private:
  RankContext& m_ctx;
  ProcessGroup& m_group;
  std::vector<int64_t> m_forward, m_backward;  // per segment, last step
};

}  // namespace shardscope
