#include "device/cpu_stream.h"

#include <exception>

#include "common/thread_start.h"

namespace shardscope {

CpuStream::CpuStream(std::string name, RunControl& control, int slot, std::unique_ptr<DeviceQueue> queue)
    : m_name(std::move(name)), m_control(control), m_queue(std::move(queue)) {
  m_cursor.op_base = slot >= 0 ? slot << 24 : -1;
  m_worker = startThread("stream " + m_name, [this] { workerLoop(); });  // throws ResourceError
}

CpuStream::~CpuStream() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_cv.notify_all();
  m_worker.join();
  m_queue.reset();  // waits for the queue's device work (CUDA stream destruction)
}

void CpuStream::enqueue(std::function<void()> task) {
  DeviceQueue* from = currentDeviceQueue();
  if (m_queue && from && from != m_queue.get()) {
    // Issued from another stream's task: this work may read what that stream
    // launched so far (a gradient, a gathered unit), so it waits for it on
    // the device too.
    task = [marker = from->mark(), fn = std::move(task)] {
      currentDeviceQueue()->waitFor(*marker);
      fn();
    };
  }
  {
    std::lock_guard lock(m_mutex);
    m_tasks.push_back({std::move(task), cursorNow()});
  }
  m_cv.notify_one();
}

StreamEventPtr CpuStream::record(int32_t op_id) {
  auto event = std::make_shared<StreamEvent>(op_id);
  enqueue([event] {
    if (DeviceQueue* q = currentDeviceQueue()) event->setDeviceMarker(q->mark());
    event->signal();
  });
  return event;
}

void CpuStream::waitEvent(StreamEventPtr event) {
  enqueue([this, event] { event->wait(m_control); });
}

void CpuStream::synchronize() {
  record()->wait(m_control);
  if (m_queue) m_queue->synchronize(m_control);  // also when called from another stream's task
}

void CpuStream::workerLoop() {
  setCurrentCursor(&m_cursor);
  if (m_queue) {
    try {
      m_queue->bindThread();
    } catch (const std::exception& e) {
      m_control.fail(m_name + ": " + e.what());
    }
    setCurrentDeviceQueue(m_queue.get());
  }
  for (;;) {
    Task task;
    {
      std::unique_lock lock(m_mutex);
      m_cv.wait(lock, [&] { return m_stopping || !m_tasks.empty(); });
      if (m_tasks.empty()) return;  // stopping and drained
      task = std::move(m_tasks.front());
      m_tasks.pop_front();
    }
    if (m_control.isAborted()) continue;  // drop work of a failed/cancelled run
    try {
      cursorAdvanceTo(task.issued_at);
      task.fn();
    } catch (const RunAborted&) {
    } catch (const std::exception& e) {
      m_control.fail(failureText(e));
    } catch (...) {
      m_control.fail("unknown error on stream " + m_name);
    }
  }
}

}  // namespace shardscope
