// The rank map of a run whose ranks are copies (symmetric replication on the
// meta backend): which rank carries which simulated rank's events. A copy's
// events are its source's with the rank and group ids made its own; they are
// derived on demand (eventFor), never stored, so a copy costs no memory.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trace/event.h"

namespace shardscope {

class RankCopies {
 public:
  // Group ids a copy rewrites: its source's group -> its own, first match wins.
  using GroupMap = std::array<std::pair<int16_t, int16_t>, 7>;

  RankCopies() = default;
  // source[r]: the rank whose events rank r carries (r itself: its own);
  // groups[r]: rank r's rewrite of its source's group ids.
  RankCopies(std::vector<int> source, std::vector<GroupMap> groups);

  bool empty() const { return m_copies == 0; }        // every rank carries its own events
  int copies() const { return m_copies; }             // ranks that are copies
  int sourceOf(int rank) const {
    return rank >= 0 && static_cast<size_t>(rank) < m_source.size() ? m_source[static_cast<size_t>(rank)] : rank;
  }
  bool isCopy(int rank) const { return sourceOf(rank) != rank; }
  // The ranks (ascending) that are copies of `source`.
  std::vector<int> copiesOf(int source) const;
  // Rank `rank`'s event for its source's event e.
  Event eventFor(int rank, Event e) const {
    if (!isCopy(rank)) return e;
    e.rank = static_cast<int16_t>(rank);
    if (e.group >= 0)
      for (const auto& [from, to] : m_groups[static_cast<size_t>(rank)])
        if (from >= 0 && e.group == from) {
          e.group = to;
          break;
        }
    return e;
  }
  // Every copied rank's events, derived from events[source] (events[r] of a copy is empty before).
  void expand(std::vector<std::vector<Event>>& events) const;

 private:
  std::vector<int> m_source;
  std::vector<GroupMap> m_groups;
  int m_copies = 0;
};

// "1–7", "1–3, 5–7": ascending ranks as ranges (the timeline's and the CLI's "ranks 1–7: same as rank 0").
std::string rankRangesText(const std::vector<int>& ranks);

}  // namespace shardscope
