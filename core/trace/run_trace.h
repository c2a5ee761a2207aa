// Plain data describing a finished (or in-progress) run: what the trace sinks
// write and what the UI opens. events[r] holds rank r's events in record order,
// and every event in it has rank == r (sinks use the index, not the field) —
// except a copied rank (copies.isCopy(r)): events[r] is empty and its events
// are copies.eventFor(r, e) for each e of its source's (sourceEvents).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "trace/event.h"
#include "trace/rank_copies.h"
#include "trace/straggler_table.h"

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
  int size = 0;  // ranks in the group when its members are not known (an imported trace's group size)
};

// A tensor-parallel group of meshGroups ("tp0", "tp1", …).
bool isTensorParallelGroup(const CommGroup& g);
// A pipeline group of meshGroups ("pp0", "pp1", …): one rank per stage.
bool isPipelineGroup(const CommGroup& g);

// The groups a run of P ranks builds: "world" (id 0), then for a shard group
// of G < P ranks (hsdp), per replica a gather and a reduce group, then one
// replicate group per shard; G == P (zero3/fsdp) adds world.gather and
// world.reduce over all ranks. shard_group = 0: only the world. Links unknown.
// tp > 1 (tensor parallelism): the world, then per TP rank t the groups above
// along its data-parallel axis named "dp<t>…" (shard_group counts ranks on that
// axis), then the TP groups "tp<g>" of T consecutive ranks. pp > 1 (pipeline
// stages): the same per stage, rank r = t + T·(d + D·s), then the pipeline
// groups "pp<k>", one rank per stage (run_trace.cpp says how they are numbered).
std::vector<CommGroup> meshGroups(int ranks, int shard_group, int tp = 1, int pp = 1);
// The groups a config's run builds (meshGroups of its strategy's shard group).
std::vector<CommGroup> meshGroups(const RunConfig& config);

struct RunTrace;

// A row of an imported trace: one GPU stream or CPU thread of one rank.
struct ImportedTrack {
  std::string name;          // "stream 7", "stream 20 · NCCL", "thread 4242 (python3)"
  Lane role = Lane::Compute;  // Compute: a GPU stream of kernels; Comm: one running collectives; Host: a CPU thread
};

// What an imported event was called in its trace, for tooltips: events keep
// only their op id (Event::op), the source keeps the text.
class ImportedEventText {
 public:
  virtual ~ImportedEventText() = default;
  virtual std::string name(int rank, int32_t op) const = 0;      // "ncclDevKernel_AllGather_RING_LL(...)"
  virtual std::string category(int rank, int32_t op) const = 0;  // "kernel", "cpu_op", …
};

// A trace another tool wrote (a PyTorch profiler job), shown in ShardScope's
// views: Event::lane indexes the rank's tracks instead of naming a lane.
struct ImportedSource {
  std::string format;  // "PyTorch profiler (Kineto)"
  std::vector<std::string> files;  // per rank, the file it came from ("" for a rank the job has but no file read)
  // The job's ranks as its traces state (distributedInfo's world_size): one
  // rank's file of a 300-rank job says 300. 0 when no trace says.
  int world_size = 0;
  bool hasRank(int rank) const {
    return rank >= 0 && static_cast<size_t>(rank) < files.size() && !files[static_cast<size_t>(rank)].empty();
  }
  std::vector<std::vector<ImportedTrack>> tracks;  // per rank; at most 256 (Event::lane is 8 bits)
  // Per rank: the allocator's reserved bytes over time (t_ns, bytes); what
  // Alloc/Free events book is the allocated memory.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> reserved;
  std::vector<int> out_of_memory;  // per rank: [OutOfMemory] events in its trace
  std::vector<std::string> notes;  // what the import derived or could not ("ranks aligned on …")
  std::vector<std::string> unit_names;  // FSDP modules by Event::unit ("layers.3", "root")
  StragglerTable stragglers;  // collectives matched across ranks: who made the others wait (empty: none)
  std::shared_ptr<const ImportedEventText> text;
  const ImportedTrack* track(int rank, Lane lane) const {
    const auto r = static_cast<size_t>(rank), l = static_cast<size_t>(lane);
    return rank >= 0 && r < tracks.size() && l < tracks[r].size() ? &tracks[r][l] : nullptr;
  }
};

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
    if (g && !g->ranks.empty()) return static_cast<int>(g->ranks.size());
    return g && g->size > 0 ? g->size : ranks;
  }
  // The ranks a per-rank view lists: every rank of a run; of an imported
  // job, the ranks its files hold (rank 34 alone of a 300-rank job's).
  std::vector<int> shownRanks() const;
  // What those ranks are, said once for every view: "8 ranks", "1 rank",
  // "rank 34 of 300", "ranks 0–1, 3 of 4".
  std::string ranksText() const;
  std::vector<std::string> param_names;
  std::vector<std::string> block_names;
  std::vector<BucketInfo> buckets;
  std::vector<UnitInfo> units;
  // Mean loss per completed step, as the run reported it; empty for a run
  // without losses (meta backend) and in traces written before they were kept.
  std::vector<double> losses;
  std::vector<std::vector<Event>> events;  // per rank, in record order (empty for a copy)
  // Symmetric replication: the ranks whose events are another rank's (empty:
  // none; Run::trace() expands them unless asked for the shared form).
  RankCopies copies;
  // The events rank r's are derived from: its own, or its source's (map each through copies.eventFor(r, e)).
  const std::vector<Event>& sourceEvents(int rank) const {
    return events[static_cast<size_t>(copies.sourceOf(rank))];
  }
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
  // Set for a trace imported from another tool; null for ShardScope's own.
  std::shared_ptr<const ImportedSource> imported;
  // The role of an event's lane: the lane itself, or its track's role in an imported trace.
  Lane roleOf(int rank, const Event& e) const {
    if (!imported) return e.lane;
    const ImportedTrack* t = imported->track(rank, e.lane);
    return t ? t->role : Lane::Host;
  }
};

}  // namespace shardscope
