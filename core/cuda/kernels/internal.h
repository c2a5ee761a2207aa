// Kernels the backend uses internally, not part of cuda_kernels.h: the K = 0
// GEMM case, the emulated collectives' reduction, and the self-test's helpers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/communicator.h"
#include "cuda/stream_handle.h"
#include "tensor/bf16.h"

namespace shardscope::gpu::detail {

// y(n) *= s (T = float or bf16).
template <class T>
void scaleInPlace(T* y, float s, size_t n, StreamHandle stream);

// The most ranks one emulated group can have: the pointer tables travel as
// kernel parameters (2 x 64 pointers = 1 KiB, inside the 4 KiB limit).
inline constexpr int kMaxEmulatedRanks = 64;

enum class ReduceLayout : uint8_t {
  AllReduce,      // out[o][i] = sum_q in[q][i] for every rank o, i < count
  ReduceScatter,  // out[o][i] = sum_q in[q][o * count + i]
};
// fp32 sums, one rounding per output for bf16. Each input element is read by one
// thread that also writes every output fed from it, so in-place calls are safe.
void reduceAcrossRanks(ReduceLayout layout, const void* const* inputs, void* const* outputs,
                       int ranks, size_t count, DType dtype, StreamHandle stream);

// Self-test helpers: x(n) = scale * uniform(-1, 1) from a counter hash of (seed, i);
// spins ~`cycles` clock ticks first, so later work on other streams that is wrongly
// ordered reads stale data.
void fillUniform(float* x, size_t n, uint64_t seed, float scale, StreamHandle stream);
void fillUniform(bf16* x, size_t n, uint64_t seed, float scale, StreamHandle stream);
void delayedFill(float* x, size_t n, float value, long long cycles, StreamHandle stream);

}  // namespace shardscope::gpu::detail
