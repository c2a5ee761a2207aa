// GPT token + position embedding, forward and backward. Both gradients are
// gathers in a fixed order (no atomics), so they are deterministic: wpe sums the
// batch's samples in order; wte reads each vocabulary row's positions from the
// token index that buildTokenIndex (gpt_ops.cpp) builds on the host.
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/kernels/device_math.cuh"

namespace shardscope::gpu {
namespace {

using namespace detail;

template <class T>
__global__ void embeddingForwardKernel(const int32_t* tokens, const T* wte, const T* wpe, T* out,
                                       size_t n, int seq, int C, int V) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const size_t row = i / static_cast<size_t>(C);  // b * seq + t
    const int c = static_cast<int>(i % static_cast<size_t>(C));
    const int t = static_cast<int>(row % static_cast<size_t>(seq));
    const int32_t token = tokens[row];
    if (token < 0 || token >= V) {
      store(out + i, NAN);
      continue;
    }
    store(out + i, load(wte + static_cast<size_t>(token) * C + c) +
                       load(wpe + static_cast<size_t>(t) * C + c));
  }
}

template <class T>
__global__ void positionEmbeddingBackwardKernel(const T* dout, T* dwpe, size_t n, int batch,
                                                int seq, int C) {
  const size_t sample = static_cast<size_t>(seq) * C;  // elements of one sample
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    float sum = 0.0f;
    for (int b = 0; b < batch; ++b) sum += load(dout + b * sample + i);
    store(dwpe + i, sum);
  }
}

// Block (v, chunk): columns [chunk * blockDim.x, ...) of vocabulary row v.
template <class T>
__global__ void tokenEmbeddingBackwardKernel(const T* dout, const int32_t* offsets,
                                             const int32_t* positions, T* dwte, int C) {
  const int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const size_t v = blockIdx.x;
  const int begin = offsets[v], end = offsets[v + 1];
  float sum = 0.0f;
  for (int k = begin; k < end; ++k) sum += load(dout + static_cast<size_t>(positions[k]) * C + c);
  store(dwte + v * C + c, sum);
}

}  // namespace

template <class T>
void embeddingForward(const int32_t* tokens, const T* wte, const T* wpe, T* out, int batch,
                      int seq, int C, int V, StreamHandle stream) {
  requireNonNegative(batch, "batch", "embeddingForward");
  requirePositive(seq, "seq", "embeddingForward");
  requirePositive(C, "C", "embeddingForward");
  requirePositive(V, "V", "embeddingForward");
  const size_t n = static_cast<size_t>(batch) * seq * C;
  if (n == 0) return;
  embeddingForwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(tokens, wte, wpe, out, n, seq, C,
                                                                 V);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void positionEmbeddingBackward(const T* dout, T* dwpe, int batch, int seq, int C,
                               StreamHandle stream) {
  requireNonNegative(batch, "batch", "positionEmbeddingBackward");
  requireNonNegative(seq, "seq", "positionEmbeddingBackward");
  requireNonNegative(C, "C", "positionEmbeddingBackward");
  const size_t n = static_cast<size_t>(seq) * C;
  if (n == 0) return;
  positionEmbeddingBackwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(dout, dwpe, n, batch,
                                                                          seq, C);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void tokenEmbeddingBackward(const T* dout, const int32_t* offsets, const int32_t* positions,
                            T* dwte, int V, int C, StreamHandle stream) {
  requireNonNegative(V, "V", "tokenEmbeddingBackward");
  requireNonNegative(C, "C", "tokenEmbeddingBackward");
  if (V == 0 || C == 0) return;
  const unsigned chunks = static_cast<unsigned>((C + kThreads - 1) / kThreads);
  if (chunks > 65535) {
    throw std::invalid_argument("gpu::tokenEmbeddingBackward: C = " + std::to_string(C) +
                                " needs more than 65535 column blocks of " +
                                std::to_string(kThreads));
  }
  const dim3 grid(static_cast<unsigned>(V), chunks);
  tokenEmbeddingBackwardKernel<<<grid, kThreads, 0, stream>>>(dout, offsets, positions, dwte, C);
  CUDA_CHECK_LAUNCH();
}

#define SHARDSCOPE_INSTANTIATE(T)                                                             \
  template void embeddingForward<T>(const int32_t*, const T*, const T*, T*, int, int, int, int, \
                                    StreamHandle);                                          \
  template void positionEmbeddingBackward<T>(const T*, T*, int, int, int, StreamHandle);       \
  template void tokenEmbeddingBackward<T>(const T*, const int32_t*, const int32_t*, T*, int,   \
                                          int, StreamHandle);
SHARDSCOPE_INSTANTIATE_FOR_STORAGE(SHARDSCOPE_INSTANTIATE)
#undef SHARDSCOPE_INSTANTIATE

}  // namespace shardscope::gpu
