// The run's clock, one origin for every rank and lane. Measured: ns since the
// run started (steady_clock). Modeled: each thread's own timeline cursor,
// advanced by op costs from a hardware profile and by cross-stream waits, so
// the figure is what the profile's hardware would do and is deterministic.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/timeline.h"

namespace shardscope {

class RunClock {
 public:
  explicit RunClock(bool modeled = false)
      : m_origin(std::chrono::steady_clock::now()), m_modeled(modeled) {}
  bool modeled() const { return m_modeled; }

  int64_t nowNs() const {
    if (m_modeled) return cursorNow();
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                m_origin)
        .count();
  }
  // Modeled clock only: the calling thread spends `ns` on its current op.
  void advance(int64_t ns) const {
    if (m_modeled && ns > 0) cursorAdvanceTo(cursorNow() + ns);
  }
  void advanceTo(int64_t t) const {
    if (m_modeled) cursorAdvanceTo(t);
  }

 private:
  std::chrono::steady_clock::time_point m_origin;
  bool m_modeled;
};

}  // namespace shardscope
