// Shared stop switch of a run. The first error wins and is kept; every blocking
// wait in the engine polls isAborted() so a failed or cancelled run unwinds
// within one poll interval instead of hanging.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include "common/errors.h"

namespace shardscope {

class RunControl {
 public:
  // How often a blocked wait looks at the stop switch (bounds cancel latency;
  // longer means fewer idle wake-ups when thousands of threads wait).
  static constexpr std::chrono::milliseconds kPoll{25};

  // Records the error (the first one, unless the run was already cancelled) and
  // aborts. Returns true if it was recorded.
  bool fail(const std::string& message);
  void cancel();
  bool isAborted() const { return m_aborted.load(std::memory_order_acquire); }
  // Called once, on the thread that aborts, when the run first fails or is
  // cancelled (e.g. to wake collectives blocked in a transport). Set it before
  // the run starts; clear it (nullptr) before what it touches goes away.
  void setAbortHandler(std::function<void()> handler);
  bool hasError() const;
  std::string error() const;

  // Waits on cv until pred() holds; throws RunAborted if the run aborts first.
  // Returns false on timeout (timeout < 0: none).
  template <class Pred>
  bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Pred pred,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) const;

 private:
  std::atomic<bool> m_aborted{false};
  mutable std::mutex m_mutex;
  std::string m_error;
  std::mutex m_handlerMutex;
  std::function<void()> m_abortHandler;
  bool m_handlerRan = false;
  void runAbortHandler();
  bool m_hasError = false;
};

template <class Pred>
bool RunControl::waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                           Pred pred, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (isAborted()) throw RunAborted();
    if (timeout.count() >= 0 && std::chrono::steady_clock::now() >= deadline) return false;
    cv.wait_for(lock, kPoll);
  }
  return true;
}

}  // namespace shardscope
