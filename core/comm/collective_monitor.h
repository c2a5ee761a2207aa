// Fingerprint check before every collective, as PyTorch's
// TORCH_DISTRIBUTED_DEBUG=DETAIL does: the ranks of a group post (op, group,
// bucket/unit, bytes, seq) and wait, with a timeout, until all have posted the
// same. A mismatch or a rank that never arrives (the rank-dependent branch)
// becomes one RunError naming the ranks, op and bucket — never a silent hang.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/run_control.h"
#include "rank/rank_status_board.h"
#include "trace/event.h"

namespace shardscope {

struct Fingerprint {
  EventKind op = EventKind::AllReduce;
  int group = 0;
  int bucket = -1;
  int unit = -1;
  int64_t bytes = 0;
  int seq = 0;
  bool operator==(const Fingerprint&) const = default;
};

std::string describe(const Fingerprint& fp);

// What a ProcessGroup asks before each collective: have all members issued the
// same one, and when did the last of them arrive (modeled clock)? Ranks that
// are threads of one process answer it in memory (CollectiveMonitor); ranks in
// separate processes exchange their fingerprints (PeerFingerprintCheck).
class CollectiveCheck {
 public:
  virtual ~CollectiveCheck() = default;
  // Returns the latest arrival of all members, or throws RunError naming the
  // mismatch or the ranks that never arrived. timeout < 0: the check's own.
  virtual int64_t check(int group_rank, const Fingerprint& fp, int64_t arrival_ns,
                        std::chrono::milliseconds timeout) = 0;
  virtual const std::vector<int>& members() const = 0;  // global ranks, in group-rank order
};

// "collective mismatch in group G at seq S: rank 0 issued …; rank 1 issued …. …"
std::string mismatchReport(const std::string& group, int seq, const std::vector<int>& members,
                           const std::vector<std::optional<Fingerprint>>& posted);
// "ranks 0 and 2 are stuck in …, waiting for rank 1." (without the statuses)
std::string stuckText(const Fingerprint& fp, const std::vector<int>& waiting, const std::vector<int>& missing);

class CollectiveMonitor final : public CollectiveCheck {
 public:
  // members: global rank of each group rank; board: states of all global ranks.
  CollectiveMonitor(std::string group_name, std::vector<int> members, RankStatusBoard& board,
                    RunControl& control, std::chrono::milliseconds timeout);

  // Called by group rank `group_rank` before its collective. Returns when all
  // members posted the same fingerprint — with the latest of their modeled
  // arrival times, when the collective can really start — or throws RunError.
  // timeout < 0: the monitor's own.
  int64_t check(int group_rank, const Fingerprint& fp, int64_t arrival_ns = 0,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) override;
  const std::vector<int>& members() const override { return m_members; }
  // Symmetric replication (meta backend): only the members whose flag is set
  // (by global rank) run; the others are copies of them and never post. A
  // collective then starts once every simulated member has posted.
  void setSimulated(const std::vector<bool>& simulated_by_rank);

 private:
  std::string hangReport(const Fingerprint& fp, const std::vector<std::optional<Fingerprint>>& posted,
                         std::chrono::milliseconds timeout) const;

  std::string m_name;
  std::vector<int> m_members;
  int m_expected = 0;  // members that post: all, unless some are replicated
  std::vector<bool> m_posts;  // per group rank: false for a replicated rank
  RankStatusBoard& m_board;
  RunControl& m_control;
  std::chrono::milliseconds m_timeout;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::map<int, std::vector<std::optional<Fingerprint>>> m_posted;  // seq -> per group rank
  std::map<int, int64_t> m_latestArrival;                            // seq -> max arrival
  std::map<int, int> m_arrived;                                      // seq -> ranks posted
  std::map<int, int> m_released;                                    // seq -> ranks done
};

}  // namespace shardscope
