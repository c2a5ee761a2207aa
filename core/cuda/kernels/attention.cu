// Head split/merge permutations for attention: rows (B, T, groups*C) <-> heads
// (groups, B, NH, T, hs), so every (sample, head) matrix is contiguous and the
// attention GEMMs are strided batches (gpt_ops.cpp). One thread per output
// element; a head's hs values are contiguous on both sides, so reads and writes
// coalesce in runs of hs. Pure copies except the optional bias (one rounding).
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/kernels/device_math.cuh"

namespace shardscope::gpu {
namespace {

using namespace detail;

// out index o = ((((g * B + b) * NH + h) * T + t) * hs + d).
template <class T>
__global__ void splitHeadsKernel(const T* x, const T* bias, T* out, size_t n, int groups,
                                 int batch, int seq, int C, int NH) {
  const int hs = C / NH;
  const size_t width = static_cast<size_t>(groups) * C;  // x's row length
  for (size_t o = blockIdx.x * size_t{blockDim.x} + threadIdx.x; o < n;
       o += size_t{gridDim.x} * blockDim.x) {
    size_t r = o;
    const int d = static_cast<int>(r % hs);
    r /= hs;
    const int t = static_cast<int>(r % seq);
    r /= seq;
    const int h = static_cast<int>(r % NH);
    r /= NH;
    const int b = static_cast<int>(r % batch);
    const int g = static_cast<int>(r / batch);
    const size_t col = static_cast<size_t>(g) * C + static_cast<size_t>(h) * hs + d;
    const size_t i = (static_cast<size_t>(b) * seq + t) * width + col;
    if (bias) {
      store(out + o, load(x + i) + load(bias + col));
    } else {
      out[o] = x[i];  // bit copy
    }
  }
}

// out index o = (b * T + t) * groups*C + g * C + h * hs + d.
template <class T>
__global__ void mergeHeadsKernel(const T* x, T* out, size_t n, int groups, int batch, int seq,
                                 int C, int NH) {
  const int hs = C / NH;
  const size_t width = static_cast<size_t>(groups) * C;
  for (size_t o = blockIdx.x * size_t{blockDim.x} + threadIdx.x; o < n;
       o += size_t{gridDim.x} * blockDim.x) {
    const size_t row = o / width;  // b * T + t
    const int col = static_cast<int>(o % width);
    const int b = static_cast<int>(row / seq);
    const int t = static_cast<int>(row % seq);
    const int g = col / C;
    const int h = (col % C) / hs;
    const int d = col % hs;
    const size_t i = (((static_cast<size_t>(g) * batch + b) * NH + h) * seq + t) * hs + d;
    out[o] = x[i];
  }
}

void checkHeads(int groups, int batch, int seq, int C, int NH, const char* kernel) {
  requirePositive(groups, "groups", kernel);
  requireNonNegative(batch, "batch", kernel);
  requireNonNegative(seq, "seq", kernel);
  requirePositive(C, "C", kernel);
  requirePositive(NH, "NH", kernel);
  if (C % NH != 0) {
    throw std::invalid_argument(std::string("gpu::") + kernel + ": C = " + std::to_string(C) +
                                " must be a multiple of NH = " + std::to_string(NH));
  }
}

}  // namespace

template <class T>
void splitHeads(const T* x, const T* bias, T* out, int groups, int batch, int seq, int C, int NH,
                StreamHandle stream) {
  checkHeads(groups, batch, seq, C, NH, "splitHeads");
  const size_t n = static_cast<size_t>(groups) * batch * seq * C;
  if (n == 0) return;
  splitHeadsKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, bias, out, n, groups, batch, seq, C,
                                                           NH);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void mergeHeads(const T* x, T* out, int groups, int batch, int seq, int C, int NH,
                StreamHandle stream) {
  checkHeads(groups, batch, seq, C, NH, "mergeHeads");
  const size_t n = static_cast<size_t>(groups) * batch * seq * C;
  if (n == 0) return;
  mergeHeadsKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, out, n, groups, batch, seq, C, NH);
  CUDA_CHECK_LAUNCH();
}

#define SHARDSCOPE_INSTANTIATE(T)                                                         \
  template void splitHeads<T>(const T*, const T*, T*, int, int, int, int, int, StreamHandle); \
  template void mergeHeads<T>(const T*, T*, int, int, int, int, int, StreamHandle);
SHARDSCOPE_INSTANTIATE_FOR_STORAGE(SHARDSCOPE_INSTANTIATE)
#undef SHARDSCOPE_INSTANTIATE

}  // namespace shardscope::gpu
