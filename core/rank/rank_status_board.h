// What each rank is blocked on right now, in words, one line per lane ("host:
// bucket 2 never became ready; missing gradients ..."). A hang report is
// composed from this board, so it names every rank's state, not only the one
// that timed out. Lanes write their own slot, so they never erase each other.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "trace/event.h"

namespace shardscope {

class RankStatusBoard {
 public:
  explicit RankStatusBoard(int ranks) : m_status(static_cast<size_t>(ranks) * kLaneCount) {}
  void set(int rank, Lane lane, std::string status) {
    std::lock_guard lock(m_mutex);
    m_status[slot(rank, lane)] = std::move(status);
  }
  // The non-empty lane states of one rank, joined with "; ".
  std::string get(int rank) const {
    std::lock_guard lock(m_mutex);
    std::string out;
    for (int l = 0; l < kLaneCount; ++l) {
      const std::string& s = m_status[slot(rank, static_cast<Lane>(l))];
      if (s.empty()) continue;
      if (!out.empty()) out += "; ";
      out += s;
    }
    return out;
  }

 private:
  static size_t slot(int rank, Lane lane) {
    return static_cast<size_t>(rank) * kLaneCount + static_cast<size_t>(lane);
  }
  mutable std::mutex m_mutex;
  std::vector<std::string> m_status;
};

}  // namespace shardscope
