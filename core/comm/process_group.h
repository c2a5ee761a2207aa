// One rank's handle on a communicator group, the way strategies talk to
// collectives: it numbers each collective (seq), runs the fingerprint check,
// records the trace event on the caller's lane and counts the bytes the rank
// actually sent, per kind, for the current step.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "comm/collective_monitor.h"
#include "comm/communicator.h"
#include "engine/rank_context.h"

namespace shardscope {

struct CollectiveTag {
  int bucket = -1;
  int unit = -1;
  int32_t dep = -1;  // op id that launched this collective (dependency arrow)
  int32_t op = -1;   // preassigned op id (so others can depend on it), or -1
};

// Bytes sent by one rank, by collective kind.
struct CommBytes {
  int64_t all_reduce = 0;
  int64_t reduce_scatter = 0;
  int64_t all_gather = 0;
  int64_t broadcast = 0;
  CommBytes& operator+=(const CommBytes& o) {
    all_reduce += o.all_reduce;
    reduce_scatter += o.reduce_scatter;
    all_gather += o.all_gather;
    broadcast += o.broadcast;
    return *this;
  }
};

class ProcessGroup {
 public:
  ProcessGroup(int group_id, std::string name, Communicator& comm, CollectiveMonitor& monitor,
               RankContext& ctx);

  int groupRank() const { return m_comm.rank(); }
  int groupSize() const { return m_comm.size(); }
  const std::string& name() const { return m_name; }

  void allReduce(void* data, size_t count, DType dtype, const CollectiveTag& tag, Lane lane);
  void reduceScatter(const void* input, void* output, size_t count, DType dtype,
                     const CollectiveTag& tag, Lane lane);
  void allGather(const void* input, void* output, size_t count, DType dtype,
                 const CollectiveTag& tag, Lane lane);
  void broadcast(void* data, size_t count, DType dtype, int root, Lane lane);

  // Bytes sent since the last resetStepBytes() (thread-safe to read after the
  // streams that use this group are synchronised).
  CommBytes stepBytes() const { return m_stepBytes; }
  void resetStepBytes() { m_stepBytes = {}; }

 private:
  template <class Fn>
  void run(EventKind kind, int64_t bytes, const CollectiveTag& tag, Lane lane, Fn&& fn);

  int m_groupId;
  std::string m_name;
  Communicator& m_comm;
  CollectiveMonitor& m_monitor;
  RankContext& m_ctx;
  int m_seq = 0;
  CommBytes m_stepBytes;
};

}  // namespace shardscope
