// The probe kernel: each thread writes seed + its global index, and the host
// checks all of them, so a wrong launch geometry or stale memory fails too.
#include "device_probe.h"

#include <cuda_runtime.h>

#include <vector>

namespace shardscope {
namespace {

constexpr int kProbeThreads = 256;
constexpr int kProbeBlocks = 4;
constexpr int kProbeCount = kProbeThreads * kProbeBlocks;
constexpr int kProbeSeed = 0x5a5a;

__global__ void probeKernel(int* out, int seed) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = seed + i;
}

std::string errorText(const char* what, cudaError_t err) {
  return std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
}

}  // namespace

std::string runProbeKernel(int device) {
  int previous = 0;
  cudaError_t err = cudaGetDevice(&previous);
  if (err != cudaSuccess) return errorText("cudaGetDevice", err);
  if ((err = cudaSetDevice(device)) != cudaSuccess) return errorText("cudaSetDevice", err);

  std::string result;
  int* out = nullptr;
  std::vector<int> host(kProbeCount, -1);
  if ((err = cudaMalloc(&out, kProbeCount * sizeof(int))) != cudaSuccess) {
    result = errorText("cudaMalloc", err);
  } else {
    probeKernel<<<kProbeBlocks, kProbeThreads>>>(out, kProbeSeed);
    if ((err = cudaGetLastError()) != cudaSuccess) {
      result = errorText("probe kernel launch", err);
    } else if ((err = cudaMemcpy(host.data(), out, kProbeCount * sizeof(int),
                                 cudaMemcpyDeviceToHost)) != cudaSuccess) {
      result = errorText("probe kernel / cudaMemcpy", err);
    } else {
      for (int i = 0; i < kProbeCount; ++i) {
        if (host[i] != kProbeSeed + i) {
          result = "probe kernel wrote " + std::to_string(host[i]) + " at index " +
                   std::to_string(i) + ", expected " + std::to_string(kProbeSeed + i);
          break;
        }
      }
    }
    cudaFree(out);
  }
  cudaSetDevice(previous);
  return result;
}

}  // namespace shardscope
