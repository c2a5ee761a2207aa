#include "common/run_control.h"

namespace shardscope {

bool RunControl::fail(const std::string& message) {
  bool first = false;
  {
    std::lock_guard lock(m_mutex);
    // After a cancel, errors are its echoes (aborted collectives): not recorded.
    if (!m_hasError && !m_aborted.load(std::memory_order_acquire)) {
      m_error = message;
      m_hasError = true;
      first = true;
    }
  }
  m_aborted.store(true, std::memory_order_release);
  runAbortHandler();
  return first;
}

void RunControl::cancel() {
  m_aborted.store(true, std::memory_order_release);
  runAbortHandler();
}

void RunControl::setAbortHandler(std::function<void()> handler) {
  std::lock_guard lock(m_handlerMutex);
  m_abortHandler = std::move(handler);
}

void RunControl::runAbortHandler() {
  // Held while the handler runs, so clearing it waits for a running handler.
  std::lock_guard lock(m_handlerMutex);
  if (m_handlerRan || !m_abortHandler) return;
  m_handlerRan = true;
  m_abortHandler();
}

bool RunControl::hasError() const {
  std::lock_guard lock(m_mutex);
  return m_hasError;
}

std::string RunControl::error() const {
  std::lock_guard lock(m_mutex);
  return m_error;
}

}  // namespace shardscope
