// Causal softmax forward and softmax backward: one warp per row. Forward
// multiplies by 1/sum as the CPU kernel does; masked entries (key after query)
// are written as exact zeros so backward needs no mask.
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/kernels/device_math.cuh"

namespace shardscope::gpu {
namespace {

using namespace detail;

template <class T>
__global__ void causalSoftmaxForwardKernel(const T* x, T* probs, size_t total_rows, int rows,
                                           int cols, float scale) {
  const size_t g = blockIdx.x * size_t{kWarpsPerBlock} + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (g >= total_rows) return;
  const int i = static_cast<int>(g % static_cast<size_t>(rows));  // query index in its matrix
  const T* xr = x + g * cols;
  T* pr = probs + g * cols;
  float mx = -INFINITY;
  for (int j = lane; j <= i; j += 32) mx = fmaxf(mx, load(xr + j) * scale);
  mx = warpMax(mx);
  float sum = 0.0f;
  for (int j = lane; j <= i; j += 32) sum += expf(load(xr + j) * scale - mx);
  const float inv = 1.0f / warpSum(sum);
  for (int j = lane; j < cols; j += 32) {
    store(pr + j, j <= i ? expf(load(xr + j) * scale - mx) * inv : 0.0f);
  }
}

template <class T>
__global__ void softmaxBackwardKernel(const T* probs, const T* dprobs, T* dx, int rows, int cols) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const size_t off = static_cast<size_t>(row) * cols;
  float dot = 0.0f;
  for (int j = lane; j < cols; j += 32) dot += load(probs + off + j) * load(dprobs + off + j);
  dot = warpSum(dot);
  for (int j = lane; j < cols; j += 32) {
    store(dx + off + j, load(probs + off + j) * (load(dprobs + off + j) - dot));
  }
}

}  // namespace

template <class T>
void causalSoftmaxForward(const T* x, T* probs, int batch, int rows, int cols, float scale,
                          StreamHandle stream) {
  requireNonNegative(batch, "batch", "causalSoftmaxForward");
  requirePositive(rows, "rows", "causalSoftmaxForward");
  if (rows > cols) {
    throw std::invalid_argument("gpu::causalSoftmaxForward: rows = " + std::to_string(rows) +
                                " must be <= cols = " + std::to_string(cols) +
                                " (query i attends to keys 0..i)");
  }
  const size_t total = static_cast<size_t>(batch) * static_cast<size_t>(rows);
  if (total == 0) return;
  const unsigned blocks = static_cast<unsigned>((total + kWarpsPerBlock - 1) / kWarpsPerBlock);
  causalSoftmaxForwardKernel<<<blocks, kThreads, 0, stream>>>(x, probs, total, rows, cols, scale);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void softmaxBackward(const T* probs, const T* dprobs, T* dx, int rows, int cols,
                     StreamHandle stream) {
  requireNonNegative(rows, "rows", "softmaxBackward");
  requireNonNegative(cols, "cols", "softmaxBackward");
  if (rows == 0 || cols == 0) return;
  const unsigned blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  softmaxBackwardKernel<<<blocks, kThreads, 0, stream>>>(probs, dprobs, dx, rows, cols);
  CUDA_CHECK_LAUNCH();
}

#define SHARDSCOPE_INSTANTIATE(T)                                                         \
  template void causalSoftmaxForward<T>(const T*, T*, int, int, int, float, StreamHandle); \
  template void softmaxBackward<T>(const T*, const T*, T*, int, int, StreamHandle);
SHARDSCOPE_INSTANTIATE_FOR_STORAGE(SHARDSCOPE_INSTANTIATE)
#undef SHARDSCOPE_INSTANTIATE

}  // namespace shardscope::gpu
