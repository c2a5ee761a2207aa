// Casts, bias, residual and GELU kernels (cuda_kernels.h): grid-stride loops,
// fp32 math, one rounding at the store. Column sums (bias grad) give each block
// 32 columns so that loads are coalesced across a warp.
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/kernels/column_sum.cuh"
#include "cuda/kernels/device_math.cuh"

namespace shardscope::gpu {
namespace {

using namespace detail;

__global__ void bf16ToF32Kernel(const bf16* in, float* out, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    out[i] = load(in + i);
  }
}

__global__ void f32ToBf16Kernel(const float* in, bf16* out, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    store(out + i, in[i]);
  }
}

template <class T>
__global__ void addBiasKernel(T* y, const T* bias, size_t n, int cols) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    store(y + i, load(y + i) + load(bias + i % static_cast<size_t>(cols)));
  }
}

template <class T>
struct BiasGradTerm {
  const T* dy;
  int cols;
  __device__ void operator()(int r, int c, float& a, float&) const {
    a += load(dy + static_cast<size_t>(r) * cols + c);
  }
};

template <class T>
__global__ void residualAddKernel(T* out, const T* a, const T* b, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    store(out + i, load(a + i) + load(b + i));
  }
}

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi), as the CPU kernel
constexpr float kGeluCubic = 0.044715f;

template <class T>
__global__ void geluForwardKernel(const T* x, T* y, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const float xi = load(x + i);
    const float u = kGeluScale * (xi + kGeluCubic * xi * xi * xi);
    store(y + i, 0.5f * xi * (1.0f + tanhf(u)));
  }
}

template <class T>
__global__ void geluBackwardKernel(const T* x, const T* dy, T* dx, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const float xi = load(x + i);
    const float u = kGeluScale * (xi + kGeluCubic * xi * xi * xi);
    const float t = tanhf(u);
    const float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * xi * xi);
    const float grad = 0.5f * (1.0f + t) + 0.5f * xi * (1.0f - t * t) * du;
    store(dx + i, grad * load(dy + i));
  }
}

}  // namespace

void bf16ToF32(const bf16* in, float* out, size_t n, StreamHandle stream) {
  if (n == 0) return;
  bf16ToF32Kernel<<<blocksFor(n), kThreads, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

void f32ToBf16(const float* in, bf16* out, size_t n, StreamHandle stream) {
  if (n == 0) return;
  f32ToBf16Kernel<<<blocksFor(n), kThreads, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void addBias(T* y, const T* bias, int rows, int cols, StreamHandle stream) {
  requireNonNegative(rows, "rows", "addBias");
  requireNonNegative(cols, "cols", "addBias");
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  if (n == 0) return;
  addBiasKernel<<<blocksFor(n), kThreads, 0, stream>>>(y, bias, n, cols);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void biasGrad(const T* dy, T* dbias, int rows, int cols, StreamHandle stream) {
  requireNonNegative(rows, "rows", "biasGrad");
  requireNonNegative(cols, "cols", "biasGrad");
  if (cols == 0) return;
  launchColumnSum(BiasGradTerm<T>{dy, cols}, rows, cols, dbias, static_cast<T*>(nullptr), stream);
}

template <class T>
void residualAdd(T* out, const T* a, const T* b, size_t n, StreamHandle stream) {
  if (n == 0) return;
  residualAddKernel<<<blocksFor(n), kThreads, 0, stream>>>(out, a, b, n);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void geluForward(const T* x, T* y, size_t n, StreamHandle stream) {
  if (n == 0) return;
  geluForwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, y, n);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void geluBackward(const T* x, const T* dy, T* dx, size_t n, StreamHandle stream) {
  if (n == 0) return;
  geluBackwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, dy, dx, n);
  CUDA_CHECK_LAUNCH();
}

#define SHARDSCOPE_INSTANTIATE(T)                                                   \
  template void addBias<T>(T*, const T*, int, int, StreamHandle);                  \
  template void biasGrad<T>(const T*, T*, int, int, StreamHandle);                 \
  template void residualAdd<T>(T*, const T*, const T*, size_t, StreamHandle);      \
  template void geluForward<T>(const T*, T*, size_t, StreamHandle);                \
  template void geluBackward<T>(const T*, const T*, T*, size_t, StreamHandle);
SHARDSCOPE_INSTANTIATE_FOR_STORAGE(SHARDSCOPE_INSTANTIATE)
#undef SHARDSCOPE_INSTANTIATE

}  // namespace shardscope::gpu
