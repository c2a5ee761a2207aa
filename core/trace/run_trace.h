// Plain data describing a finished (or in-progress) run: what the trace sinks
// write and what the UI opens. events[r] holds rank r's events in record order,
// and every event in it has rank == r (sinks use the index, not the field).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "trace/event.h"

namespace shardscope {

struct BucketInfo {
  int index = 0;
  int64_t bytes = 0;                // bucket buffer size
  std::vector<std::string> params;  // parameter names, in bucket order
};

struct UnitInfo {
  int index = 0;
  std::vector<int> blocks;  // model block indices wrapped by this FSDP unit
  int64_t params = 0;       // parameter count
};

// Which link a communicator group's collectives cross. Unknown: a trace
// opened from a file, whose hardware profile is not at hand.
enum class LinkLevel { Unknown, IntraNode, InterNode };

// One communicator group: Event::group is its id.
struct CommGroup {
  int id = 0;
  std::string name;          // "world", "shard0.gather", "replica1"
  std::vector<int> ranks;    // global ranks, in group-rank order
  LinkLevel link = LinkLevel::Unknown;
};

// The groups a run of P ranks builds: "world" (id 0), then for a shard group
// of G < P ranks (hsdp), per replica a gather and a reduce group, then one
// replicate group per shard; G == P (zero3/fsdp) adds world.gather and
// world.reduce over all ranks. shard_group = 0: only the world. Links unknown.
// tp > 1 (tensor parallelism): the world, then per TP rank t the groups above
// along its data-parallel axis named "dp<t>…" (shard_group counts ranks on that
// axis), then the TP groups "tp<g>" of T consecutive ranks.
std::vector<CommGroup> meshGroups(int ranks, int shard_group, int tp = 1);
// The groups a config's run builds (meshGroups of its strategy's shard group).
std::vector<CommGroup> meshGroups(const RunConfig& config);

struct RunTrace;

// nccl-tests' bus bandwidth factor for a collective on a group of n ranks:
// all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n; 0 otherwise.
double busBandwidthFactor(EventKind kind, int n);

struct RunTrace {
  std::string strategy;
  int ranks = 0;
  int64_t params = 0;       // total parameter count of the model
  // The run's config; none for a trace without one, or whose flags this build cannot read.
  std::optional<RunConfig> config;
  std::vector<CommGroup> groups;  // by id (groups[i].id == i)
  // The group of an event's collective, or nullptr when the trace lacks it.
  const CommGroup* group(int id) const {
    return id >= 0 && static_cast<size_t>(id) < groups.size() ? &groups[static_cast<size_t>(id)] : nullptr;
  }
  // Ranks in an event's collective group: its group's size, else the run's ranks.
  int groupSize(const Event& e) const {
    const CommGroup* g = group(e.group);
    return g && !g->ranks.empty() ? static_cast<int>(g->ranks.size()) : ranks;
  }
  std::vector<std::string> param_names;
  std::vector<std::string> block_names;
  std::vector<BucketInfo> buckets;
  std::vector<UnitInfo> units;
  // Mean loss per completed step, as the run reported it; empty for a run
  // without losses (meta backend) and in traces written before they were kept.
  std::vector<double> losses;
  std::vector<std::vector<Event>> events;  // per rank, in record order
  // A run stopped from outside (a signal): what stopped it and the step that
  // was running. Written as metadata.interrupted only when set.
  std::optional<std::string> interrupted_by;
  int interrupted_at_step = 0;
  // A measured run across machines: each other node's ranks, timed from node
  // 0's clock origin as estimated at rendezvous, and how sure that is (half
  // the shortest ping round trip). Written as metadata.node_clocks when set.
  struct NodeClock {
    int node = 0;
    int first_rank = 0;
    int ranks = 0;
    int64_t uncertainty_ns = 0;
    int pings = 0;
  };
  std::vector<NodeClock> node_clocks;
};

}  // namespace shardscope
