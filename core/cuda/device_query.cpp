// queryCudaDevices(): runtime, driver and NCCL versions plus one probe per
// device. Versions are read before the device count, so they are reported even
// when no device (or no driver) is visible.
#include "cuda/device_query.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "cuda/device_probe.h"

namespace shardscope {
namespace {

std::string errorText(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

// NCCL encodes X.Y.Z as X*1000+Y*100+Z up to 2.8 and X*10000+Y*100+Z after.
std::string ncclVersionString(int code) {
  const bool wide = code >= 10000;
  const int major = wide ? code / 10000 : code / 1000;
  const int minor = wide ? (code % 10000) / 100 : (code % 1000) / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

std::string compiledNcclVersion() { return ncclVersionString(NCCL_VERSION_CODE); }

CudaInventory queryCudaDevices() {
  CudaInventory inventory;
  cudaRuntimeGetVersion(&inventory.runtime_version);
  cudaDriverGetVersion(&inventory.driver_version);  // leaves 0 without a driver
  int nccl = 0;
  const ncclResult_t ncclStatus = ncclGetVersion(&nccl);
  inventory.nccl_version = ncclStatus == ncclSuccess
                               ? ncclVersionString(nccl)
                               : std::string("unknown (") + ncclGetErrorString(ncclStatus) + ")";

  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    inventory.error = errorText(err);
    cudaGetLastError();  // clear it so a later cudaGetLastError() does not repeat it
    return inventory;
  }
  inventory.runtime_ok = true;
  if (count == 0) inventory.error = "cudaGetDeviceCount: 0 devices";

  for (int i = 0; i < count; ++i) {
    CudaDeviceInfo info;
    info.index = i;
    cudaDeviceProp prop{};
    cudaError_t status = cudaGetDeviceProperties(&prop, i);
    if (status != cudaSuccess) {
      info.error = "cudaGetDeviceProperties: " + errorText(status);
      inventory.devices.push_back(std::move(info));
      continue;
    }
    info.name = prop.name;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.sm_count = prop.multiProcessorCount;
    info.total_bytes = prop.totalGlobalMem;

    int previous = 0;
    cudaGetDevice(&previous);
    if ((status = cudaSetDevice(i)) == cudaSuccess &&
        (status = cudaMemGetInfo(&info.free_bytes, &info.total_bytes)) == cudaSuccess) {
      info.error = runProbeKernel(i);
      info.kernel_ok = info.error.empty();
    } else {
      info.error = "cudaMemGetInfo: " + errorText(status);
    }
    cudaSetDevice(previous);
    inventory.devices.push_back(std::move(info));
  }
  return inventory;
}

}  // namespace shardscope
