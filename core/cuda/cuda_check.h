// Check macros for CUDA runtime, cuBLAS and NCCL calls. A failure throws
// std::runtime_error: "<call> failed at <file>:<line>: <error name>: <library's
// text> (hint: ...)". Launches return nothing: CUDA_CHECK_LAUNCH() after each one
// reports a bad launch; faults inside a kernel surface at the next synchronising call.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace shardscope::gpu {

// What to try next for an error (empty when there is nothing better than the text).
std::string cudaErrorHint(cudaError_t err);
std::string cublasErrorHint(cublasStatus_t status);
std::string ncclErrorHint(ncclResult_t result);
// "ncclInvalidUsage": nccl.h has no name function, only texts.
const char* ncclResultName(ncclResult_t result);

[[noreturn]] void throwCudaError(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throwCublasError(cublasStatus_t status, const char* call, const char* file,
                                   int line);
[[noreturn]] void throwNcclError(ncclResult_t result, const char* call, const char* file,
                                 int line);

}  // namespace shardscope::gpu

#define CUDA_CHECK(call)                                                             \
  do {                                                                               \
    const cudaError_t shardscope_status_ = (call);                                   \
    if (shardscope_status_ != cudaSuccess)                                           \
      ::shardscope::gpu::throwCudaError(shardscope_status_, #call, __FILE__, __LINE__); \
  } while (false)

#define CUBLAS_CHECK(call)                                                             \
  do {                                                                                 \
    const cublasStatus_t shardscope_status_ = (call);                                  \
    if (shardscope_status_ != CUBLAS_STATUS_SUCCESS)                                   \
      ::shardscope::gpu::throwCublasError(shardscope_status_, #call, __FILE__, __LINE__); \
  } while (false)

#define NCCL_CHECK(call)                                                             \
  do {                                                                               \
    const ncclResult_t shardscope_status_ = (call);                                  \
    if (shardscope_status_ != ncclSuccess)                                           \
      ::shardscope::gpu::throwNcclError(shardscope_status_, #call, __FILE__, __LINE__); \
  } while (false)

// After a <<<...>>> launch: a bad configuration or missing kernel image shows here.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
