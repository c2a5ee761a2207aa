// One rank's link (intra- or inter-node) under the modeled clock: it carries
// one transfer at a time. Transfers are admitted in issue order — a ticket is
// taken when the host thread enqueues the collective, not when a stream runs
// it — so placement never depends on how threads interleave and a modeled
// trace stays byte-identical. An earlier ticket owns the link; a later one
// uses only the idle time the earlier ones left (preemptive-resume).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "common/run_control.h"

namespace shardscope {

struct LinkInterval {
  int64_t begin = 0;  // modeled ns
  int64_t end = 0;    // modeled ns, exclusive
};

class LinkArbiter {
 public:
  explicit LinkArbiter(const RunControl& control) : m_control(control) {}
  LinkArbiter(const LinkArbiter&) = delete;
  LinkArbiter& operator=(const LinkArbiter&) = delete;

  // The rank's host thread, when it enqueues a collective on this link.
  // issued_at_ns: its modeled time then (non-decreasing from one call to the
  // next); the transfer cannot start earlier. Tickets count up from 0.
  int64_t takeTicket(int64_t issued_at_ns);
  // A lane thread: blocks (real time) until every lower ticket is released.
  // Throws RunAborted if the run stops first.
  void waitTurn(int64_t ticket);
  // With the turn: the busy pieces of a transfer of duration_ns that may start
  // at start_ns (>= its issue time), filling the link's idle time from there
  // on; it ends where the last piece ends. Nothing is recorded yet.
  std::vector<LinkInterval> place(int64_t ticket, int64_t start_ns, int64_t duration_ns);
  // With the turn: records the pieces as busy and passes the turn on.
  void release(int64_t ticket, const std::vector<LinkInterval>& pieces);

  // Busy intervals still kept (sorted, disjoint); for tests.
  std::vector<LinkInterval> busy() const;

 private:
  void checkTurn(int64_t ticket) const;  // caller holds m_mutex

  const RunControl& m_control;
  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  int64_t m_nextTicket = 0;
  int64_t m_turn = 0;               // lowest ticket not yet released
  std::deque<int64_t> m_issuedAt;   // issue time of tickets m_turn, m_turn + 1, ...
  std::vector<LinkInterval> m_busy;  // sorted by begin, disjoint, touching ones merged
};

}  // namespace shardscope
