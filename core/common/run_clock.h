// The measured clock: ns since the run started, from steady_clock. Every event
// of a run uses the same origin, so ranks and lanes line up in the timeline.
#pragma once

#include <chrono>
#include <cstdint>

namespace shardscope {

class RunClock {
 public:
  RunClock() : m_origin(std::chrono::steady_clock::now()) {}
  int64_t nowNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now() - m_origin)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point m_origin;
};

}  // namespace shardscope
