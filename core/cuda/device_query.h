// The CUDA backend's device query, for `shardscope-cli devices` (through the
// plugin: backend/cuda_backend.h) and the CUDA tests. Plain C++ (no CUDA
// headers); the inventory it fills is backend/cuda_inventory.h.
#pragma once

#include <string>

#include "backend/cuda_inventory.h"

namespace shardscope {

// Queries the runtime, the driver, NCCL and every visible device, running the
// probe kernel on each. Never throws: failures land in `error` fields, since a
// report about a broken setup must still print. Creates a context per device.
CudaInventory queryCudaDevices();

// The NCCL version of the nccl.h this library was compiled against, "2.28.9".
std::string compiledNcclVersion();

}  // namespace shardscope
