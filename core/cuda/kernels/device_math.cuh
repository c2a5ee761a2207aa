// Device helpers shared by the kernels: bf16 loads/stores with the CPU's exact
// rounding (shardscope::toBf16, RNE), warp and block reductions, launch sizes.
// Block reductions need blockDim.x to be a multiple of 32 and at most 1024.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tensor/bf16.h"

namespace shardscope::gpu::detail {

constexpr int kThreads = 256;          // elementwise and warp-per-row kernels
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const bf16* p) {
  return __uint_as_float(static_cast<uint32_t>(p->bits) << 16);
}
__device__ __forceinline__ uint16_t roundToBf16(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {
    return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN, sign kept
  }
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(bf16* p, float v) { p->bits = roundToBf16(v); }

__device__ __forceinline__ float warpSum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}
__device__ __forceinline__ float warpMax(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// Every thread of the block gets the result. `scratch`: 32 floats of shared memory,
// reusable after the call returns (the trailing barrier protects it).
template <bool kMax>
__device__ float blockReduce(float v, float* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  v = kMax ? warpMax(v) : warpSum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = lane < warps ? scratch[lane] : (kMax ? -INFINITY : 0.0f);
  r = kMax ? warpMax(r) : warpSum(r);
  __syncthreads();
  return r;
}

// Grid-stride launches: enough blocks to fill any current GPU, capped so the
// grid size never overflows and each thread does a few elements on huge tensors.
inline unsigned blocksFor(size_t n, int threads = kThreads) {
  const size_t blocks = (n + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

inline void requireNonNegative(long long value, const char* name, const char* kernel) {
  if (value < 0) {
    throw std::invalid_argument(std::string("gpu::") + kernel + ": " + name + " = " +
                                std::to_string(value) + " must be >= 0");
  }
}
inline void requirePositive(long long value, const char* name, const char* kernel) {
  if (value <= 0) {
    throw std::invalid_argument(std::string("gpu::") + kernel + ": " + name + " = " +
                                std::to_string(value) + " must be > 0");
  }
}

}  // namespace shardscope::gpu::detail

// T = float and bf16 for each templated kernel entry point.
#define SHARDSCOPE_INSTANTIATE_FOR_STORAGE(MACRO) \
  MACRO(float)                                    \
  MACRO(::shardscope::bf16)
