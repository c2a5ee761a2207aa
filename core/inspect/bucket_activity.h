// The buckets view's model: per step, rank and gradient bucket, when the
// bucket became ready (its last gradient arrived) and its collective (the
// all-reduce, or ZeRO's reduce-scatter, plus ZeRO's parameter all-gather).
// Fed incrementally from the store (per-rank cursors, events in any order).
// A stopped run's incomplete step names the buckets some rank never readied:
// the rank-dependent branch that hangs DDP. No widgets.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/event.h"

namespace shardscope {

class EventStore;

struct BucketSlot {
  int64_t ready_ns = -1;      // bucket_ready, ns since run start; -1: never
  int64_t begin_ns = -1;      // its all-reduce / reduce-scatter; -1: not launched
  int64_t end_ns = -1;
  int64_t wait_ns = 0;        // of the collective: waiting for peers
  int64_t gather_begin_ns = -1;  // zero1/2: the updated parameters' all-gather
  int64_t gather_end_ns = -1;
  EventKind kind = EventKind::AllReduce;
  int32_t ready_event = -1;   // index into store.events(rank), for tooltips
  int32_t collective_event = -1;
  bool ready() const { return ready_ns >= 0; }
  bool launched() const { return begin_ns >= 0; }
};

// Steps and buckets are addressed by dense indices 0..count-1 in id order;
// stepId() and bucketId() give the numbers they carry (the same numbers for a
// run's own trace, whose ids start at 0 and have no gaps). Cells are kept only
// for the (rank, bucket) pairs that have events, so memory follows the events,
// never a number read from a file (metadata.ranks, a bucket index, a step).
class BucketActivity {
 public:
  void sync(const EventStore& store);

  int bucketCount() const { return static_cast<int>(m_bucketIds.size()); }
  int bucketId(int bucket) const;  // -1 outside 0..bucketCount()-1
  int rankCount() const { return m_ranks; }
  int stepCount() const { return static_cast<int>(m_steps.size()); }
  int stepId(int step) const;  // -1 outside 0..stepCount()-1
  const BucketSlot& slot(int step, int rank, int bucket) const;
  // [first StepBegin, last event end] of a step over all ranks; {-1, -1} if unseen.
  std::pair<int64_t, int64_t> stepSpan(int step) const;
  // Every rank reached StepEnd.
  bool stepComplete(int step) const;
  // The step to show by default: the last complete one, or the last seen when
  // the run stopped inside it.
  int defaultStep() const;
  int stepAt(int64_t t_ns) const;  // -1 when outside every step
  // What a step draws, over its cells (not ranks x buckets probes).
  struct StepTotals {
    int ready = 0;     // (rank, bucket) pairs with a ready marker
    int launched = 0;  // with a collective bar
    bool all_reduce = false, reduce_scatter = false, gather = false;
  };
  StepTotals totals(int step) const;

  // In a step that never completed: buckets some rank readied but another
  // never did, with the ranks that never readied them (bucket order; bucket
  // is a dense index, as in slot()).
  struct NeverReady {
    int bucket = -1;
    std::vector<int> ranks;
  };
  std::vector<NeverReady> neverReady(int step) const;

 private:
  struct Step {
    int32_t id = 0;
    std::unordered_map<uint32_t, BucketSlot> cells;  // key: rank << 16 | bucket id
    std::unordered_map<int32_t, int64_t> ends;  // rank -> its step_end
    int ended = 0;          // ranks whose step_end is >= 0
    int64_t first_ns = -1;  // earliest step_begin, ready or launch (>= 0)
    int64_t last_ns = -1;   // latest end of any event of the step
  };
  Step& stepFor(int32_t id);
  void noteBucket(int id);
  bool anyNeverReady(const Step& s) const;

  const EventStore* m_store = nullptr;
  uint64_t m_generation = ~0ull;
  std::vector<size_t> m_cursors;
  std::vector<Step> m_steps;     // sorted by id
  std::vector<int> m_bucketIds;  // sorted
  int m_ranks = 0;
};

}  // namespace shardscope
