// libshardscope-cuda.so's entry point (backend/cuda_backend.h): the one symbol
// core looks up after loading it. Core's own symbols come from the program.
#include "cuda/cuda_runtime.h"

extern "C" __attribute__((visibility("default"))) const shardscope::CudaBackendApi* shardscope_cuda_backend_api() {
  return shardscope::gpu::cudaBackendApi();
}
