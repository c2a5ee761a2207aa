// GPU kernels mirroring cpu_kernels.h / cpu_attention.h: bf16 or fp32 storage,
// fp32 math, row-major (rows, cols) shapes. Plain C++: no CUDA types beyond the
// opaque StreamHandle, so engine code includes it without CUDA headers. Every
// call is asynchronous on `stream`; pointers are device memory of the current
// device. Templates take T = float or bf16 (instantiated in kernels/*.cu; any
// other T fails to link). Sizes are checked on the host and throw
// std::invalid_argument naming the value; n == 0 / rows == 0 launches nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cuda/stream_handle.h"
#include "kernels/cpu_kernels.h"
#include "tensor/bf16.h"

namespace shardscope::gpu {

// Same rounding as shardscope::toBf16 (RNE), bit for bit.
void bf16ToF32(const bf16* in, float* out, size_t n, StreamHandle stream);
void f32ToBf16(const float* in, bf16* out, size_t n, StreamHandle stream);
// y(n) *= s, fp32 math, one RNE rounding (cpu::scaleBf16InPlace).
void scaleBf16(bf16* y, float s, size_t n, StreamHandle stream);

// y(rows, cols) += bias(cols) broadcast over rows.
template <class T>
void addBias(T* y, const T* bias, int rows, int cols, StreamHandle stream);
// dbias(cols) = sum over rows of dy(rows, cols), fp32 sums (overwrites).
template <class T>
void biasGrad(const T* dy, T* dbias, int rows, int cols, StreamHandle stream);
// out(n) = a + b; out may alias a or b (so y += x is residualAdd(y, y, x)).
template <class T>
void residualAdd(T* out, const T* a, const T* b, size_t n, StreamHandle stream);

// LayerNorm over the last dim; mean, rstd (rows) in fp32, saved for backward.
template <class T>
void layerNormForward(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd,
                      int rows, int cols, float eps, StreamHandle stream);
// dx (rows, cols), dgamma, dbeta (cols) overwritten; dx may alias dy.
template <class T>
void layerNormBackward(const T* dy, const T* x, const T* gamma, const float* mean,
                       const float* rstd, T* dx, T* dgamma, T* dbeta, int rows, int cols,
                       StreamHandle stream);

// GELU, tanh approximation (PyTorch approximate="tanh"); y / dx may alias x / dy.
template <class T>
void geluForward(const T* x, T* y, size_t n, StreamHandle stream);
template <class T>
void geluBackward(const T* x, const T* dy, T* dx, size_t n, StreamHandle stream);

// batch matrices (rows, cols): row i = softmax(scale * x[i, 0..i]), 0 after column
// i (rows <= cols). In place allowed.
template <class T>
void causalSoftmaxForward(const T* x, T* probs, int batch, int rows, int cols, float scale,
                          StreamHandle stream);
// dx(rows, cols) = probs * (dprobs - sum_j probs * dprobs); in place with dprobs allowed.
template <class T>
void softmaxBackward(const T* probs, const T* dprobs, T* dx, int rows, int cols,
                     StreamHandle stream);

// Token cross-entropy as cpu::crossEntropy, split so nothing syncs: row_loss(rows)
// = -log softmax(logits[r])[target[r]] / total_rows (sum it for the loss) and
// dlogits (rows, V) = (softmax - onehot) / total_rows (may alias logits). A target
// outside [0, V) makes that row's loss and gradient NaN (no exception on device).
template <class T>
void crossEntropy(const T* logits, const int32_t* targets, T* dlogits, float* row_loss, int rows,
                  int V, int total_rows, StreamHandle stream);
// MSE as cpu::mseLoss: row_loss(rows) = sum_c (pred - target)^2 / (total_rows * cols),
// dpred (rows, cols) = 2 (pred - target) / (total_rows * cols) (may alias pred).
template <class T>
void mseLoss(const T* pred, const T* target, T* dpred, float* row_loss, int rows, int cols,
             int total_rows, StreamHandle stream);
// *out = sum of x(n) in double, one block, fixed order (deterministic).
void sumToDouble(const float* x, size_t n, double* out, StreamHandle stream);

// ---- GPT embeddings and attention heads (embedding.cu, attention.cu, gpt_ops.cpp) ----

// out (batch, seq, C) = wte[tokens[b, t]] + wpe[t]; wte (V, C), wpe (>= seq, C). A
// token outside [0, V) makes its row NaN (no exception on device).
template <class T>
void embeddingForward(const int32_t* tokens, const T* wte, const T* wpe, T* out, int batch,
                      int seq, int C, int V, StreamHandle stream);
// dwpe (seq, C) = sum over b of dout (batch, seq, C) at [b, t], b ascending (overwrites).
template <class T>
void positionEmbeddingBackward(const T* dout, T* dwpe, int batch, int seq, int C,
                               StreamHandle stream);
// The batch's tokens grouped by value (host code), so the token-embedding gradient
// is a deterministic per-row gather instead of an atomic scatter: positions
// [offsets[v], offsets[v+1]) hold, ascending, the n with tokens[n] == v.
// offsets: V + 1 entries, positions: n. Throws std::invalid_argument for a token
// outside [0, V).
void buildTokenIndex(const int32_t* tokens, int n, int V, int32_t* offsets, int32_t* positions);
// dwte (V, C) row v = sum of dout (n, C) rows positions[offsets[v] .. offsets[v+1]),
// in that order, fp32; 0 for a token absent from the batch (overwrites every row).
template <class T>
void tokenEmbeddingBackward(const T* dout, const int32_t* offsets, const int32_t* positions,
                            T* dwte, int V, int C, StreamHandle stream);

// Heads contiguous for batched GEMMs, hs = C / NH (C % NH == 0):
//   x (batch, seq, groups*C) -> out (groups, batch, NH, seq, hs), plus bias
//   (groups*C) when not null (fp32 add, one rounding). groups = 3 splits qkv into
//   q | k | v; groups = 1 splits an attention output gradient.
template <class T>
void splitHeads(const T* x, const T* bias, T* out, int groups, int batch, int seq, int C, int NH,
                StreamHandle stream);
// The inverse permutation: x (groups, batch, NH, seq, hs) -> out (batch, seq, groups*C).
template <class T>
void mergeHeads(const T* x, T* out, int groups, int batch, int seq, int C, int NH,
                StreamHandle stream);

// One AdamW step, the same fp32 operations in the same order as cpu::adamStep
// (no fused multiply-add), so master, m and v match the CPU bit for bit.
// param_out may be null. Throws for step < 1.
void adamStep(float* master, float* m, float* v, const bf16* grad, bf16* param_out, size_t n,
              const cpu::AdamConfig& config, int step, StreamHandle stream);

// GEMM through cuBLASLt (default) or cublasGemmEx, bf16 inputs, fp32 accumulation.
enum class GemmPath { CublasLt, CublasGemmEx };

// Owns the cuBLAS(Lt) handles and a 32 MiB workspace on one device (created on
// the device current at construction). Not thread-safe: one per stream thread.
class BlasHandle {
 public:
  explicit BlasHandle(GemmPath path = GemmPath::CublasLt);
  ~BlasHandle();
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  GemmPath path() const;
  struct Impl;
  Impl& impl() { return *m_impl; }

 private:
  std::unique_ptr<Impl> m_impl;
};

// C(M,N) = alpha * op(A) * op(B) + beta * C, row-major as cpu::gemm: A is (M,K),
// or (K,M) when transA; B is (K,N), or (N,K) when transB.
void gemm(BlasHandle& blas, bool transA, bool transB, int M, int N, int K, float alpha,
          const bf16* A, const bf16* B, float beta, float* C, StreamHandle stream);
void gemm(BlasHandle& blas, bool transA, bool transB, int M, int N, int K, float alpha,
          const bf16* A, const bf16* B, float beta, bf16* C, StreamHandle stream);

// `batch` independent GEMMs as gemm(): matrix i of each operand starts stride
// elements after matrix i-1 (A + i * strideA, ...), each one contiguous with
// gemm()'s row-major shapes. One cuBLASLt strided-batch call (or
// cublasGemmStridedBatchedEx); batch == 1 is gemm().
void gemmStridedBatched(BlasHandle& blas, bool transA, bool transB, int M, int N, int K,
                        float alpha, const bf16* A, int64_t strideA, const bf16* B,
                        int64_t strideB, float beta, float* C, int64_t strideC, int batch,
                        StreamHandle stream);
void gemmStridedBatched(BlasHandle& blas, bool transA, bool transB, int M, int N, int K,
                        float alpha, const bf16* A, int64_t strideA, const bf16* B,
                        int64_t strideB, float beta, bf16* C, int64_t strideC, int batch,
                        StreamHandle stream);

// Causal self-attention as cpu::attentionForward (scores scaled by 1/sqrt(hs),
// hs = C / NH) on heads that splitHeads laid out, as batched GEMMs over the
// B * NH (sample, head) pairs (kernels/gpt_ops.cpp). Scores and probabilities
// are bf16 (fp32 inside the softmax and the GEMMs' accumulation).
//   qkvh: (3, B, NH, T, hs)  q | k | v, bias included
//   att:  (B, NH, T, T)      softmax probabilities, saved for backward
//   yh:   (B, NH, T, hs)     scratch the caller owns
//   out:  (B, T, C)          heads concatenated
void attentionForward(BlasHandle& blas, const bf16* qkvh, bf16* att, bf16* yh, bf16* out, int B,
                      int T, int C, int NH, StreamHandle stream);
// dqkv (B, T, 3C) = d loss / d qkv (overwritten) from dout (B, T, C). Scratch the
// caller owns: dyh (B, NH, T, hs), datt (B, NH, T, T), dqkvh (3, B, NH, T, hs).
void attentionBackward(BlasHandle& blas, const bf16* dout, const bf16* qkvh, const bf16* att,
                       bf16* dyh, bf16* datt, bf16* dqkvh, bf16* dqkv, int B, int T, int C,
                       int NH, StreamHandle stream);

}  // namespace shardscope::gpu
