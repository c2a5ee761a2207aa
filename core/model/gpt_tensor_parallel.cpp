// The GPT model's tensor-parallel pieces outside the block (see gpt_model.h):
// the vocab-parallel embedding and cross-entropy, and sequence parallelism's
// row chunks, their gather and scatter, and the replicated parameters'
// gradient sum.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/cpu_kernels.h"
#include "model/gpt_model.h"

namespace shardscope {

TensorParallelComm& GptModel::tensorParallel() {
  if (!m_tp) throw std::logic_error("GptModel: a tensor-parallel slice needs its TP group (setTensorParallel)");
  return *m_tp;
}

// Contiguous chunks of the B·T rows (validate: T_tp divides the sequence, so the rows too).
int GptModel::localRows() const {
  const int rows = m_batch * m_spec.shape().seq;
  return sequenceParallel() ? rows / m_spec.tp() : rows;
}

int GptModel::firstLocalRow() const { return sequenceParallel() ? m_tp->rank() * localRows() : 0; }

Buffer<float> GptModel::gatherRows(const float* chunk, int segment, bool backward, double flops_done) {
  const size_t n = static_cast<size_t>(m_batch) * m_spec.shape().seq * m_spec.shape().hidden;
  Buffer<float> whole = workspace(n);
  tensorParallel().allGatherActivation(chunk, whole.data(), n, segment, backward, flops_done);
  return whole;
}

void GptModel::scatterRows(const float* whole, float* chunk, int segment, bool backward, double flops_done) {
  const size_t n = static_cast<size_t>(m_batch) * m_spec.shape().seq * m_spec.shape().hidden;
  tensorParallel().reduceScatterActivation(whole, chunk, n, segment, backward, flops_done);
}

// Megatron-LM sums these over the TP group once per step; here each
// microbatch's, right before the data-parallel strategy takes it: the same sum.
void GptModel::emitGrad(int param, float* grad, bf16* g_segment, int64_t seg_offset,
                        const std::function<void(int)>& onReady) {
  const ParamInfo& p = m_spec.params()[param];
  if (sequenceParallel() && p.split == TpSplit::None)
    tensorParallel().allReduceF32(grad, static_cast<size_t>(p.numel()), p.segment);
  cpu::f32ToBf16(grad, g_segment + (p.offset - seg_offset), static_cast<size_t>(p.numel()));
  if (onReady) onReady(param);
}

// Vocab-parallel embedding (Megatron-LM): this TP rank holds rows
// [rank·V/T, (rank+1)·V/T) of wte; a token outside them contributes zeros, the
// group's sum is the full lookup (sequence parallel: this rank's chunk of it).
// wpe is whole on every rank, added after.
void GptModel::forwardEmbedTensorParallel(const float* wte, const float* wpe) {
  const ModelShape& shape = m_spec.shape();
  const int B = m_batch, T = shape.seq, D = shape.hidden, N = B * T;
  const int Vl = shape.vocab / m_spec.tp(), lo = tensorParallel().rank() * Vl;
  const bool sp = sequenceParallel();
  Buffer<float> lookup = sp ? workspace(static_cast<size_t>(N) * D) : activation(static_cast<size_t>(N) * D);
  for (int n = 0; n < N; ++n) {
    float* xr = lookup.data() + static_cast<size_t>(n) * D;
    const int row = m_tokens[n] - lo;
    if (row >= 0 && row < Vl) std::memcpy(xr, wte + static_cast<size_t>(row) * D, sizeof(float) * D);
    else std::memset(xr, 0, sizeof(float) * D);
  }
  Buffer<float> x;
  if (sp) {
    x = activation(static_cast<size_t>(localRows()) * D);
    scatterRows(lookup.data(), x.data(), 0, false, forwardFlops(0));
  } else {
    tensorParallel().allReduceActivation(lookup.data(), lookup.size(), 0, false, forwardFlops(0));
    x = std::move(lookup);
  }
  const int first = firstLocalRow();
  for (int i = 0; i < localRows(); ++i)
    cpu::addInPlace(x.data() + static_cast<size_t>(i) * D, wpe + static_cast<size_t>((first + i) % T) * D, D);
  m_cur = std::move(x);
}

// Vocab-parallel cross-entropy: each TP rank has logits for its V/T tokens.
// The row max (all-gathered), the softmax denominator and the target's logit
// (one all-reduce of both) make every rank's loss the full vocabulary's; the
// gradient stays local: (softmax - onehot) / N on this rank's columns.
double GptModel::lossTensorParallel() {
  const int N = m_batch * m_spec.shape().seq, tp = m_spec.tp(), Vl = m_spec.shape().vocab / tp;
  const int lo = tensorParallel().rank() * Vl;
  const int segment = m_spec.shape().layers + 1;
  m_grad = std::move(m_cur);
  float* z = m_grad.data();
  Buffer<float> local_max = workspace(static_cast<size_t>(N));
  for (int n = 0; n < N; ++n) {
    const float* row = z + static_cast<size_t>(n) * Vl;
    float m = row[0];
    for (int v = 1; v < Vl; ++v) m = std::max(m, row[v]);
    local_max[n] = m;
  }
  Buffer<float> all_max = workspace(static_cast<size_t>(N) * tp);  // chunk r: TP rank r's maxima
  tensorParallel().allGatherF32(local_max.data(), all_max.data(), static_cast<size_t>(N), segment);
  Buffer<float> stats = workspace(2 * static_cast<size_t>(N));  // [sum exp (N) | target logit (N)]
  for (int n = 0; n < N; ++n) {
    float m = all_max[n];
    for (int r = 1; r < tp; ++r) m = std::max(m, all_max[static_cast<size_t>(r) * N + n]);
    local_max[n] = m;
    float* row = z + static_cast<size_t>(n) * Vl;
    const int t = m_targets[n] - lo;
    stats[static_cast<size_t>(N) + n] = t >= 0 && t < Vl ? row[t] : 0.0f;
    float sum = 0.0f;
    for (int v = 0; v < Vl; ++v) {
      row[v] = std::exp(row[v] - m);
      sum += row[v];
    }
    stats[n] = sum;
  }
  tensorParallel().allReduceF32(stats.data(), stats.size(), segment);
  double loss = 0.0;
  const float inv_n = 1.0f / static_cast<float>(N);
  for (int n = 0; n < N; ++n) {
    const float sum = stats[n];
    loss += std::log(static_cast<double>(sum)) + local_max[n] - stats[static_cast<size_t>(N) + n];
    float* row = z + static_cast<size_t>(n) * Vl;
    for (int v = 0; v < Vl; ++v) row[v] = row[v] / sum * inv_n;
    const int t = m_targets[n] - lo;
    if (t >= 0 && t < Vl) row[t] -= inv_n;
  }
  return loss / N;
}

}  // namespace shardscope
