// CudaStream / CudaEvent. Every call that touches a stream or an event makes its
// device current first: ranks are threads, and a thread's current device is
// whatever it last set, not the device the object lives on.
#include "cuda/cuda_stream.h"

#include <stdexcept>
#include <utility>

#include "cuda/cuda_check.h"

namespace shardscope::gpu {

DeviceGuard::DeviceGuard(int device) {
  CUDA_CHECK(cudaGetDevice(&m_previous));
  if (device != m_previous) CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != m_previous) cudaSetDevice(m_previous);
}

CudaEvent::CudaEvent(Timing timing, int device) : m_timing(timing == Timing::On) {
  if (device < 0) CUDA_CHECK(cudaGetDevice(&device));
  m_device = device;
  DeviceGuard guard(device);
  CUDA_CHECK(cudaEventCreateWithFlags(&m_event, m_timing ? cudaEventDefault
                                                          : cudaEventDisableTiming));
}

CudaEvent::~CudaEvent() { destroy(); }

CudaEvent::CudaEvent(CudaEvent&& other) noexcept { *this = std::move(other); }

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    destroy();
    m_event = std::exchange(other.m_event, nullptr);
    m_device = other.m_device;
    m_timing = other.m_timing;
  }
  return *this;
}

void CudaEvent::destroy() noexcept {
  if (m_event) cudaEventDestroy(m_event);  // safe while pending: freed once it fires
  m_event = nullptr;
}

void CudaEvent::record(StreamHandle stream) {
  DeviceGuard guard(m_device);
  CUDA_CHECK(cudaEventRecord(m_event, stream));
}

bool CudaEvent::isComplete() const {
  const cudaError_t status = cudaEventQuery(m_event);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();  // NotReady is an answer, not an error to keep
    return false;
  }
  CUDA_CHECK(status);
  return true;
}

void CudaEvent::synchronize() const { CUDA_CHECK(cudaEventSynchronize(m_event)); }

float elapsedMs(const CudaEvent& start, const CudaEvent& end) {
  if (!start.timing() || !end.timing()) {
    throw std::invalid_argument(
        "elapsedMs: both events must be created with CudaEvent::Timing::On");
  }
  end.synchronize();
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.handle(), end.handle()));
  return ms;
}

CudaStream::CudaStream(int device, std::string name, int priority)
    : m_device(device), m_name(std::move(name)) {
  DeviceGuard guard(device);
  CUDA_CHECK(cudaStreamCreateWithPriority(&m_stream, cudaStreamNonBlocking, priority));
}

CudaStream::~CudaStream() {
  if (!m_stream) return;
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(m_device);
  cudaStreamSynchronize(m_stream);  // a faulted context fails here; nothing to do about it
  cudaStreamDestroy(m_stream);
  cudaGetLastError();
  cudaSetDevice(previous);
}

CudaEventPtr CudaStream::record(CudaEvent::Timing timing) {
  auto event = std::make_shared<CudaEvent>(timing, m_device);
  event->record(m_stream);
  return event;
}

void CudaStream::waitEvent(const CudaEvent& event) {
  DeviceGuard guard(m_device);
  CUDA_CHECK(cudaStreamWaitEvent(m_stream, event.handle(), 0));
}

void CudaStream::synchronize() {
  DeviceGuard guard(m_device);
  CUDA_CHECK(cudaStreamSynchronize(m_stream));
}

bool CudaStream::isIdle() const {
  DeviceGuard guard(m_device);
  const cudaError_t status = cudaStreamQuery(m_stream);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  CUDA_CHECK(status);
  return true;
}

}  // namespace shardscope::gpu
