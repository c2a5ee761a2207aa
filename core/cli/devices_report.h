// The `devices` report: CUDA runtime/driver/NCCL versions and one row per
// visible GPU, as text for people and JSON for scripts. The format functions are
// plain shardscope_core; devicesReport()/devicesReportJson() query the live
// devices, so with SHARDSCOPE_HAVE_CUDA their callers must link shardscope_core_cuda.
#pragma once

#include <optional>
#include <string>

#include "cuda/device_query.h"

namespace shardscope {

// No inventory = this build has no CUDA backend.
std::string formatDevicesReport(const std::optional<CudaInventory>& inventory);
std::string formatDevicesReportJson(const std::optional<CudaInventory>& inventory);

inline std::optional<CudaInventory> currentCudaInventory() {
#ifdef SHARDSCOPE_HAVE_CUDA
  return queryCudaDevices();
#else
  return std::nullopt;
#endif
}

inline std::string devicesReport() { return formatDevicesReport(currentCudaInventory()); }
inline std::string devicesReportJson() { return formatDevicesReportJson(currentCudaInventory()); }

}  // namespace shardscope
