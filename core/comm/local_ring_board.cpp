#include "comm/local_ring_board.h"

#include <gloo/common/error.h>

#include <algorithm>
#include <cstring>

namespace shardscope {
namespace {

int ringNeighbour(int rank, int offset, int size) { return ((rank + offset) % size + size) % size; }

}  // namespace

LocalRingBoard::LocalRingBoard(int size) : m_size(size) {
  for (int r = 0; r < size; ++r) m_members.push_back(std::make_unique<Member>());
}

std::string LocalRingBoard::describe(const Call& c) {
  return std::string(c.op) + " of " + std::to_string(c.count) + " " + c.dtype + " elements (collective call " +
         std::to_string(c.number) + ")";
}

// Every flag here is sequentially consistent: a sleeper sets `sleeping`
// before it checks progress, a waker changes progress before it checks
// `sleeping`, so one of the two always sees the other. The lock taken
// before notifying makes sure a sleeper seen is asleep or still checking.
void LocalRingBoard::wake(int rank) {
  Member& m = member(rank);
  if (!m.sleeping.load()) return;
  { std::lock_guard lock(m_mutex); }
  m.cv.notify_all();
}

void LocalRingBoard::begin(int rank, const Call& call) {
  Member& me = member(rank);
  me.call = call;
  me.progress.store(call.number << kStepBits);
  // The right neighbour may wait to read this call's first chunk.
  wake(ringNeighbour(rank, 1, m_size));
}

const LocalRingBoard::Call* LocalRingBoard::await(int rank, int left, uint64_t left_steps, int right,
                                                  uint64_t right_steps, std::chrono::milliseconds timeout) {
  Member& me = member(rank);
  const uint64_t base = me.call.number << kStepBits;
  // The right neighbour is waited for only to have read something of this
  // call: before it starts, nothing of this rank's is being read (it left
  // the call before only after its right neighbour had finished it).
  if (right_steps == 0) right = -1;
  const auto done = [&](int who, uint64_t steps) { return who < 0 || member(who).progress.load() >= base + steps; };
  const auto gone = [&](int who) { return who >= 0 && member(who).closed.load(); };
  const auto satisfied = [&] { return done(left, left_steps) && done(right, right_steps); };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // Marked before the checks: a member failing meanwhile either is seen
    // here or sees this rank mid-step and waits until it is done.
    me.mid_step.store(left >= 0);
    if (me.aborted.load() || m_failed.load()) {
      std::unique_lock lock(m_mutex);
      fail(lock, rank, me.aborted.load() ? std::string("collective was aborted (run stopped)") : m_broken);
    }
    if (satisfied()) break;
    me.mid_step.store(false);
    std::unique_lock lock(m_mutex);
    if (m_failed.load()) m_quiet.notify_all();
    me.sleeping.store(true);
    const auto ready = [&] {
      return satisfied() || me.aborted.load() || m_failed.load() || gone(left) || gone(right);
    };
    const bool woke = timeout.count() < 0 ? (me.cv.wait(lock, ready), true) : me.cv.wait_until(lock, deadline, ready);
    me.sleeping.store(false);
    if (!woke) {
      const bool for_left = !done(left, left_steps);
      const uint64_t steps = for_left ? left_steps : right_steps;
      fail(lock, rank,
           "Timed out waiting " + std::to_string(timeout.count()) + " ms for rank " +
               std::to_string(for_left ? left : right) + " to " +
               (steps == 0 ? std::string("start the ") : "finish ring step " + std::to_string(steps) + " of the ") +
               describe(me.call) + ", which rank " + std::to_string(rank) + " is in");
    }
    if (!satisfied() && !me.aborted.load() && !m_failed.load()) {
      const int who = gone(left) ? left : right;
      fail(lock, rank, "rank " + std::to_string(who) + " closed its connections (the group stopped)");
    }
  }
  if (left < 0) return nullptr;
  // Left's call was published before its progress, which this rank has read.
  const Call* theirs = &member(left).call;
  if (theirs->number != me.call.number || std::strcmp(theirs->op, me.call.op) != 0 ||
      std::strcmp(theirs->dtype, me.call.dtype) != 0 || theirs->count != me.call.count) {
    std::unique_lock lock(m_mutex);
    fail(lock, rank,
         "the ranks issued different collectives: rank " + std::to_string(left) + " is in " + describe(*theirs) +
             ", rank " + std::to_string(rank) + " in " + describe(me.call));
  }
  return theirs;
}

void LocalRingBoard::finishStep(int rank) {
  Member& me = member(rank);
  me.mid_step.store(false);
  me.progress.fetch_add(1);
  // Only the neighbours wait on this rank's progress.
  wake(ringNeighbour(rank, 1, m_size));
  wake(ringNeighbour(rank, -1, m_size));
  if (m_failed.load()) {
    std::lock_guard lock(m_mutex);
    m_quiet.notify_all();
  }
}

void LocalRingBoard::fail(std::unique_lock<std::mutex>& lock, int rank, const std::string& why) {
  if (m_broken.empty()) m_broken = "rank " + std::to_string(rank) + ": " + why;
  m_failed.store(true);
  member(rank).mid_step.store(false);
  for (auto& m : m_members) m->cv.notify_all();
  m_quiet.notify_all();
  // A neighbour mid-step may be reading this rank's memory, which the caller
  // is about to give back: wait until every step in flight has ended.
  m_quiet.wait(lock, [&] {
    return std::none_of(m_members.begin(), m_members.end(), [](const auto& m) { return m->mid_step.load(); });
  });
  throw gloo::IoException(why);
}

void LocalRingBoard::abort(int rank) {
  member(rank).aborted.store(true);
  std::lock_guard lock(m_mutex);
  member(rank).cv.notify_all();
}

void LocalRingBoard::close(int rank) {
  member(rank).closed.store(true);
  std::lock_guard lock(m_mutex);
  for (auto& m : m_members) m->cv.notify_all();
}

}  // namespace shardscope
