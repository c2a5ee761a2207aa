#include "trace/run_trace.h"

#include <algorithm>

namespace shardscope {

namespace {

// Tensor parallelism's mesh (T > 1): TP groups of T consecutive ranks; along
// the data-parallel axis, for each TP rank t, the ranks t, t + T, t + 2T, …
// play the roles the 1-D mesh gives ranks 0..P/T-1: "dp<t>" spans the axis
// (the strategy's world), then "dp<t>.gather"/".reduce" (zero3/fsdp), or
// "dp<t>.shard<r>.gather"/".reduce" and "dp<t>.replica<s>" (hsdp).
std::vector<CommGroup> tensorParallelMesh(int ranks, int shard_group, int tp) {
  std::vector<CommGroup> groups;
  const auto add = [&groups](std::string name, std::vector<int> members) {
    CommGroup g;
    g.id = static_cast<int>(groups.size());
    g.name = std::move(name);
    g.ranks = std::move(members);
    groups.push_back(std::move(g));
  };
  std::vector<int> all(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) all[static_cast<size_t>(r)] = r;
  add("world", all);
  const int dp = ranks / tp;
  for (int t = 0; t < tp; ++t) {
    const std::string axis = "dp" + std::to_string(t);
    const auto member = [t, tp](int dp_rank) { return dp_rank * tp + t; };
    std::vector<int> axis_members;
    for (int d = 0; d < dp; ++d) axis_members.push_back(member(d));
    add(axis, axis_members);  // the strategy's world: buckets, initial weights
    if (shard_group <= 0) continue;
    const int replicas = dp / shard_group;
    for (int rep = 0; rep < replicas; ++rep) {
      std::vector<int> members;
      for (int s = 0; s < shard_group; ++s) members.push_back(member(rep * shard_group + s));
      const std::string base = replicas > 1 ? axis + ".shard" + std::to_string(rep) : axis;
      add(base + ".gather", members);
      add(base + ".reduce", members);
    }
    if (replicas > 1)
      for (int s = 0; s < shard_group; ++s) {
        std::vector<int> members;
        for (int rep = 0; rep < replicas; ++rep) members.push_back(member(rep * shard_group + s));
        add(axis + ".replica" + std::to_string(s), members);
      }
  }
  for (int g = 0; g < dp; ++g) {
    std::vector<int> members;
    for (int t = 0; t < tp; ++t) members.push_back(g * tp + t);
    add("tp" + std::to_string(g), members);
  }
  return groups;
}

}  // namespace

bool isTensorParallelGroup(const CommGroup& g) {
  return g.name.size() > 2 && g.name.compare(0, 2, "tp") == 0 && g.name[2] >= '0' && g.name[2] <= '9';
}

std::vector<CommGroup> meshGroups(int ranks, int shard_group, int tp) {
  if (tp > 1 && ranks > 0 && ranks % tp == 0) return tensorParallelMesh(ranks, shard_group, tp);
  std::vector<CommGroup> groups;
  const auto add = [&groups](std::string name, std::vector<int> members) {
    CommGroup g;
    g.id = static_cast<int>(groups.size());
    g.name = std::move(name);
    g.ranks = std::move(members);
    groups.push_back(std::move(g));
  };
  std::vector<int> all(static_cast<size_t>(ranks > 0 ? ranks : 0));
  for (int r = 0; r < ranks; ++r) all[static_cast<size_t>(r)] = r;
  add("world", all);
  if (shard_group <= 0 || ranks <= 0) return groups;
  const int replicas = ranks / shard_group;
  for (int rep = 0; rep < replicas; ++rep) {
    std::vector<int> members;
    for (int s = 0; s < shard_group; ++s) members.push_back(rep * shard_group + s);
    const std::string base = replicas > 1 ? "shard" + std::to_string(rep) : "world";
    add(base + ".gather", members);
    add(base + ".reduce", members);
  }
  if (replicas > 1) {
    for (int s = 0; s < shard_group; ++s) {
      std::vector<int> members;
      for (int rep = 0; rep < replicas; ++rep) members.push_back(rep * shard_group + s);
      add("replica" + std::to_string(s), members);
    }
  }
  return groups;
}

std::vector<CommGroup> meshGroups(const RunConfig& c) {
  return meshGroups(c.ranks, c.isSharded() ? c.shardGroupSize() : 0, c.tp);
}

}  // namespace shardscope

namespace shardscope {

std::vector<int> RunTrace::shownRanks() const {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(std::max(0, ranks)));
  for (int r = 0; r < ranks; ++r)
    if (!imported || imported->hasRank(r)) out.push_back(r);
  return out;
}

std::string RunTrace::ranksText() const {
  const std::vector<int> shown = shownRanks();
  const int job = imported ? std::max(imported->world_size, ranks) : ranks;
  if (static_cast<int>(shown.size()) == job || shown.empty())
    return std::to_string(job) + (job == 1 ? " rank" : " ranks");
  // Some ranks of a larger job: which, and of how many.
  return (shown.size() == 1 ? "rank " : "ranks ") + rankRangesText(shown) + " of " + std::to_string(job);
}

}  // namespace shardscope
