#include "trace/run_trace.h"

#include <algorithm>

namespace shardscope {

namespace {

// The mesh of tensor and pipeline parallelism (T > 1 or S > 1): rank
// r = t + T·(d + D·s) for TP rank t, data-parallel rank d of D = P/(T·S) and
// stage s. Along each data-parallel axis (fixed t and s; axis a = s·T + t) the
// ranks play the roles the 1-D mesh gives ranks 0..D-1: "dp<a>" spans the axis
// (the strategy's world), then "dp<a>.gather"/".reduce" (zero3/fsdp), or
// "dp<a>.shard<r>.gather"/".reduce" and "dp<a>.replica<s>" (hsdp). Then the TP
// groups "tp<g>" of T consecutive ranks (g = s·D + d), then the pipelines
// "pp<k>" (k = d·T + t): the S ranks, stage 0 first, that pass one sample's
// activations from stage to stage.
std::vector<CommGroup> parallelMesh(int ranks, int shard_group, int tp, int pp) {
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
  const int dp = ranks / (tp * pp);
  const auto rankAt = [tp, dp](int t, int d, int s) { return t + tp * (d + dp * s); };
  for (int s = 0; s < pp; ++s)
    for (int t = 0; t < tp; ++t) {
      const std::string axis = "dp" + std::to_string(s * tp + t);
      const auto member = [&rankAt, t, s](int dp_rank) { return rankAt(t, dp_rank, s); };
      std::vector<int> axis_members;
      for (int d = 0; d < dp; ++d) axis_members.push_back(member(d));
      add(axis, axis_members);  // the strategy's world: buckets, initial weights
      if (shard_group <= 0) continue;
      const int replicas = dp / shard_group;
      for (int rep = 0; rep < replicas; ++rep) {
        std::vector<int> members;
        for (int k = 0; k < shard_group; ++k) members.push_back(member(rep * shard_group + k));
        const std::string base = replicas > 1 ? axis + ".shard" + std::to_string(rep) : axis;
        add(base + ".gather", members);
        add(base + ".reduce", members);
      }
      if (replicas > 1)
        for (int k = 0; k < shard_group; ++k) {
          std::vector<int> members;
          for (int rep = 0; rep < replicas; ++rep) members.push_back(member(rep * shard_group + k));
          add(axis + ".replica" + std::to_string(k), members);
        }
    }
  if (tp > 1)
    for (int g = 0; g < dp * pp; ++g) {
      std::vector<int> members;
      for (int t = 0; t < tp; ++t) members.push_back(g * tp + t);
      add("tp" + std::to_string(g), members);
    }
  if (pp > 1)
    for (int d = 0; d < dp; ++d)
      for (int t = 0; t < tp; ++t) {
        std::vector<int> members;
        for (int s = 0; s < pp; ++s) members.push_back(rankAt(t, d, s));
        add("pp" + std::to_string(d * tp + t), members);
      }
  return groups;
}

}  // namespace

bool isTensorParallelGroup(const CommGroup& g) {
  return g.name.size() > 2 && g.name.compare(0, 2, "tp") == 0 && g.name[2] >= '0' && g.name[2] <= '9';
}

bool isPipelineGroup(const CommGroup& g) {
  return g.name.size() > 2 && g.name.compare(0, 2, "pp") == 0 && g.name[2] >= '0' && g.name[2] <= '9';
}

std::vector<CommGroup> meshGroups(int ranks, int shard_group, int tp, int pp) {
  tp = std::max(1, tp);
  pp = std::max(1, pp);
  if ((tp > 1 || pp > 1) && ranks > 0 && ranks % (tp * pp) == 0) return parallelMesh(ranks, shard_group, tp, pp);
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
  return meshGroups(c.ranks, c.isSharded() ? c.shardGroupSize() : 0, c.tp, c.pp);
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
