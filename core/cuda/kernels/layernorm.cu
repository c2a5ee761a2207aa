// LayerNorm forward/backward: one warp per row (rows are short enough, C <= a
// few thousand, that a warp loops over them), two passes like the CPU kernel
// (mean, then centred variance). Backward runs the column sums (dgamma, dbeta)
// before dx, so dx may overwrite dy.
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/kernels/column_sum.cuh"
#include "cuda/kernels/device_math.cuh"

namespace shardscope::gpu {
namespace {

using namespace detail;

template <class T>
__global__ void layerNormForwardKernel(const T* x, const T* gamma, const T* beta, T* y,
                                       float* mean, float* rstd, int rows, int cols, float eps) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* xr = x + static_cast<size_t>(row) * cols;
  T* yr = y + static_cast<size_t>(row) * cols;
  const float inv_cols = 1.0f / static_cast<float>(cols);
  float sum = 0.0f;
  for (int c = lane; c < cols; c += 32) sum += load(xr + c);
  const float mu = warpSum(sum) * inv_cols;
  float sq = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    const float d = load(xr + c) - mu;
    sq += d * d;
  }
  const float rs = 1.0f / sqrtf(warpSum(sq) * inv_cols + eps);  // biased variance, as PyTorch
  for (int c = lane; c < cols; c += 32) {
    store(yr + c, (load(xr + c) - mu) * rs * load(gamma + c) + load(beta + c));
  }
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

template <class T>
__global__ void layerNormBackwardDxKernel(const T* dy, const T* x, const T* gamma,
                                          const float* mean, const float* rstd, T* dx, int rows,
                                          int cols) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const size_t off = static_cast<size_t>(row) * cols;
  const float mu = mean[row];
  const float rs = rstd[row];
  float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    const float norm = (load(x + off + c) - mu) * rs;
    const float dnorm = load(gamma + c) * load(dy + off + c);
    dnorm_sum += dnorm;
    dnorm_norm_sum += dnorm * norm;
  }
  const float inv_cols = 1.0f / static_cast<float>(cols);
  const float dnorm_mean = warpSum(dnorm_sum) * inv_cols;
  const float dnorm_norm_mean = warpSum(dnorm_norm_sum) * inv_cols;
  for (int c = lane; c < cols; c += 32) {
    const float norm = (load(x + off + c) - mu) * rs;
    const float dnorm = load(gamma + c) * load(dy + off + c);
    store(dx + off + c, (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rs);
  }
}

// dgamma += dy * norm, dbeta += dy for one (row, column).
template <class T>
struct LayerNormParamGradTerm {
  const T* dy;
  const T* x;
  const float* mean;
  const float* rstd;
  int cols;
  __device__ void operator()(int r, int c, float& dgamma, float& dbeta) const {
    const size_t i = static_cast<size_t>(r) * cols + c;
    const float g = load(dy + i);
    dgamma += g * ((load(x + i) - mean[r]) * rstd[r]);
    dbeta += g;
  }
};

void checkShape(int rows, int cols, const char* kernel) {
  requireNonNegative(rows, "rows", kernel);
  requirePositive(cols, "cols", kernel);
}

}  // namespace

template <class T>
void layerNormForward(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd,
                      int rows, int cols, float eps, StreamHandle stream) {
  checkShape(rows, cols, "layerNormForward");
  if (rows == 0) return;
  const unsigned blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  layerNormForwardKernel<<<blocks, kThreads, 0, stream>>>(x, gamma, beta, y, mean, rstd, rows,
                                                          cols, eps);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void layerNormBackward(const T* dy, const T* x, const T* gamma, const float* mean,
                       const float* rstd, T* dx, T* dgamma, T* dbeta, int rows, int cols,
                       StreamHandle stream) {
  checkShape(rows, cols, "layerNormBackward");
  launchColumnSum(LayerNormParamGradTerm<T>{dy, x, mean, rstd, cols}, rows, cols, dgamma, dbeta,
                  stream);
  if (rows == 0) return;
  const unsigned blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  layerNormBackwardDxKernel<<<blocks, kThreads, 0, stream>>>(dy, x, gamma, mean, rstd, dx, rows,
                                                             cols);
  CUDA_CHECK_LAUNCH();
}

#define SHARDSCOPE_INSTANTIATE(T)                                                              \
  template void layerNormForward<T>(const T*, const T*, const T*, T*, float*, float*, int, int, \
                                    float, StreamHandle);                                     \
  template void layerNormBackward<T>(const T*, const T*, const T*, const float*, const float*, \
                                     T*, T*, T*, int, int, StreamHandle);
SHARDSCOPE_INSTANTIATE_FOR_STORAGE(SHARDSCOPE_INSTANTIATE)
#undef SHARDSCOPE_INSTANTIATE

}  // namespace shardscope::gpu
