// The FSDP units view's model: for every rank and unit, the unit's parameter
// state over time, derived from the events alone. All-gather (unit) spans are
// "gathering"; forward/backward (unit) spans "computing"; reduce-scatter and
// HSDP's cross-replica all-reduce (unit) "reducing". Between them the unit is
// "gathered" from its gather's end until its last compute op of that phase
// ends (and on into backward when nothing re-gathers it: reshard off),
// "reducing" while its gradients queue for the reduce, and "freed" once the
// gathered copy is dropped, until the step ends; otherwise "sharded". No widgets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace shardscope {

class EventStore;

enum class UnitState : uint8_t { Sharded, Gathering, Gathered, Computing, Reducing, Freed };
inline constexpr int kUnitStateCount = 6;

struct UnitSpan {
  int64_t begin_ns = 0;  // ns since run start
  int64_t end_ns = 0;
  UnitState state = UnitState::Sharded;
  int step = -1;
};

class UnitStates {
 public:
  // Rebuilds when the store changed (cheap: one pass over the unit events).
  void sync(const EventStore& store);

  int rankCount() const { return static_cast<int>(m_spans.size()); }
  int unitCount() const { return m_units; }
  // Sharded before a unit's first op and between steps.
  UnitState stateAt(int rank, int unit, int64_t t_ns) const;
  const std::vector<UnitSpan>& spans(int rank, int unit) const;
  // Rank 0's compute op (forward/backward) of `unit` in `step`, as [begin, end);
  // {-1, -1} when there is none. forward = true: the first forward op.
  std::pair<int64_t, int64_t> computeSpan(int unit, int step, bool forward) const;
  int lastStep() const { return m_lastStep; }

 private:
  const EventStore* m_store = nullptr;
  uint64_t m_generation = ~0ull;
  size_t m_seen = 0;  // store events at the last rebuild
  int m_units = 0;
  int m_lastStep = -1;
  std::vector<std::vector<std::vector<UnitSpan>>> m_spans;  // [rank][unit]
};

}  // namespace shardscope
