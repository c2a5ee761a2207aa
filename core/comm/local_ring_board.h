// Where thread ranks of one group run a ring collective straight on each
// other's memory (local_rings.cpp): the same ring as over TCP, hop for hop,
// but a hop is one pass over the bytes (the chunk a rank's left neighbour
// "sends" summed or copied out of the neighbour's buffer into the rank's), no
// message, no landing copy.
//
// A hop (rank q, step s) may run once q's left neighbour has finished step
// s - 1 (the chunk is final) and q's right neighbour has read what q's step
// would overwrite; a rank's steps run in order. Any thread in the collective
// runs any hop that is ready, its own rank's first: with more ranks than
// cores a thread whose own hops wait runs its neighbours' instead of sleeping
// until the scheduler gets round to them, and sleeps only when no hop of the
// call is ready. The hops, their order per rank and the bytes each counts on
// its sender are the ring's whoever runs them, so results agree to the bit.
// A rank leaves once its own hops are done and its right neighbour's too
// (nobody reads its memory any more).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/ring_chunks.h"

namespace shardscope {

class LocalRingBoard {
 public:
  // What a member is doing in its current collective call: the hops read its
  // buffers through these pointers; members compare the rest with their own.
  struct Call {
    uint64_t number = 0;  // the member's collective call number (from 1)
    const char* op = "";  // "all-reduce", "reduce-scatter", "all-gather"
    DType dtype = DType::F32;
    size_t count = 0;
    const char* in = nullptr;
    char* out = nullptr;
    char* work = nullptr;  // partial sums the right neighbour reads (reduce-scatter)
    std::atomic<uint64_t>* sent = nullptr;  // the member's bytes-sent counter: each hop counts on its sender's
    int steps = 0;
    // Step `step` of group rank `rank` (whose call is `mine`; its left
    // neighbour's is `left`) in a group of `ranks`.
    void (*hop)(const Call& left, const Call& mine, int rank, int step, int ranks) = nullptr;
    // Steps the right neighbour must have finished before step `step` may
    // overwrite what it reads (0: none).
    int (*right_needs)(int step, int ranks) = nullptr;
  };

  explicit LocalRingBoard(int size);

  // Runs `rank`'s part of `call` and returns once the rank may give its
  // buffers back. Throws gloo::IoException on a timeout (no hop of the call
  // became ready for `timeout`), an abort, a closed member, ranks that issued
  // different collectives, or a group another member failed; a failing
  // member returns only once no hop is running.
  void run(int rank, const Call& call, std::chrono::milliseconds timeout);

  // Wakes `rank`'s wait: it throws "aborted" now and at every later call.
  void abort(int rank);
  // `rank` is gone: waits on it fail (unless already satisfied).
  void close(int rank);

 private:
  // Progress and flags are atomics, so a hop that is ready runs without a
  // lock; a thread sleeps (under the mutex) only when no hop is.
  struct Member {
    Call call;  // written by its owner before it publishes progress
    std::atomic<uint64_t> progress{0};  // (call number << kStepBits) | steps done: grows monotonically
    std::atomic<bool> busy{false};      // a thread is running one of its hops
    std::atomic<bool> aborted{false};
    std::atomic<bool> closed{false};
  };
  static constexpr int kStepBits = 20;

  Member& member(int rank) { return *m_members[static_cast<size_t>(rank)]; }
  int neighbour(int rank, int offset) const { return ring::wrap(rank + offset, m_size); }
  // Runs member q's next hop of the call `mine` (based at `base`) if it is
  // ready and no other thread runs one of q's; true if it ran one.
  bool tryHop(int self, int q, const Call& mine, uint64_t base);
  void changed();  // a member published a call or finished a hop: sleepers look again
  std::string blockedBy(int rank, const Call& mine, uint64_t base);
  [[noreturn]] void fail(std::unique_lock<std::mutex>& lock, int rank, const std::string& why);
  static std::string describe(const Call& c);

  const int m_size;
  std::mutex m_mutex;
  std::condition_variable m_wake;  // something changed, or the group failed
  std::vector<std::unique_ptr<Member>> m_members;
  std::atomic<uint64_t> m_changes{0};
  std::atomic<int> m_sleepers{0};
  std::atomic<bool> m_failed{false};
  std::string m_broken;  // why the group failed (under the mutex); every later call fails with it
};

}  // namespace shardscope
