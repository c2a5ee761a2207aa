// The FSDP units view's model: for every rank and unit, the unit's parameter
// state over time, derived from the events alone. Whether a unit holds its
// full parameters comes from the ledger's own events: each `gathered` alloc
// belongs to the all-gather that fills it (the k-th alloc of a rank to its
// k-th unit all-gather), each `gathered` free to the held unit whose compute
// ended last before it (the engine frees a unit right after its last compute
// op). So the grid and the memory ledger can never disagree: the bytes of the
// units shown gathering, gathered or computing are the ledger's gathered bytes.
//   computing  a forward/backward (unit) span
//   gathering  its all-gather span
//   gathered   holds the full parameters otherwise
//   reducing   not held, a reduce-scatter (or HSDP's all-reduce) of its
//              gradients running or still to come after its backward
//   freed      not held, dropped earlier in this step
//   sharded    otherwise (before its first gather, between steps)
// Unit ids are mapped densely (a trace's ids are data, not sizes). A
// replicated run's copied ranks read their source's spans (derived once). No widgets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace shardscope {

class EventStore;

enum class UnitState : uint8_t { Sharded, Gathering, Gathered, Computing, Reducing, Freed };
inline constexpr int kUnitStateCount = 6;

// Gathering, gathered or computing: the unit's full parameters are in memory.
inline bool holdsParameters(UnitState s) {
  return s == UnitState::Gathering || s == UnitState::Gathered || s == UnitState::Computing;
}

struct UnitSpan {
  int64_t begin_ns = 0;  // ns since run start
  int64_t end_ns = 0;
  UnitState state = UnitState::Sharded;
  int step = -1;
};

class UnitStates {
 public:
  // Rebuilds when the store changed (one pass over the events, sorted per unit).
  void sync(const EventStore& store);

  int rankCount() const { return static_cast<int>(m_spans.size()); }
  // Units are indexed 0..unitCount()-1 in the order of their ids.
  int unitCount() const { return static_cast<int>(m_ids.size()); }
  int unitId(int index) const;
  int indexOf(int unit_id) const;  // -1 when the id is not a unit of the run
  // Sharded before a unit's first op and between steps.
  UnitState stateAt(int rank, int unit, int64_t t_ns) const;
  const std::vector<UnitSpan>& spans(int rank, int unit) const;
  // The gathered bytes the unit holds on the rank at t (its gathered alloc), 0 when none.
  int64_t heldBytes(int rank, int unit, int64_t t_ns) const;
  // Gathered bytes the rank holds at t that no unit's all-gather accounts for
  // (an all-gather still in flight while the run is live).
  int64_t unattributedBytes(int rank, int64_t t_ns) const;
  // Rank 0's compute op (forward/backward) of unit index `unit` in `step`, as
  // [begin, end); {-1, -1} when there is none. forward = true: the first forward op.
  std::pair<int64_t, int64_t> computeSpan(int unit, int step, bool forward) const;
  int lastStep() const { return m_lastStep; }

 private:
  struct Hold {
    int64_t begin = 0, end = 0;  // [alloc, free); end = INT64_MAX while held
    int64_t bytes = 0;
    int unit = -1;  // index; -1: not attributed
  };

  const EventStore* m_store = nullptr;
  uint64_t m_generation = ~0ull;
  size_t m_seen = 0;  // store events at the last rebuild
  int m_lastStep = -1;
  std::vector<int> m_ids;                                   // unit id per index, ascending
  std::vector<std::vector<std::vector<UnitSpan>>> m_spans;  // [rank][unit index]; empty for ranks without unit ops and copies
  std::vector<std::vector<Hold>> m_holds;                   // [rank], by alloc time; a copy's empty
  std::vector<int> m_source;  // per rank: whose spans and holds it reads (the store's rank map)
  size_t sourceIndex(int rank) const { return static_cast<size_t>(m_source[static_cast<size_t>(rank)]); }
};

}  // namespace shardscope
