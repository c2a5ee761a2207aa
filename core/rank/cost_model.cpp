#include "rank/cost_model.h"

#include <algorithm>
#include <cmath>

namespace shardscope {

namespace {
int64_t toNs(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }
}  // namespace

int64_t CostModel::computeNs(double flops, double bytes) const {
  const auto& d = m_profile.device;
  return toNs(std::max(flops / (d.bf16_flops * d.compute_efficiency), bytes / d.mem_bandwidth));
}

int64_t CostModel::memoryNs(double bytes) const { return toNs(bytes / m_profile.device.mem_bandwidth); }

bool CostModel::sameNode(const std::vector<int>& members) const {
  const int per_node = std::max(1, m_profile.gpus_per_node);
  for (int r : members)
    if (r / per_node != members.front() / per_node) return false;
  return true;
}

int64_t CostModel::collectiveNs(EventKind kind, double bytes_sent, const std::vector<int>& members) const {
  const int p = static_cast<int>(members.size());
  if (p <= 1) return 0;
  const HardwareProfile::Link& link = sameNode(members) ? m_profile.intra_node : m_profile.inter_node;
  const int steps = kind == EventKind::AllReduce ? 2 * (p - 1) : p - 1;
  return toNs(link.latency * steps + bytes_sent / link.bandwidth);
}

}  // namespace shardscope
