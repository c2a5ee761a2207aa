#include "trace/rank_copies.h"

namespace shardscope {

RankCopies::RankCopies(std::vector<int> source, std::vector<GroupMap> groups)
    : m_source(std::move(source)), m_groups(std::move(groups)) {
  m_groups.resize(m_source.size(), GroupMap{});
  for (size_t r = 0; r < m_source.size(); ++r) m_copies += m_source[r] != static_cast<int>(r);
}

std::vector<int> RankCopies::copiesOf(int source) const {
  std::vector<int> out;
  for (size_t r = 0; r < m_source.size(); ++r)
    if (m_source[r] == source && static_cast<int>(r) != source) out.push_back(static_cast<int>(r));
  return out;
}

void RankCopies::expand(std::vector<std::vector<Event>>& events) const {
  for (size_t r = 0; r < m_source.size() && r < events.size(); ++r) {
    const int rank = static_cast<int>(r);
    if (!isCopy(rank)) continue;
    const std::vector<Event>& from = events[static_cast<size_t>(m_source[r])];
    std::vector<Event>& to = events[r];
    to.clear();
    to.reserve(from.size());
    for (const Event& e : from) to.push_back(eventFor(rank, e));
  }
}

std::string rankRangesText(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += std::to_string(ranks[i]);
    if (j > i) text += "\u2013" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

}  // namespace shardscope
