// The run's clock, one origin for every rank and lane. Measured: ns since the
// run started (steady_clock). Modeled: each thread's own timeline cursor,
// advanced by op costs from a hardware profile and by cross-stream waits, so
// the figure is what the profile's hardware would do and is deterministic.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/checked_math.h"
#include "common/errors.h"
#include "common/timeline.h"

namespace shardscope {

class RunClock {
 public:
  explicit RunClock(bool modeled = false)
      : m_origin(std::chrono::steady_clock::now()), m_modeled(modeled) {}
  bool modeled() const { return m_modeled; }
  // Ranks in other processes of this host share the launcher's origin
  // (steady_clock is the system's monotonic clock). Before the run starts.
  void setOrigin(std::chrono::steady_clock::time_point origin) { m_origin = origin; }
  std::chrono::steady_clock::time_point origin() const { return m_origin; }

  int64_t nowNs() const {
    if (m_modeled) return cursorNow();
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                m_origin)
        .count();
  }
  // Modeled clock only: the calling thread spends `ns` on its current op.
  // Past kMaxTimeNs the run stops (a RunError), as a trace could not hold it.
  void advance(int64_t ns) const {
    if (!m_modeled || ns <= 0) return;
    const int64_t now = cursorNow();
    if (ns > kMaxTimeNs - now)
      throw RunError("the modeled clock would pass " + std::to_string(kMaxTimeNs / 1'000'000'000) +
                     " s (about 31 years) of run time: the hardware profile's figures are too small for this run");
    cursorAdvanceTo(now + ns);
  }
  void advanceTo(int64_t t) const {
    if (m_modeled) cursorAdvanceTo(t);
  }

 private:
  std::chrono::steady_clock::time_point m_origin;
  bool m_modeled;
};

}  // namespace shardscope
