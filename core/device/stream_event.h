// A fence between streams, with CUDA event semantics: a stream records it (the
// event fires when the stream reaches that point), another stream or the host
// waits on it. One-shot: record a new event for each dependency.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>

#include "common/run_control.h"
#include "common/timeline.h"
#include "device/rank_device.h"

namespace shardscope {

class StreamEvent {
 public:
  explicit StreamEvent(int32_t op_id = -1) : m_opId(op_id) {}
  void signal() {
    {
      std::lock_guard lock(m_mutex);
      m_signaled = true;
      m_time = cursorNow();  // the recording stream's modeled time
    }
    m_cv.notify_all();
  }
  bool isSignaled() const {
    std::lock_guard lock(m_mutex);
    return m_signaled;
  }
  // Blocks until signalled; throws RunAborted if the run aborts first. On a
  // GPU run the waiting stream's device queue then waits for the recording
  // queue's mark (a host thread without a queue waits for it itself).
  void wait(const RunControl& control) const {
    DeviceMarkerPtr marker;
    {
      std::unique_lock lock(m_mutex);
      control.waitUntil(lock, m_cv, [&] { return m_signaled; });
      cursorAdvanceTo(m_time);  // the waiter cannot go on before the event happened
      marker = m_marker;
    }
    if (!marker) return;
    if (DeviceQueue* q = currentDeviceQueue()) q->waitFor(*marker);
    else marker->hostWait(control);
  }
  // The recording stream, before signal(): its device queue's mark.
  void setDeviceMarker(DeviceMarkerPtr marker) {
    std::lock_guard lock(m_mutex);
    m_marker = std::move(marker);
  }
  // op id of the last op enqueued before the record (for dependency arrows).
  int32_t opId() const { return m_opId; }

 private:
  mutable std::mutex m_mutex;
  mutable std::condition_variable m_cv;
  bool m_signaled = false;
  int64_t m_time = 0;
  DeviceMarkerPtr m_marker;
  int32_t m_opId;
};

using StreamEventPtr = std::shared_ptr<StreamEvent>;

}  // namespace shardscope
