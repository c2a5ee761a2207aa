#include "comm/peer_fingerprint_check.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "comm/gloo_communicator.h"
#include "common/errors.h"
#include "common/log.h"

namespace shardscope {

namespace {
// What travels: fixed-width fields, so ranks of one build agree on the layout.
struct WireFingerprint {
  int32_t op = 0, group = 0, bucket = 0, unit = 0, seq = 0, reserved = 0;
  int64_t bytes = 0;
  int64_t arrival_ns = 0;
};
static_assert(sizeof(WireFingerprint) == 40);

WireFingerprint toWire(const Fingerprint& fp, int64_t arrival_ns) {
  return {static_cast<int32_t>(fp.op), fp.group, fp.bucket, fp.unit, fp.seq, 0, fp.bytes, arrival_ns};
}

Fingerprint fromWire(const WireFingerprint& w) {
  return {static_cast<EventKind>(w.op), w.group, w.bucket, w.unit, w.bytes, w.seq};
}
}  // namespace

PeerFingerprintCheck::PeerFingerprintCheck(std::string group_name, std::vector<int> members, GlooCommunicator& comm,
                                           std::chrono::milliseconds timeout)
    : m_name(std::move(group_name)), m_members(std::move(members)), m_comm(comm), m_timeout(timeout) {}

int64_t PeerFingerprintCheck::check(int group_rank, const Fingerprint& fp, int64_t arrival_ns,
                                    std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) timeout = m_timeout;
  const size_t n = m_members.size();
  const WireFingerprint mine = toWire(fp, arrival_ns);
  std::vector<WireFingerprint> all(n);
  const std::vector<int> missing_group_ranks = m_comm.exchangeUncounted(&mine, all.data(), sizeof mine, timeout);
  if (!missing_group_ranks.empty()) {
    std::vector<int> waiting, missing;
    for (size_t q = 0; q < n; ++q) {
      const bool absent = std::find(missing_group_ranks.begin(), missing_group_ranks.end(), static_cast<int>(q)) !=
                          missing_group_ranks.end();
      (absent ? missing : waiting).push_back(m_members[q]);
    }
    const std::string report = "collective hang in group " + m_name + " (timeout " + std::to_string(timeout.count()) +
                               " ms): " + stuckText(fp, waiting, missing) +
                               " The missing ranks are other processes: their own messages say where they stopped.";
    SPDLOG_LOGGER_ERROR(&logger(LogComponent::Comm), "{}", report);
    throw RunError(report);
  }
  std::vector<std::optional<Fingerprint>> posted(n);
  bool same = true;
  int64_t latest = 0;
  for (size_t q = 0; q < n; ++q) {
    posted[q] = fromWire(all[q]);
    same &= *posted[q] == fp;
    latest = std::max(latest, all[q].arrival_ns);
  }
  (void)group_rank;  // this process's member is the communicator's own rank
  if (!same) {
    const std::string report = mismatchReport(m_name, fp.seq, m_members, posted);
    SPDLOG_LOGGER_ERROR(&logger(LogComponent::Comm), "{}", report);
    throw RunError(report);
  }
  return latest;
}

}  // namespace shardscope
