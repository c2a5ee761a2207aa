#include "comm/local_ring_board.h"

#include <gloo/common/error.h>

#include <algorithm>
#include <cstring>

namespace shardscope {

LocalRingBoard::LocalRingBoard(int size) : m_size(size) {
  for (int r = 0; r < size; ++r) m_members.push_back(std::make_unique<Member>());
}

std::string LocalRingBoard::describe(const Call& c) {
  return std::string(c.op) + " of " + std::to_string(c.count) + (c.dtype == DType::F32 ? " f32" : " bf16") +
         " elements (collective call " + std::to_string(c.number) + ")";
}

// Every flag here is sequentially consistent: a sleeper counts itself before
// it looks at m_changes, a waker bumps m_changes before it looks at the
// sleepers, so one of the two always sees the other. The lock taken before
// notifying makes sure a sleeper seen is asleep or still looking.
void LocalRingBoard::changed() {
  m_changes.fetch_add(1);
  if (m_sleepers.load() == 0) return;
  { std::lock_guard lock(m_mutex); }
  m_wake.notify_all();
}

bool LocalRingBoard::tryHop(int self, int q, const Call& mine, uint64_t base) {
  Member& m = member(q);
  const uint64_t p = m.progress.load();
  if (p < base || p >= base + static_cast<uint64_t>(mine.steps)) return false;  // not in this call yet, or done
  const int step = static_cast<int>(p - base);
  const int left = neighbour(q, -1), right = neighbour(q, 1);
  if (member(left).progress.load() < base + static_cast<uint64_t>(step)) return false;
  const int need = mine.right_needs(step, m_size);
  if (need > 0 && member(right).progress.load() < base + static_cast<uint64_t>(need)) return false;
  bool idle = false;
  if (!m.busy.compare_exchange_strong(idle, true)) return false;
  // Marked busy before the checks: a member failing meanwhile either is seen
  // here or sees this hop running and waits until it has ended.
  if (m.progress.load() != p || m_failed.load()) {
    m.busy.store(false);
    changed();
    return false;
  }
  // q and its left neighbour stay in this call until q's hops are done, so
  // their calls hold still while the hop reads them.
  for (const int who : {left, q}) {
    const Call& c = member(who).call;
    if (c.number != mine.number || std::strcmp(c.op, mine.op) != 0 || c.dtype != mine.dtype || c.count != mine.count) {
      m.busy.store(false);
      std::unique_lock lock(m_mutex);
      fail(lock, self,
           "the ranks issued different collectives: rank " + std::to_string(who) + " is in " + describe(c) +
               ", rank " + std::to_string(self) + " in " + describe(mine));
    }
  }
  mine.hop(member(left).call, m.call, q, step, m_size);
  m.progress.store(p + 1);
  m.busy.store(false);
  changed();
  return true;
}

// Why `rank` cannot go on: the first member round the ring to its left that
// has not started the call (a rank that never came), else its own wait.
std::string LocalRingBoard::blockedBy(int rank, const Call& mine, uint64_t base) {
  for (int k = 1; k < m_size; ++k) {
    const int who = neighbour(rank, -k);
    if (member(who).progress.load() < base) return "rank " + std::to_string(who) + " to start the " + describe(mine);
  }
  const uint64_t end = base + static_cast<uint64_t>(mine.steps);
  const int who = member(rank).progress.load() < end ? neighbour(rank, -1) : neighbour(rank, 1);
  const uint64_t done = std::min(member(who).progress.load(), end) - base;
  return "rank " + std::to_string(who) + " to go past ring step " + std::to_string(done) + " of the " + describe(mine);
}

void LocalRingBoard::run(int rank, const Call& call, std::chrono::milliseconds timeout) {
  Member& me = member(rank);
  const uint64_t base = call.number << kStepBits;
  const uint64_t end = base + static_cast<uint64_t>(call.steps);
  const int right = neighbour(rank, 1);
  me.call = call;
  me.progress.store(base);
  changed();
  // A member that is gone before its hops of this call are done stops it.
  const auto gone = [&]() -> int {
    for (int q = 0; q < m_size; ++q)
      if (member(q).closed.load() && member(q).progress.load() < end) return q;
    return -1;
  };
  for (;;) {
    // Read before anything it looks at: a change after this wakes the sleep below.
    const uint64_t seen = m_changes.load();
    if (me.aborted.load() || m_failed.load()) {
      std::unique_lock lock(m_mutex);
      fail(lock, rank, me.aborted.load() ? std::string("collective was aborted (run stopped)") : m_broken);
    }
    if (me.progress.load() >= end && member(right).progress.load() >= end) return;
    bool ran = false;
    for (int k = 0; k < m_size; ++k) ran |= tryHop(rank, neighbour(rank, k), call, base);
    if (ran) continue;
    // No hop of the call is ready: sleep until a member publishes or finishes one.
    std::unique_lock lock(m_mutex);
    m_sleepers.fetch_add(1);
    const auto ready = [&] { return m_changes.load() != seen || me.aborted.load() || m_failed.load() || gone() >= 0; };
    const bool woke = timeout.count() < 0 ? (m_wake.wait(lock, ready), true) : m_wake.wait_for(lock, timeout, ready);
    m_sleepers.fetch_sub(1);
    if (!woke) {
      fail(lock, rank,
           "Timed out waiting " + std::to_string(timeout.count()) + " ms for " + blockedBy(rank, call, base) +
               ", which rank " + std::to_string(rank) + " is in");
    }
    if (const int who = gone(); who >= 0 && !me.aborted.load() && !m_failed.load())
      fail(lock, rank, "rank " + std::to_string(who) + " closed its connections (the group stopped)");
  }
}

void LocalRingBoard::fail(std::unique_lock<std::mutex>& lock, int rank, const std::string& why) {
  if (m_broken.empty()) m_broken = "rank " + std::to_string(rank) + ": " + why;
  m_failed.store(true);
  m_wake.notify_all();
  // A hop running now may read this rank's memory, which the caller is about
  // to give back: wait until every hop in flight has ended.
  m_sleepers.fetch_add(1);
  m_wake.wait(lock, [&] {
    return std::none_of(m_members.begin(), m_members.end(), [](const auto& m) { return m->busy.load(); });
  });
  m_sleepers.fetch_sub(1);
  throw gloo::IoException(why);
}

void LocalRingBoard::abort(int rank) {
  member(rank).aborted.store(true);
  std::lock_guard lock(m_mutex);
  m_wake.notify_all();
}

void LocalRingBoard::close(int rank) {
  member(rank).closed.store(true);
  std::lock_guard lock(m_mutex);
  m_wake.notify_all();
}

}  // namespace shardscope
