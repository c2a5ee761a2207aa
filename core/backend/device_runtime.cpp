#include "backend/device_runtime.h"

#include <mutex>

#include "backend/cuda_backend.h"
#include "common/errors.h"
#include "config/run_config.h"

namespace shardscope {

namespace {

std::mutex g_factoryMutex;
DeviceRuntimeFactory& factorySlot() {
  static DeviceRuntimeFactory factory;
  return factory;
}

}  // namespace

void registerDeviceRuntime(DeviceRuntimeFactory factory) {
  std::lock_guard lock(g_factoryMutex);
  factorySlot() = std::move(factory);
}

bool deviceRuntimeRegistered() {
  {
    std::lock_guard lock(g_factoryMutex);
    if (factorySlot()) return true;
  }
  return cudaBackendAvailable();
}

std::unique_ptr<DeviceRuntime> makeDeviceRuntime(const RunConfig& config) {
  DeviceRuntimeFactory factory;
  {
    std::lock_guard lock(g_factoryMutex);
    factory = factorySlot();
  }
  if (factory) return factory(config);
  std::string why;
  if (const CudaBackendApi* api = loadCudaBackend(&why)) return api->make_runtime(config);
  throw ConfigError("--backend " + backendName(config.backend) + " needs the CUDA backend: " + why +
                    "; use --backend cpu or meta");
}

}  // namespace shardscope
