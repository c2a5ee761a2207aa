// What this process can see of CUDA and NCCL, for `shardscope-cli devices` and
// the CUDA tests. Plain C++ (no CUDA headers), so shardscope_core can format it;
// only queryCudaDevices() lives in shardscope_core_cuda and needs that library.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace shardscope {

struct CudaDeviceInfo {
  int index = -1;
  std::string name;
  size_t total_bytes = 0;  // device memory, from cudaMemGetInfo
  size_t free_bytes = 0;   // free at query time (after this process's context)
  int cc_major = 0;        // compute capability, e.g. 9.0 for H100/H200
  int cc_minor = 0;
  int sm_count = 0;
  bool kernel_ok = false;  // the probe kernel ran and its output read back right
  std::string error;       // why a step on this device failed, "" when none did
};

struct CudaInventory {
  bool runtime_ok = false;  // cudaGetDeviceCount succeeded
  std::string error;        // "cudaErrorX: runtime's own message" when it did not
  int runtime_version = 0;  // CUDART_VERSION style: 13000 = 13.0
  int driver_version = 0;   // 0 when no driver is installed
  std::string nccl_version; // of the loaded libnccl, "2.28.9"
  std::vector<CudaDeviceInfo> devices;
};

// Queries the runtime, the driver, NCCL and every visible device, running the
// probe kernel on each. Never throws: failures land in `error` fields, since a
// report about a broken setup must still print. Creates a context per device.
CudaInventory queryCudaDevices();

// The NCCL version of the nccl.h this library was compiled against, "2.28.9".
std::string compiledNcclVersion();

// "13.0" from 13000 (CUDA runtime/driver version encoding); "none" for 0.
// Inline: shardscope_core formats reports with it even when built without CUDA.
inline std::string cudaVersionString(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace shardscope
