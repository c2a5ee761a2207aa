// The GPU backends of the engine: `--backend cuda` (one rank per visible GPU,
// NCCL) and `--backend cuda-emulated` (P ranks on GPU 0, collectives as device
// copies and reductions). Implements core's DeviceRuntime (backend/device_runtime.h):
// each rank stream's thread launches onto its own CUDA stream, Buffers come from
// the rank's caching allocator, and op spans are CUDA-event times.
#pragma once

namespace shardscope::gpu {

// Makes Run accept the cuda backends in this process (the CLI and GUI mains
// call it when the build has CUDA). Idempotent.
void registerCudaRuntime();

}  // namespace shardscope::gpu
