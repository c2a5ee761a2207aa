#include "kineto/collective_match.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "common/units.h"

namespace shardscope::kineto {

namespace {

std::string matchRankList(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

std::string matchCallText(Collective kind, int64_t bytes) {
  return std::string(collectiveName(kind)) + " " + (bytes >= 0 ? bytesText(double(bytes), 2, ByteUnit::MiB) : "size unknown");
}

}  // namespace

CollectiveMatch matchCollectives(const TraceSet& set) {
  CollectiveMatch out;
  // Group name -> rank index -> that rank's collectives of the group, by start time.
  std::map<std::string, std::map<size_t, std::vector<uint32_t>>> groups;
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    const RankTrace& t = set.ranks[r];
    const TraceIndex& idx = set.indexes[r];
    for (uint32_t k = 0; k < idx.collectives.size(); ++k)
      groups[std::string(t.str(idx.collectives[k].pg_name))][r].push_back(k);
  }
  for (const auto& [pg, ranks] : groups) {
    // "Seq" decides when every call of the group on every rank has one, unique on its rank.
    bool by_seq = true;
    for (const auto& [r, calls] : ranks) {
      std::set<int64_t> seen;
      for (uint32_t k : calls) {
        const int64_t seq = set.indexes[r].collectives[k].seq;
        if (seq < 0 || !seen.insert(seq).second) by_seq = false;
      }
    }
    if (by_seq) out.groups_by_sequence.push_back(pg);
    std::map<int64_t, std::vector<CollectiveEntry>> by_key;  // seq or position -> entries by rank index
    for (const auto& [r, calls] : ranks)
      for (size_t pos = 0; pos < calls.size(); ++pos) {
        const int64_t key = by_seq ? set.indexes[r].collectives[calls[pos]].seq : static_cast<int64_t>(pos);
        by_key[key].push_back({r, calls[pos]});
      }
    int64_t index = 0;
    for (const auto& [key, entries] : by_key) {
      const auto call = [&](const CollectiveEntry& e) -> const TraceCollective& {
        return set.indexes[e.rank_index].collectives[e.collective];
      };
      // Ranks grouped by what they called (kind and size); a size one rank leaves unknown agrees with any.
      int64_t bytes = -1;
      for (const CollectiveEntry& e : entries) bytes = std::max(bytes, call(e).bytes);
      std::map<std::pair<Collective, int64_t>, std::vector<int>> calls;
      for (const CollectiveEntry& e : entries) {
        const TraceCollective& c = call(e);
        calls[{c.kind, c.bytes < 0 ? bytes : c.bytes}].push_back(set.ranks[e.rank_index].rank);
      }
      std::vector<int> missing;
      for (const auto& [r, list] : ranks) {
        bool has = false;
        for (const CollectiveEntry& e : entries) has |= e.rank_index == r;
        if (!has) missing.push_back(set.ranks[r].rank);
      }
      if (calls.size() > 1 || !missing.empty()) {
        CollectiveMismatch m;
        m.pg = pg;
        m.index = index;
        for (const auto& [what, list] : calls)
          m.what += (m.what.empty() ? "" : "; ") + matchRankList(list) + ": " + matchCallText(what.first, what.second);
        if (!missing.empty())
          m.what += "; " + matchRankList(missing) + ": none (" + (by_seq ? "no call with Seq " + std::to_string(key)
                                                                          : std::string("fewer calls in this group")) + ")";
        out.mismatches.push_back(std::move(m));
      } else {
        MatchedCollective mc;
        mc.pg = pg;
        mc.index = index;
        mc.seq = by_seq ? key : -1;
        mc.kind = call(entries.front()).kind;
        mc.bytes = bytes;
        for (const CollectiveEntry& e : entries)
          if (mc.group_size <= 0) mc.group_size = call(e).group_size;
        mc.entries = entries;
        out.collectives.push_back(std::move(mc));
      }
      ++index;
    }
  }
  return out;
}

}  // namespace shardscope::kineto
