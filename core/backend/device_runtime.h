// The GPU backends' entry point: a DeviceRuntime makes each rank's device
// (device/rank_device.h) and the communicators of each group. core/cuda
// registers a factory for it; core never includes CUDA headers. It sits above
// device/ and comm/, which know nothing of it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "comm/communicator_factory.h"
#include "common/errors.h"
#include "device/rank_device.h"

namespace shardscope {

class MemoryLedger;
struct RunConfig;

// One per GPU run: the rank devices and (as a CommunicatorFactory) the communicators.
class DeviceRuntime : public CommunicatorFactory {
 public:
  virtual std::string describe() const = 0;  // "cuda-emulated: 4 ranks on GPU 0 (NVIDIA H200)"
  virtual std::unique_ptr<RankDevice> makeRankDevice(int rank, MemoryLedger& ledger) = 0;
  // This process hosts only process.rank (--launch processes), on the device
  // of its index on its node; groups then come from connectMember. Throws
  // ConfigError when the backend runs ranks as threads only.
  virtual void setProcess(const MeshProcess& process) {
    (void)process;
    throw ConfigError("this backend runs its ranks as threads of one process; use --launch threads");
  }
};

// Builds the runtime for a config whose backend is cuda or cuda-emulated, or
// throws ConfigError naming --backend and what to do (no device, too few GPUs).
using DeviceRuntimeFactory = std::function<std::unique_ptr<DeviceRuntime>(const RunConfig& config)>;
// Tests register their own; without one, the CUDA backend (backend/cuda_backend.h)
// is loaded when first asked for.
void registerDeviceRuntime(DeviceRuntimeFactory factory);
// Throws ConfigError naming --backend when this build has no GPU backend or
// it cannot be loaded (which file, what the loader said).
std::unique_ptr<DeviceRuntime> makeDeviceRuntime(const RunConfig& config);
// Whether this process can ask for the cuda backends at all (a factory is
// registered, or the CUDA backend's file is there), without loading them.
bool deviceRuntimeRegistered();

}  // namespace shardscope
