// RAII CUDA streams and events with CpuStream/StreamEvent semantics: a stream
// records an event (it fires when the stream reaches that point), another stream
// waits on it without blocking the host, the host synchronizes. Events are
// one-shot like StreamEvent; only timing events (Timing::On) can be measured.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "cuda/stream_handle.h"

namespace shardscope::gpu {

// Makes `device` current for a scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int m_previous = -1;
};

class CudaEvent {
 public:
  enum class Timing { Off, On };  // Off is cheaper to record and to wait on
  // Created on `device` (-1: the current one).
  explicit CudaEvent(Timing timing = Timing::Off, int device = -1);
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  void record(StreamHandle stream);
  // True once the work before the last record() has finished (or if never recorded).
  bool isComplete() const;
  void synchronize() const;  // host blocks until isComplete()
  cudaEvent_t handle() const { return m_event; }
  bool timing() const { return m_timing; }
  int device() const { return m_device; }

 private:
  void destroy() noexcept;
  cudaEvent_t m_event = nullptr;
  int m_device = -1;
  bool m_timing = false;
};

using CudaEventPtr = std::shared_ptr<CudaEvent>;

// ms of device time between two timing events, both recorded and complete
// (synchronizes on `end`). Throws if either was created with Timing::Off.
float elapsedMs(const CudaEvent& start, const CudaEvent& end);

class CudaStream {
 public:
  // A non-blocking stream on `device` (it does not serialise with the legacy
  // default stream). priority: lower is more urgent; 0 is the default.
  CudaStream(int device, std::string name, int priority = 0);
  // Waits for the stream's work, then destroys it; never throws.
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  // Records a fresh event at the current end of the stream (CpuStream::record).
  CudaEventPtr record(CudaEvent::Timing timing = CudaEvent::Timing::Off);
  void record(CudaEvent& event) { event.record(m_stream); }
  // Later work on this stream starts after `event` fires; the host does not block.
  void waitEvent(const CudaEvent& event);
  void waitEvent(const CudaEventPtr& event) { waitEvent(*event); }
  // Host blocks until every operation enqueued so far has run.
  void synchronize();
  bool isIdle() const;

  StreamHandle handle() const { return m_stream; }
  int device() const { return m_device; }
  const std::string& name() const { return m_name; }

 private:
  StreamHandle m_stream = nullptr;
  int m_device = -1;
  std::string m_name;
};

}  // namespace shardscope::gpu
