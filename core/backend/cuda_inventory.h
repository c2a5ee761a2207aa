// What this process can see of CUDA and NCCL: the devices report's data
// (cli/devices_report.h) and what the CUDA backend's query returns
// (backend/cuda_backend.h). Plain C++, no CUDA headers.
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
  bool backend_loaded = true;  // false: the build has CUDA but its backend did not load (error says why)
  bool runtime_ok = false;  // cudaGetDeviceCount succeeded
  std::string error;        // "cudaErrorX: runtime's own message" when it did not
  int runtime_version = 0;  // CUDART_VERSION style: 13000 = 13.0
  int driver_version = 0;   // 0 when no driver is installed
  std::string nccl_version; // of the loaded libnccl, "2.28.9"
  std::vector<CudaDeviceInfo> devices;
};

// "13.0" from 13000 (CUDA runtime/driver version encoding); "none" for 0.
// Inline: shardscope_core formats reports with it even when built without CUDA.
inline std::string cudaVersionString(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace shardscope
