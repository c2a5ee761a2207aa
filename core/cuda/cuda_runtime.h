// The GPU backends of the engine: `--backend cuda` (one rank per visible GPU,
// NCCL) and `--backend cuda-emulated` (P ranks on GPU 0, collectives as device
// copies and reductions). Implements core's DeviceRuntime (backend/device_runtime.h):
// each rank stream's thread launches onto its own CUDA stream, Buffers come from
// the rank's caching allocator, and op spans are CUDA-event times.
#pragma once

#include "backend/cuda_backend.h"

namespace shardscope::gpu {

// The backend's entry points: what the plugin (core/cuda/plugin) exports.
const CudaBackendApi* cudaBackendApi();

// Uses this library's backend in-process instead of loading the plugin (the
// GPU tests link shardscope_core_cuda themselves). Idempotent.
void registerCudaRuntime();

}  // namespace shardscope::gpu
