#include "common/run_control.h"

namespace shardscope {

bool RunControl::fail(const std::string& message) {
  bool first = false;
  {
    std::lock_guard lock(m_mutex);
    if (!m_hasError) {
      m_error = message;
      m_hasError = true;
      first = true;
    }
  }
  m_aborted.store(true, std::memory_order_release);
  return first;
}

void RunControl::cancel() { m_aborted.store(true, std::memory_order_release); }

bool RunControl::hasError() const {
  std::lock_guard lock(m_mutex);
  return m_hasError;
}

std::string RunControl::error() const {
  std::lock_guard lock(m_mutex);
  return m_error;
}

}  // namespace shardscope
