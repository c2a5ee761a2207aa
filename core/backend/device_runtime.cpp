#include "backend/device_runtime.h"

#include <mutex>

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
  std::lock_guard lock(g_factoryMutex);
  return static_cast<bool>(factorySlot());
}

std::unique_ptr<DeviceRuntime> makeDeviceRuntime(const RunConfig& config) {
  DeviceRuntimeFactory factory;
  {
    std::lock_guard lock(g_factoryMutex);
    factory = factorySlot();
  }
  if (!factory)
    throw ConfigError("--backend " + backendName(config.backend) +
                      " needs a build with the CUDA backend: this one was configured without nvcc, cuBLAS "
                      "or NCCL (see docs/guide/gpu.md); use --backend cpu or meta");
  return factory(config);
}

}  // namespace shardscope
