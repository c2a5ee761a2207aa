// What a rank's work needs from the hardware it runs on, so strategies and the
// Run are written once for every backend.
//
// CPU (the default, no DeviceRuntime): stream threads do the work themselves,
// memory is host memory, DeviceOps are the cpu:: kernels.
// GPU (core/cuda registers a DeviceRuntime factory, backend/device_runtime.h;
// core never includes CUDA headers): every
// CpuStream is paired with a DeviceQueue (a CUDA stream) and its thread only
// *launches* work there. Host order becomes device order automatically:
//  - a task enqueued from another stream's thread first waits, on the device,
//    for what that stream had launched at enqueue time (a marker);
//  - CpuStream::record() also marks the device queue, and StreamEvent::wait()
//    makes the waiting queue wait for that mark;
//  - CpuStream::synchronize() also drains the device queue.
// The rank's host thread has no queue: device work it issues (setup uploads,
// allocations) is synchronous, so later stream work needs no marker for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/run_clock.h"
#include "common/run_control.h"
#include "kernels/cpu_kernels.h"
#include "memory/device_memory.h"
#include "memory/memory_ledger.h"
#include "tensor/bf16.h"

namespace shardscope {

class Model;
class ModelSpec;

// A point in one device queue (a CUDA event): complete once the queue's work
// before it has run.
class DeviceMarker {
 public:
  virtual ~DeviceMarker() = default;
  // The host blocks until the marker is complete, or throws RunAborted once
  // the run is stopped (a hung kernel must not hang a cancel).
  virtual void hostWait(const RunControl& control) const = 0;
};
using DeviceMarkerPtr = std::shared_ptr<DeviceMarker>;

class DeviceQueue {
 public:
  virtual ~DeviceQueue() = default;
  // A marker at the current end of the queue; timing markers can be resolved
  // to the run clock (DeviceTimer), plain ones are cheaper.
  virtual DeviceMarkerPtr mark(bool timing = false) = 0;
  // Later work on this queue starts after `marker` (the host does not block).
  virtual void waitFor(const DeviceMarker& marker) = 0;
  // The host blocks until the queue is drained (RunAborted as hostWait).
  virtual void synchronize(const RunControl& control) = 0;
  virtual void* nativeHandle() const = 0;  // cudaStream_t
  // The stream's worker thread, once before its first task (makes the
  // queue's device current on that thread).
  virtual void bindThread() {}
};

// The device queue of the stream task running on this thread (null on the
// CPU backend and on a rank's host thread).
DeviceQueue* currentDeviceQueue();
void setCurrentDeviceQueue(DeviceQueue* queue);

// The few non-model kernels strategies call. Pointers are device memory
// (host memory on the CPU backend); on a stream thread the call is ordered on
// its queue, on a host thread it is complete at return.
class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;          // device -> device
  virtual void upload(void* dst, const void* host_src, size_t bytes) = 0;    // host -> device
  virtual void download(void* host_dst, const void* src, size_t bytes) = 0;  // device -> host, complete at return
  virtual void scaleBf16(bf16* y, float s, size_t n) = 0;                    // y *= s
  virtual void f32ToBf16(const float* in, bf16* out, size_t n) = 0;
  virtual void adamStep(float* master, float* m, float* v, const bf16* grad, bf16* param_out, size_t n,
                        const cpu::AdamConfig& config, int step) = 0;
};
// The CPU backend's: the cpu:: kernels and memcpy, run on the calling thread.
DeviceOps& cpuDeviceOps();

// One rank's device: its memory, queues, kernels, timing and model.
class RankDevice {
 public:
  virtual ~RankDevice() = default;
  virtual std::string name() const = 0;  // "GPU 0 (NVIDIA H200)"
  virtual DeviceMemory& memory() = 0;
  virtual DeviceOps& ops() = 0;
  // priority: lower is more urgent (communication queues get -1, compute 0).
  virtual std::unique_ptr<DeviceQueue> makeQueue(const std::string& name, int priority) = 0;
  // The model on this device, for one rank's local batch (its activations are
  // device Buffers booked in `ledger`).
  virtual std::unique_ptr<Model> makeModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch,
                                           uint64_t seed) = 0;
  // Timing: syncOrigin() once before the steps pins a device instant to the
  // run clock; then a complete timing marker's time on the run clock.
  virtual void syncOrigin(const RunClock& clock) = 0;
  virtual int64_t markerNs(const DeviceMarker& timing_marker) = 0;
  // Bytes the device's allocator holds beyond what the ledger books (the cache
  // and size-class rounding), and what the device reports in use: for the
  // "allocated vs reserved" line of a summary.
  struct MemoryReport {
    int64_t allocated_bytes = 0, allocated_peak = 0, reserved_bytes = 0, reserved_peak = 0;
    int64_t device_used_bytes = 0, device_total_bytes = 0;
  };
  virtual MemoryReport memoryReport() const = 0;
};

}  // namespace shardscope
