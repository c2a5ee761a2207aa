#include "inspect/stuck_collectives.h"

#include <algorithm>
#include <map>

#include "inspect/event_store.h"

namespace shardscope {

std::vector<StuckCollective> findStuckCollectives(const EventStore& store) {
  std::vector<StuckCollective> out;
  const int ranks = store.rankCount();
  // Who entered each (group, seq); ranks with events only (a map, not an array by id).
  // Each list ascending and unique: ranks are visited in order (no set's node per rank).
  std::map<std::pair<int, int>, std::vector<int>> entered;
  // A copied rank's collectives are its source's in its own groups (eventFor).
  const RankCopies& copies = store.copies();
  for (int r = 0; r < ranks; ++r)
    for (const Event& e : store.events(r))
      if (isCollective(e.kind) && e.seq >= 0) {
        std::vector<int>& in = entered[{copies.eventFor(r, e).group, e.seq}];
        if (in.empty() || in.back() != r) in.push_back(r);
      }
  // The run stopped where its last event ended; a modeled clock does not move
  // while ranks wait, so the stuck span then gets a visible share of the run.
  // An imported trace holds the ranks its files hold (one rank's file of a
  // 300-rank job): a rank without a single event is not in the files, which
  // says nothing of a hang, so nobody waits for it there.
  const bool imported = store.meta().imported != nullptr;
  std::vector<bool> present(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) present[static_cast<size_t>(r)] = !store.events(r).empty();
  const int64_t begin = store.beginNs(), end = store.endNs();
  const int64_t margin = std::max<int64_t>(1, (end - begin) / 6);
  // Who a (group, seq) still waits for: the same for every rank in it, found once.
  std::map<std::pair<int, int>, std::vector<int>> waiting;
  const auto waitingFor = [&](const Event& e) -> const std::vector<int>& {
    const auto [it, fresh] = waiting.try_emplace({e.group, e.seq});
    if (!fresh) return it->second;
    const CommGroup* group = store.meta().group(e.group);
    std::vector<int> members;
    if (group && !group->ranks.empty())
      members = group->ranks;
    else
      for (int q = 0; q < ranks; ++q) members.push_back(q);
    const std::vector<int>& in = entered[{e.group, e.seq}];
    for (int q : members)
      if (!std::binary_search(in.begin(), in.end(), q) && (!imported || (q >= 0 && q < ranks && present[static_cast<size_t>(q)])))
        it->second.push_back(q);
    return it->second;
  };
  // The last collective of each lane: a rank waits in at most one per stream
  // (a copied rank's are its source's, found once).
  std::map<int, size_t> last;
  int last_of = -1;  // the rank whose events `last` was found in
  for (int r = 0; r < ranks; ++r) {
    const std::vector<Event>& events = store.events(r);
    if (last_of != store.sourceOf(r)) {
      last.clear();
      last_of = store.sourceOf(r);
      for (size_t i = 0; i < events.size(); ++i)
        if (isCollective(events[i].kind) && events[i].seq >= 0) {
          auto [it, fresh] = last.try_emplace(static_cast<int>(events[i].lane), i);
          if (!fresh && events[i].begin_ns >= events[it->second].begin_ns) it->second = i;
        }
    }
    for (const auto& [lane, i] : last) {
      const Event e = copies.eventFor(r, events[i]);
      const std::vector<int>& waiting_for = waitingFor(e);
      if (waiting_for.empty()) continue;
      StuckCollective s;
      s.waiting_for = waiting_for;
      s.rank = r;
      s.event = static_cast<int32_t>(i);
      s.begin_ns = e.begin_ns;
      s.until_ns = std::max(e.end_ns, end);
      if (s.until_ns <= e.begin_ns + margin / 4) s.until_ns = e.begin_ns + margin;
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace shardscope
