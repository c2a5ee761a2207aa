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

}  // namespace shardscope::gpu
