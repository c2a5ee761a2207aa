// Messages and hints of the check macros. cudaGetLastError() after a runtime
// failure clears a non-sticky error, so the next CUDA_CHECK_LAUNCH() does not
// report it a second time; sticky errors (a faulted kernel) stay and recur.
#include "cuda/cuda_check.h"

#include <stdexcept>

namespace shardscope::gpu {
namespace {

std::string format(const char* call, const char* file, int line, const std::string& name,
                   const std::string& text, const std::string& hint) {
  std::string message = std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                        ": " + name + ": " + text;
  if (!hint.empty()) message += " (hint: " + hint + ")";
  return message;
}

}  // namespace

std::string cudaErrorHint(cudaError_t err) {
  switch (err) {
    case cudaErrorNoDevice:
      return "no GPU is visible to this process: check nvidia-smi and CUDA_VISIBLE_DEVICES";
    case cudaErrorInsufficientDriver:
      return "the driver is older than this CUDA runtime: update the driver or build with an "
             "older toolkit";
    case cudaErrorInvalidDevice:
      return "the device index is not below cudaGetDeviceCount(): check CUDA_VISIBLE_DEVICES";
    case cudaErrorMemoryAllocation:
      return "out of device memory: lower the batch or sequence length, or shard more "
             "(ZeRO/FSDP); the allocator's stats say how much is reserved vs allocated";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return "this build has no code for this GPU's architecture: add its compute capability to "
             "SHARDSCOPE_CUDA_ARCHITECTURES (90-real for H100/H200)";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
      return "a kernel touched memory it does not own; the context is lost (restart the "
             "process) and compute-sanitizer on a small case names the kernel";
    case cudaErrorLaunchOutOfResources:
      return "too many registers or too much shared memory for the block size: launch with "
             "fewer threads per block";
    case cudaErrorInvalidConfiguration:
      return "grid or block dimensions out of range (zero, or over the device limits)";
    case cudaErrorInvalidValue:
      return "an argument is out of range: a null pointer, a zero or negative size, or a "
             "pointer from another device";
    case cudaErrorDevicesUnavailable:
      return "the GPU is in exclusive mode and held by another process";
    default:
      return "";
  }
}

std::string cublasErrorHint(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "cuBLAS could not initialise: usually no usable GPU or an out-of-memory context";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "cuBLAS could not allocate its workspace: free device memory first";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "a size or leading dimension is invalid: ld must be >= the stored row length";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "this GPU lacks the feature (e.g. bf16 tensor cores need compute capability 8.0+)";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "no kernel for this type/layout combination: check 16-byte pointer alignment and "
             "leading dimensions that are multiples of 8 for bf16";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GEMM kernel failed to run: a previous kernel may have faulted";
    default:
      return "";
  }
}

const char* ncclResultName(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult?";
  }
}

std::string ncclErrorHint(ncclResult_t result) {
  switch (result) {
    case ncclUnhandledCudaError:
      return "a CUDA call inside NCCL failed: rerun with NCCL_DEBUG=WARN to see which";
    case ncclSystemError:
      return "a system call or the network failed: rerun with NCCL_DEBUG=INFO";
    case ncclInvalidArgument:
      return "a bad pointer, count, datatype or root: buffers must be device memory of the "
             "communicator's GPU";
    case ncclInvalidUsage:
      return "every rank must call the same collectives in the same order, one rank per GPU";
    case ncclRemoteError:
      return "a peer rank failed or went away";
    default:
      return "";
  }
}

void throwCudaError(cudaError_t err, const char* call, const char* file, int line) {
  cudaGetLastError();
  throw std::runtime_error(format(call, file, line, cudaGetErrorName(err),
                                  cudaGetErrorString(err), cudaErrorHint(err)));
}

void throwCublasError(cublasStatus_t status, const char* call, const char* file, int line) {
  throw std::runtime_error(format(call, file, line, cublasGetStatusName(status),
                                  cublasGetStatusString(status), cublasErrorHint(status)));
}

void throwNcclError(ncclResult_t result, const char* call, const char* file, int line) {
  std::string text = ncclGetErrorString(result);
  const char* detail = ncclGetLastError(nullptr);
  if (detail && *detail) text += " (" + std::string(detail) + ")";
  throw std::runtime_error(format(call, file, line, ncclResultName(result), text,
                                  ncclErrorHint(result)));
}

}  // namespace shardscope::gpu
