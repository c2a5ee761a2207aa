// Column reductions over rows (bias grad, LayerNorm dgamma/dbeta) without atomics,
// so results do not depend on scheduling: a block owns 32 columns, its 8 warps
// stride over the rows, and shared memory adds the 8 partial sums in fixed order.
#pragma once

#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels/device_math.cuh"

namespace shardscope::gpu::detail {

constexpr int kColumnTile = 32;
constexpr int kRowLanes = 8;

// term(r, c, a, b) adds row r's contributions for column c to the two sums.
template <class Term, class T>
__global__ void columnSumKernel(Term term, int rows, int cols, T* out_a, T* out_b) {
  __shared__ float partial_a[kRowLanes][kColumnTile + 1];
  __shared__ float partial_b[kRowLanes][kColumnTile + 1];
  const int c = blockIdx.x * kColumnTile + threadIdx.x;
  float a = 0.0f, b = 0.0f;
  if (c < cols) {
    for (int r = threadIdx.y; r < rows; r += kRowLanes) term(r, c, a, b);
  }
  partial_a[threadIdx.y][threadIdx.x] = a;
  partial_b[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int k = 1; k < kRowLanes; ++k) {
      a += partial_a[k][threadIdx.x];
      b += partial_b[k][threadIdx.x];
    }
    store(out_a + c, a);
    if (out_b) store(out_b + c, b);
  }
}

template <class Term, class T>
void launchColumnSum(Term term, int rows, int cols, T* out_a, T* out_b, cudaStream_t stream) {
  const dim3 block(kColumnTile, kRowLanes);
  const dim3 grid(static_cast<unsigned>((cols + kColumnTile - 1) / kColumnTile));
  columnSumKernel<<<grid, block, 0, stream>>>(term, rows, cols, out_a, out_b);
  CUDA_CHECK_LAUNCH();
}

}  // namespace shardscope::gpu::detail
