// The communicator groups of a run, as a 2-D mesh for hybrid sharding: ranks
// r = replica * G + shard. "world" spans all ranks; each shard group (one
// replica's G ranks) has a gather and a reduce communicator (one per stream,
// so an all-gather and a reduce-scatter can be in flight at once); each
// replicate group joins the ranks holding the same shard across replicas.
// zero3/fsdp is the 1-D case G = P. Each group has its own fingerprint monitor.
// With tensor parallelism (tp > 1) that mesh lies along each data-parallel
// axis, beside the TP groups of tp consecutive ranks (trace/run_trace.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/collective_monitor.h"
#include "comm/communicator.h"
#include "comm/communicator_factory.h"
#include "comm/process_group.h"
#include "rank/rank_context.h"
#include "trace/run_trace.h"

namespace gloo::rendezvous {
class Store;
}

namespace shardscope {

// This process's part of a run whose ranks are processes (--launch
// processes): it hosts one rank and meets the others through a rendezvous store.
struct MeshProcess {
  int rank = 0;                             // the rank this process hosts
  gloo::rendezvous::Store* store = nullptr; // shared by every process of the run
  std::string prefix;                       // keeps this run's keys apart in a shared store
  std::string hostname = "127.0.0.1";       // where the peers reach this rank
  int connect_timeout_ms = 60000;           // every rank must start within this
  int local_rank = -1;                      // its index among its node's ranks (torchrun's LOCAL_RANK); -1: unknown
  std::string store_name;                   // the store's URL, for messages
};

struct CommGroupSpec {
  int id = 0;                // fingerprint / event group id
  std::string name;          // "world", "shard0.gather", "replica1"
  std::vector<int> members;  // global ranks, in group-rank order
};

class CommMesh {
 public:
  // shard_group = 0: only the world group (ddp, zero1, zero2).
  // meta: byte-counting communicators that move no data (the meta backend).
  // gpu: the GPU runtime's communicators (NCCL or emulated) instead of Gloo's.
  CommMesh(int ranks, int shard_group, RankStatusBoard& board, RunControl& control, int timeout_ms,
           int transport_timeout_ms, bool meta = false, CommunicatorFactory* gpu = nullptr, int tp = 1, int pp = 1);
  // The same groups, of which this process makes only its rank's members,
  // over Gloo between processes; the fingerprint check goes over the wire.
  // device: the GPU runtime's cross-process communicators (NCCL) carry the
  // collectives; a Gloo member per group still carries the fingerprint check
  // (host memory, as PyTorch checks collectives through a Gloo-side store).
  CommMesh(int ranks, int shard_group, int tp, int pp, const MeshProcess& process, int timeout_ms, int transport_timeout_ms,
           CommunicatorFactory* device = nullptr);
  ~CommMesh();

  const std::vector<CommGroupSpec>& groups() const { return m_specs; }
  // Group ids of one rank's groups; -1 when the run has none of that kind.
  // Under tensor parallelism (tp > 1) tensor is the rank's TP group and data
  // its data-parallel axis (ddp, zero1, zero2); gather/reduce/replicate lie on that axis.
  struct RankGroups {
    int world = -1, gather = -1, reduce = -1, replicate = -1;
    int tensor = -1, data = -1;
    int pipeline = -1;  // pp > 1: the rank's pipeline (one rank per stage)
  };
  RankGroups groupsOf(int rank) const;
  // Every rank's RankGroups in a layout of meshGroups (trace/run_trace.h), in
  // one pass over the members: no mesh is built.
  static std::vector<RankGroups> groupsByRank(const std::vector<CommGroup>& groups, int ranks);
  // A rank's ProcessGroup on group `id` (creates it once per (rank, id)).
  std::unique_ptr<ProcessGroup> makeProcessGroup(int id, int rank, RankContext& ctx);
  // Wakes every collective blocked in any group (any thread).
  void abortAll();
  // Symmetric replication: only ranks flagged here post to the monitors.
  void setSimulated(const std::vector<bool>& simulated_by_rank);

 private:
  void addGroup(const std::string& name, std::vector<int> members, RankStatusBoard& board,
                RunControl& control, int timeout_ms, int transport_timeout_ms);

  int m_ranks;
  int m_shardGroup;
  bool m_meta;
  CommunicatorFactory* m_gpu;
  int m_timeoutMs;  // the fingerprint check's wait, also a pipeline receive's
  std::vector<CommGroupSpec> m_specs;
  std::vector<std::vector<std::unique_ptr<Communicator>>> m_comms;  // [group][group rank]
  std::vector<std::unique_ptr<CollectiveCheck>> m_monitors;         // [group]; null where this process has no member
  std::vector<CollectiveMonitor*> m_inProcess;                      // those that are CollectiveMonitors
  std::vector<std::unique_ptr<Communicator>> m_checkComms;          // Gloo members of the fingerprint checks (device runs)
};

}  // namespace shardscope
