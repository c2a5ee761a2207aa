// Cross-entropy (one block per row: vocabularies are wide), MSE (one warp per
// row) and a deterministic single-block double sum for the per-row losses. The
// host adds nothing until it reads the sum, so the step never syncs for a loss.
#include <cuda_runtime.h>

#include <cmath>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/kernels/device_math.cuh"

namespace shardscope::gpu {
namespace {

using namespace detail;

constexpr int kRowThreads = 256;  // cross-entropy block
constexpr int kSumThreads = 1024;

template <class T>
__global__ void crossEntropyKernel(const T* logits, const int32_t* targets, T* dlogits,
                                   float* row_loss, int V, float grad_scale) {
  __shared__ float scratch[32];
  const size_t off = static_cast<size_t>(blockIdx.x) * V;
  const T* lr = logits + off;
  T* dr = dlogits + off;
  const int32_t target = targets[blockIdx.x];
  if (target < 0 || target >= V) {  // uniform over the block: no barrier is skipped by half
    for (int j = threadIdx.x; j < V; j += blockDim.x) store(dr + j, NAN);
    if (threadIdx.x == 0) row_loss[blockIdx.x] = NAN;
    return;
  }
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, load(lr + j));
  mx = blockReduce<true>(mx, scratch);
  float z = 0.0f;
  for (int j = threadIdx.x; j < V; j += blockDim.x) z += expf(load(lr + j) - mx);
  z = blockReduce<false>(z, scratch);
  const float target_logit = load(lr + target);  // read by all before anyone overwrites
  __syncthreads();
  const float inv_z = 1.0f / z;
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    const float p = expf(load(lr + j) - mx) * inv_z * grad_scale;
    store(dr + j, j == target ? p - grad_scale : p);
  }
  if (threadIdx.x == 0) row_loss[blockIdx.x] = (logf(z) - (target_logit - mx)) * grad_scale;
}

template <class T>
__global__ void mseKernel(const T* pred, const T* target, T* dpred, float* row_loss, int rows,
                          int cols, float grad_scale, double denom) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const size_t off = static_cast<size_t>(row) * cols;
  float sum = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    const float d = load(pred + off + c) - load(target + off + c);
    sum += d * d;
    store(dpred + off + c, grad_scale * d);
  }
  sum = warpSum(sum);
  if (lane == 0) row_loss[row] = static_cast<float>(static_cast<double>(sum) / denom);
}

__global__ void sumToDoubleKernel(const float* x, size_t n, double* out) {
  __shared__ double partial[kSumThreads];
  double s = 0.0;
  for (size_t i = threadIdx.x; i < n; i += kSumThreads) s += static_cast<double>(x[i]);
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int width = kSumThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0];
}

void checkTotalRows(int rows, int total_rows, const char* kernel) {
  requireNonNegative(rows, "rows", kernel);
  if (total_rows <= 0 || total_rows < rows) {
    throw std::invalid_argument(std::string("gpu::") + kernel + ": total_rows = " +
                                std::to_string(total_rows) + " must be > 0 and >= rows = " +
                                std::to_string(rows) + " (the full batch this slice belongs to)");
  }
}

}  // namespace

template <class T>
void crossEntropy(const T* logits, const int32_t* targets, T* dlogits, float* row_loss, int rows,
                  int V, int total_rows, StreamHandle stream) {
  requirePositive(V, "V", "crossEntropy");
  checkTotalRows(rows, total_rows, "crossEntropy");
  if (rows == 0) return;
  crossEntropyKernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
      logits, targets, dlogits, row_loss, V, 1.0f / static_cast<float>(total_rows));
  CUDA_CHECK_LAUNCH();
}

template <class T>
void mseLoss(const T* pred, const T* target, T* dpred, float* row_loss, int rows, int cols,
             int total_rows, StreamHandle stream) {
  requireNonNegative(cols, "cols", "mseLoss");
  checkTotalRows(rows, total_rows, "mseLoss");
  if (rows == 0) return;
  const double denom = static_cast<double>(total_rows) * cols;
  const float grad_scale = cols == 0 ? 0.0f : static_cast<float>(2.0 / denom);
  const unsigned blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  mseKernel<<<blocks, kThreads, 0, stream>>>(pred, target, dpred, row_loss, rows, cols,
                                             grad_scale, cols == 0 ? 1.0 : denom);
  CUDA_CHECK_LAUNCH();
}

void sumToDouble(const float* x, size_t n, double* out, StreamHandle stream) {
  sumToDoubleKernel<<<1, kSumThreads, 0, stream>>>(x, n, out);
  CUDA_CHECK_LAUNCH();
}

#define SHARDSCOPE_INSTANTIATE(T)                                                         \
  template void crossEntropy<T>(const T*, const int32_t*, T*, float*, int, int, int,      \
                                StreamHandle);                                            \
  template void mseLoss<T>(const T*, const T*, T*, float*, int, int, int, StreamHandle);
SHARDSCOPE_INSTANTIATE_FOR_STORAGE(SHARDSCOPE_INSTANTIATE)
#undef SHARDSCOPE_INSTANTIATE

}  // namespace shardscope::gpu
