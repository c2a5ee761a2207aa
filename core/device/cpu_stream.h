// A CPU stream: one worker thread running tasks in FIFO order, like a CUDA
// stream. Streams of one rank run concurrently, so a bucket's all-reduce on the
// comm stream really overlaps backward on the compute stream. A task that
// throws fails the whole run (first error wins) and the stream drops the rest.
// On a GPU run the stream owns a DeviceQueue and its tasks launch work there;
// see device/rank_device.h for how host order becomes device order.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/run_control.h"
#include "common/timeline.h"
#include "device/rank_device.h"
#include "device/stream_event.h"

namespace shardscope {

class CpuStream {
 public:
  // slot: this stream's op-id slot (see TimelineCursor); streams of one rank differ.
  CpuStream(std::string name, RunControl& control, int slot = -1, std::unique_ptr<DeviceQueue> queue = nullptr);
  ~CpuStream();
  CpuStream(const CpuStream&) = delete;
  CpuStream& operator=(const CpuStream&) = delete;

  void enqueue(std::function<void()> task);
  // Enqueues a fence that fires when every task before it has run.
  StreamEventPtr record(int32_t op_id = -1);
  // Enqueues a wait: later tasks run only after `event` fires.
  void waitEvent(StreamEventPtr event);
  // Host side: blocks until every task enqueued so far has run, and its device
  // work too (throws RunAborted).
  void synchronize();
  DeviceQueue* deviceQueue() const { return m_queue.get(); }
  const std::string& name() const { return m_name; }

 private:
  struct Task {
    std::function<void()> fn;
    int64_t issued_at;  // the issuing thread's modeled time: a task never starts earlier
  };
  void workerLoop();

  std::string m_name;
  TimelineCursor m_cursor;
  RunControl& m_control;
  std::unique_ptr<DeviceQueue> m_queue;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<Task> m_tasks;
  bool m_stopping = false;
  std::thread m_worker;
};

}  // namespace shardscope
