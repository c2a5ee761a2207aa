#include "comm/collective_monitor.h"

#include <algorithm>
#include <sstream>

#include "common/errors.h"
#include "common/log.h"

namespace shardscope {

std::string describe(const Fingerprint& fp) {
  std::ostringstream os;
  os << eventKindName(fp.op);
  if (fp.bucket >= 0) os << " of bucket " << fp.bucket;
  if (fp.unit >= 0) os << " of unit " << fp.unit;
  os << " (" << fp.bytes << " bytes, seq " << fp.seq << ")";
  return os.str();
}

namespace {
std::string joinRanks(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += i + 1 == ranks.size() ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}
}  // namespace

std::string mismatchReport(const std::string& group, int seq, const std::vector<int>& members,
                           const std::vector<std::optional<Fingerprint>>& posted) {
  std::ostringstream os;
  os << "collective mismatch in group " << group << " at seq " << seq << ": ";
  bool first = true;
  for (size_t q = 0; q < posted.size(); ++q) {
    if (!posted[q]) continue;  // a replicated rank
    os << (first ? "" : "; ") << "rank " << members[q] << " issued " << describe(*posted[q]);
    first = false;
  }
  os << ". Every rank must issue the same collectives in the same order.";
  return os.str();
}

std::string stuckText(const Fingerprint& fp, const std::vector<int>& waiting, const std::vector<int>& missing) {
  std::ostringstream os;
  os << "rank" << (waiting.size() > 1 ? "s " : " ") << joinRanks(waiting)
     << (waiting.size() > 1 ? " are" : " is") << " stuck in " << describe(fp) << ", waiting for rank"
     << (missing.size() > 1 ? "s " : " ") << joinRanks(missing) << ".";
  return os.str();
}

CollectiveMonitor::CollectiveMonitor(std::string group_name, std::vector<int> members,
                                     RankStatusBoard& board, RunControl& control,
                                     std::chrono::milliseconds timeout)
    : m_name(std::move(group_name)),
      m_members(std::move(members)),
      m_board(board),
      m_control(control),
      m_timeout(timeout) {
  m_expected = static_cast<int>(m_members.size());
  m_posts.assign(m_members.size(), true);
}

void CollectiveMonitor::setSimulated(const std::vector<bool>& simulated_by_rank) {
  m_expected = 0;
  for (size_t g = 0; g < m_members.size(); ++g) {
    m_posts[g] = simulated_by_rank[static_cast<size_t>(m_members[g])];
    m_expected += m_posts[g] ? 1 : 0;
  }
}

int64_t CollectiveMonitor::check(int group_rank, const Fingerprint& fp, int64_t arrival_ns,
                                 std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) timeout = m_timeout;
  const int n = static_cast<int>(m_members.size());
  std::unique_lock lock(m_mutex);
  auto& slots = m_posted[fp.seq];
  if (slots.empty()) slots.resize(n);
  slots[group_rank] = fp;
  auto& latest = m_latestArrival[fp.seq];
  latest = std::max(latest, arrival_ns);
  // Only the last arrival wakes the others: O(P) wake-ups per collective, which
  // keeps a 512-rank meta run cheap.
  const int expected = m_expected;
  if (++m_arrived[fp.seq] == expected) m_cv.notify_all();
  auto all_posted = [&] { return m_arrived[fp.seq] == expected; };
  if (!m_control.waitUntil(lock, m_cv, all_posted, timeout)) {
    const std::string report = hangReport(fp, m_posted[fp.seq], timeout);
    SPDLOG_LOGGER_ERROR(&logger(LogComponent::Comm), "{}", report);
    throw RunError(report);
  }
  const auto& posted = m_posted[fp.seq];
  for (int r = 0; r < n; ++r) {
    if (posted[r] && *posted[r] != fp) {
      const std::string report = mismatchReport(m_name, fp.seq, m_members, posted);
      SPDLOG_LOGGER_ERROR(&logger(LogComponent::Comm), "{}", report);
      throw RunError(report);
    }
  }
  const int64_t start = m_latestArrival[fp.seq];
  if (++m_released[fp.seq] == expected) {  // last one out forgets the slot
    m_posted.erase(fp.seq);
    m_released.erase(fp.seq);
    m_latestArrival.erase(fp.seq);
    m_arrived.erase(fp.seq);
  }
  return start;
}

std::string CollectiveMonitor::hangReport(const Fingerprint& fp,
                                          const std::vector<std::optional<Fingerprint>>& posted,
                                          std::chrono::milliseconds timeout) const {
  std::vector<int> waiting, missing;
  for (size_t r = 0; r < posted.size(); ++r)
    if (m_posts[r]) (posted[r] ? waiting : missing).push_back(m_members[r]);
  std::ostringstream os;
  os << "collective hang in group " << m_name << " (timeout " << timeout.count() << " ms): "
     << stuckText(fp, waiting, missing);
  for (int r : missing) {
    const std::string status = m_board.get(r);
    os << " Rank " << r << ": " << (status.empty() ? "no status" : status) << ".";
  }
  return os.str();
}

}  // namespace shardscope
