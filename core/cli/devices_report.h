// The `devices` report: CUDA runtime/driver/NCCL versions and one row per
// visible GPU, as text for people and JSON for scripts. The format functions are
// plain shardscope_core; devicesReport()/devicesReportJson() query the live
// devices through the CUDA backend (backend/cuda_backend.h), loading it.
#pragma once

#include <optional>
#include <string>

#include "backend/cuda_backend.h"
#include "backend/cuda_inventory.h"

namespace shardscope {

// No inventory = this build has no CUDA backend.
std::string formatDevicesReport(const std::optional<CudaInventory>& inventory);
std::string formatDevicesReportJson(const std::optional<CudaInventory>& inventory);

inline std::optional<CudaInventory> currentCudaInventory() {
#ifdef SHARDSCOPE_HAVE_CUDA
  std::string why;
  if (const CudaBackendApi* api = loadCudaBackend(&why)) return api->query_devices();
  CudaInventory unloaded;  // built with CUDA, but its backend cannot be loaded here: say why
  unloaded.backend_loaded = false;
  unloaded.error = why;
  return unloaded;
#else
  return std::nullopt;
#endif
}

inline std::string devicesReport() { return formatDevicesReport(currentCudaInventory()); }
inline std::string devicesReportJson() { return formatDevicesReportJson(currentCudaInventory()); }

}  // namespace shardscope
