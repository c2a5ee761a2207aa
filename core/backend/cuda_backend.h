// The CUDA backend as a plugin: libshardscope-cuda.so (core/cuda/plugin)
// holds shardscope_core_cuda and links cudart, cuBLAS(Lt) and NCCL; core loads
// it the first time a run asks for --backend cuda or cuda-emulated, or the
// devices report is asked for. A process that never touches a GPU then maps
// none of those libraries (cuBLASLt alone is hundreds of MB, and its static
// initializers took 0.35 s of every CLI start), and the programs start on a
// machine without them: only a GPU run says what is missing.
//
// The plugin resolves core's symbols from the program that loads it (the
// CLI and GUI link core whole and export it), so there is one core in the
// process. A program that links shardscope_core_cuda itself (the GPU tests)
// registers the same entry points in-process with registerCudaBackend().
#pragma once

#include <memory>
#include <string>

#include "backend/cuda_inventory.h"

namespace shardscope {

class DeviceRuntime;
struct RunConfig;

// What the plugin hands core. Bumped whenever this struct or what it points
// at changes: a plugin of another build is refused, not called.
inline constexpr int kCudaBackendAbi = 1;
struct CudaBackendApi {
  int abi = kCudaBackendAbi;
  std::unique_ptr<DeviceRuntime> (*make_runtime)(const RunConfig& config) = nullptr;  // throws ConfigError
  CudaInventory (*query_devices)() = nullptr;                                        // never throws
};

// The plugin's one exported symbol: extern "C" const CudaBackendApi* NAME().
inline constexpr char kCudaBackendEntry[] = "shardscope_cuda_backend_api";
// Its file name, looked for next to the program (a build tree), then in
// ../lib/shardscope/backends (installed); SHARDSCOPE_CUDA_BACKEND names a file instead.
inline constexpr char kCudaBackendFile[] = "libshardscope-cuda.so";

// Entry points linked into this process; they win over the plugin.
void registerCudaBackend(const CudaBackendApi* api);

// The backend, loaded on first call (thread-safe; one attempt per process).
// nullptr when this build has none or it cannot be loaded, with *why saying
// which file and what the loader said ("libcublasLt.so.13: cannot open …").
const CudaBackendApi* loadCudaBackend(std::string* why);

// Whether a GPU backend can be asked for without loading it: entry points
// are registered, or this build made the plugin and its file is found.
bool cudaBackendAvailable();

}  // namespace shardscope
