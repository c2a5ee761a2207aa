// CPU reference kernels: fp32 math over bf16 storage, as mixed precision does on
// GPUs (bf16 in memory, fp32 accumulation). Shapes are row-major, given as
// (rows, cols) next to each pointer. GEMMs go through OpenBLAS; the engine calls
// these from one thread per stream, so BLAS must run single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/bf16.h"

namespace shardscope::cpu {

// Force single-threaded BLAS (one thread per rank stream) and stop the thread
// pool OpenBLAS started at load. The programs call it first thing in main.
// Safe to call repeatedly.
void initBlasSingleThreaded();

void bf16ToF32(const bf16* in, float* out, size_t n);
void f32ToBf16(const float* in, bf16* out, size_t n);

// C(M,N) = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
// A is (M,K) or (K,M) when transA; B is (K,N) or (N,K) when transB.
void gemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C);

// y(rows, cols) += bias(cols) broadcast over rows.
void addBias(float* y, const float* bias, int rows, int cols);
// dbias(cols) = sum over rows of dy(rows, cols)  (overwrites).
void biasGrad(const float* dy, float* dbias, int rows, int cols);

// LayerNorm over the last dim. mean, rstd: (rows) saved for backward.
void layerNormForward(const float* x, const float* gamma, const float* beta, float* y,
                      float* mean, float* rstd, int rows, int cols, float eps = 1e-5f);
// dx(rows, cols) overwritten; dgamma, dbeta (cols) overwritten.
void layerNormBackward(const float* dy, const float* x, const float* gamma, const float* mean,
                       const float* rstd, float* dx, float* dgamma, float* dbeta, int rows,
                       int cols);

// GELU, tanh approximation (PyTorch approximate="tanh").
void geluForward(const float* x, float* y, size_t n);
void geluBackward(const float* x, const float* dy, float* dx, size_t n);  // dx overwritten

// Mean squared error over all rows*cols elements, scaled by 1/total_rows so that
// per-rank gradients on a slice of the batch sum (after the mean all-reduce) to
// the full-batch gradient: loss = sum((pred-target)^2) / (total_rows * cols).
// dpred(rows, cols) overwritten with d loss / d pred. Returns the loss (fp64 sum).
double mseLoss(const float* pred, const float* target, float* dpred, int rows, int cols,
               int total_rows);

struct AdamConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;  // AdamW-style decoupled decay
};
// One AdamW step on an fp32 master shard from a bf16 gradient shard; step >= 1.
// Writes the updated weights rounded to bf16 into param_out (may be null).
void adamStep(float* master, float* m, float* v, const bf16* grad, bf16* param_out, size_t n,
              const AdamConfig& config, int step);
// The same from an fp32 gradient (--grad-dtype fp32, Megatron-LM's main_grad).
void adamStep(float* master, float* m, float* v, const float* grad, bf16* param_out, size_t n,
              const AdamConfig& config, int step);

// Elementwise helpers used by the model and the collectives.
void addInPlace(float* y, const float* x, size_t n);           // y += x
void addBf16InPlace(bf16* y, const bf16* x, size_t n);         // y += x, fp32 math, RNE
void scaleBf16InPlace(bf16* y, float s, size_t n);             // y *= s
void scaleInPlace(float* y, float s, size_t n);                // y *= s
void bf16ToF32Scaled(const bf16* x, float s, float* y, size_t n);  // y = s * x
void addBf16ToF32(float* y, const bf16* x, size_t n);          // y += x (an fp32 accumulator)

}  // namespace shardscope::cpu
