// Where thread ranks of one group post their progress through a ring
// collective that runs straight on each other's memory (local_rings.cpp):
// the same ring as over TCP, step for step, but a rank reads the chunk its
// left neighbour "sends" out of the neighbour's own buffer instead of out of
// a message. So a hop is one pass over the bytes (summed or copied into the
// reader's buffer), no message, no landing copy, no mailbox.
//
// Two waits keep it safe: a rank reads its left neighbour's chunk only after
// the neighbour has finished the step that wrote it, and writes a chunk of
// its own only after its right neighbour has finished the step that read the
// chunk's previous value. A rank leaves only after its right neighbour has
// finished every step (nobody reads its memory any more).
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

namespace shardscope {

class LocalRingBoard {
 public:
  // What a member is doing in its current collective call: its peers read
  // its buffers through these pointers and compare the rest with their own.
  struct Call {
    uint64_t number = 0;  // the member's collective call number (from 1)
    const char* op = "";  // "all-reduce", "reduce-scatter", "all-gather"
    const char* dtype = "";  // "f32", "bf16"
    size_t count = 0;
    const char* in = nullptr;
    char* out = nullptr;
    const char* work = nullptr;  // partial sums the right neighbour reads (reduce-scatter)
    std::atomic<uint64_t>* sent = nullptr;  // the member's bytes-sent counter: the reader counts what it takes
  };

  explicit LocalRingBoard(int size);

  // Posts `rank`'s call: no step done yet.
  void begin(int rank, const Call& call);
  // Waits until `left` (unless -1) has finished `left_steps` steps of this
  // rank's call and `right` (unless -1) `right_steps` (or moved on to a later
  // call). Returns left's call when left was asked for, checked to be the
  // same collective as this rank's (a different one fails the group: the
  // ranks issued different collectives); the rank is then mid-step until
  // finishStep. Without a left neighbour it is a wait only (the last one:
  // nobody reads this rank's memory any more once it returns). Throws gloo::IoException on a
  // timeout, an abort, a closed member or a group another member failed; a
  // failing member returns only once no member is mid-step.
  const Call* await(int rank, int left, uint64_t left_steps, int right, uint64_t right_steps,
                    std::chrono::milliseconds timeout);
  // One more step of `rank`'s call is done: its neighbours may go on.
  void finishStep(int rank);

  // Wakes `rank`'s wait: it throws "aborted" now and at every later call.
  void abort(int rank);
  // `rank` is gone: waits on it fail (unless already satisfied).
  void close(int rank);

 private:
  // Progress and flags are atomics, so a wait its neighbour has already
  // satisfied costs no lock and no system call: a rank sleeps (under the
  // mutex, on its own condition variable) only when it must, and is woken
  // only when it sleeps.
  struct Member {
    Call call;  // written by its owner before it publishes progress
    std::atomic<uint64_t> progress{0};  // (call number << kStepBits) | steps done: grows monotonically
    std::atomic<bool> mid_step{false};  // may be reading a neighbour's memory
    std::atomic<bool> sleeping{false};
    std::atomic<bool> aborted{false};
    std::atomic<bool> closed{false};
    std::condition_variable cv;
  };
  static constexpr int kStepBits = 20;

  Member& member(int rank) { return *m_members[static_cast<size_t>(rank)]; }
  void wake(int rank);
  [[noreturn]] void fail(std::unique_lock<std::mutex>& lock, int rank, const std::string& why);
  static std::string describe(const Call& c);

  const int m_size;
  std::mutex m_mutex;
  std::vector<std::unique_ptr<Member>> m_members;
  std::atomic<bool> m_failed{false};
  std::string m_broken;  // why the group failed (under the mutex); every later wait fails with it
  std::condition_variable m_quiet;  // a member left its step (failing members wait for none mid-step)
};

}  // namespace shardscope
