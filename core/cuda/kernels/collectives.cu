// The emulated collectives' reduction and the self-test's fill kernels (internal.h).
// Rank pointer tables are passed by value, so no device-side table is allocated
// or has to outlive the launch.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/internal.h"

namespace shardscope::gpu::detail {
namespace {

struct RankTable {
  const void* in[kMaxEmulatedRanks];
  void* out[kMaxEmulatedRanks];
};

template <class T>
__global__ void reduceKernel(RankTable table, int ranks, size_t count, bool scatter) {
  const size_t total = scatter ? count * static_cast<size_t>(ranks) : count;
  for (size_t j = blockIdx.x * size_t{blockDim.x} + threadIdx.x; j < total;
       j += size_t{gridDim.x} * blockDim.x) {
    float sum = 0.0f;
    for (int q = 0; q < ranks; ++q) sum += load(static_cast<const T*>(table.in[q]) + j);
    if (scatter) {
      store(static_cast<T*>(table.out[j / count]) + j % count, sum);
    } else {
      for (int o = 0; o < ranks; ++o) store(static_cast<T*>(table.out[o]) + j, sum);
    }
  }
}

template <class T>
__global__ void scaleKernel(T* y, float s, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    store(y + i, load(y + i) * s);
  }
}

__device__ float uniformAt(uint64_t seed, size_t i) {
  uint64_t x = seed + 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(i) + 1);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<float>(static_cast<double>(x >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

template <class T>
__global__ void fillUniformKernel(T* x, size_t n, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    store(x + i, scale * uniformAt(seed, i));
  }
}

__global__ void delayedFillKernel(float* x, size_t n, float value, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    x[i] = value;
  }
}

}  // namespace

template <class T>
void scaleInPlace(T* y, float s, size_t n, StreamHandle stream) {
  if (n == 0) return;
  scaleKernel<<<blocksFor(n), kThreads, 0, stream>>>(y, s, n);
  CUDA_CHECK_LAUNCH();
}
template void scaleInPlace<float>(float*, float, size_t, StreamHandle);
template void scaleInPlace<bf16>(bf16*, float, size_t, StreamHandle);

void reduceAcrossRanks(ReduceLayout layout, const void* const* inputs, void* const* outputs,
                       int ranks, size_t count, DType dtype, StreamHandle stream) {
  if (ranks < 1 || ranks > kMaxEmulatedRanks) {
    throw std::invalid_argument("reduceAcrossRanks: ranks = " + std::to_string(ranks) +
                                " must be in [1, " + std::to_string(kMaxEmulatedRanks) + "]");
  }
  if (count == 0) return;
  RankTable table{};
  for (int r = 0; r < ranks; ++r) {
    table.in[r] = inputs[r];
    table.out[r] = outputs[r];
  }
  const bool scatter = layout == ReduceLayout::ReduceScatter;
  const size_t total = scatter ? count * static_cast<size_t>(ranks) : count;
  if (dtype == DType::F32) {
    reduceKernel<float><<<blocksFor(total), kThreads, 0, stream>>>(table, ranks, count, scatter);
  } else {
    reduceKernel<bf16><<<blocksFor(total), kThreads, 0, stream>>>(table, ranks, count, scatter);
  }
  CUDA_CHECK_LAUNCH();
}

void fillUniform(float* x, size_t n, uint64_t seed, float scale, StreamHandle stream) {
  if (n == 0) return;
  fillUniformKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, n, seed, scale);
  CUDA_CHECK_LAUNCH();
}

void fillUniform(bf16* x, size_t n, uint64_t seed, float scale, StreamHandle stream) {
  if (n == 0) return;
  fillUniformKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, n, seed, scale);
  CUDA_CHECK_LAUNCH();
}

void delayedFill(float* x, size_t n, float value, long long cycles, StreamHandle stream) {
  if (n == 0) return;
  delayedFillKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, n, value, cycles);
  CUDA_CHECK_LAUNCH();
}

}  // namespace shardscope::gpu::detail
