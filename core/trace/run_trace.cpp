#include "trace/run_trace.h"

namespace shardscope {

std::vector<CommGroup> meshGroups(int ranks, int shard_group) {
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

double busBandwidthFactor(EventKind kind, int n) {
  if (n <= 1) return 0;
  switch (kind) {
    case EventKind::AllReduce: return 2.0 * (n - 1) / n;
    case EventKind::AllGather:
    case EventKind::ReduceScatter: return static_cast<double>(n - 1) / n;
    default: return 0;
  }
}

std::vector<CommGroup> meshGroups(const RunConfig& c) {
  return meshGroups(c.ranks, c.isSharded() ? c.shardGroupSize() : 0);
}

}  // namespace shardscope
