// y *= s over bf16 storage, fp32 math, one RNE rounding: the pre-division of
// gradients by the world size before a sum collective (cpu::scaleBf16InPlace).
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/kernels/device_math.cuh"

namespace shardscope::gpu {
namespace {

__global__ void scaleBf16Kernel(bf16* y, float s, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    detail::store(y + i, detail::load(y + i) * s);
}

}  // namespace

void scaleBf16(bf16* y, float s, size_t n, StreamHandle stream) {
  if (n == 0) return;
  scaleBf16Kernel<<<detail::blocksFor(n), detail::kThreads, 0, stream>>>(y, s, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace shardscope::gpu
