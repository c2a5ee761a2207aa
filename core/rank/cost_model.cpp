#include "rank/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/checked_math.h"
#include "common/errors.h"

namespace shardscope {

namespace {

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", x);
  return text;
}

// A figure the cost model divides by: finite and positive, else no op has a price.
void requirePositive(const HardwareProfile& p, const char* field, double value) {
  if (!(value > 0) || !std::isfinite(value))
    throw ConfigError("profile '" + p.name + "': " + field + " must be a positive finite number to price ops, got " +
                      number(value));
}

}  // namespace

CostModel::CostModel(HardwareProfile profile) : m_profile(std::move(profile)) {
  const auto& d = m_profile.device;
  requirePositive(m_profile, "device.bf16_tflops", d.bf16_flops);
  requirePositive(m_profile, "device.compute_efficiency", d.compute_efficiency);
  requirePositive(m_profile, "device.mem_bandwidth_gb_per_s", d.mem_bandwidth);
  requirePositive(m_profile, "intra_node.bandwidth_gb_per_s", m_profile.intra_node.bandwidth);
  requirePositive(m_profile, "inter_node.bandwidth_gb_per_s", m_profile.inter_node.bandwidth);
  for (const double host : {m_profile.host.kernel_launch, m_profile.host.unit_hook})
    if (!(host >= 0) || !std::isfinite(host))
      throw ConfigError("profile '" + m_profile.name + "': a host cost must be a finite number >= 0, got " +
                        number(host));
  for (const double latency : {m_profile.intra_node.latency, m_profile.inter_node.latency})
    if (!(latency >= 0) || !std::isfinite(latency))
      throw ConfigError("profile '" + m_profile.name + "': a link's latency_us must be a finite number >= 0, got " +
                        number(latency));
}

int64_t CostModel::toNs(double seconds) const {
  // llround of a value past int64 is undefined: an op the modeled clock
  // cannot hold ends the run with the profile named instead.
  const double ns = seconds * 1e9;
  if (!(ns >= 0) || ns > static_cast<double>(kMaxTimeNs))
    throw RunError("the modeled clock cannot price an op of " + number(seconds) + " s under profile '" + m_profile.name +
                   "' (a run's modeled time stays under " + number(static_cast<double>(kMaxTimeNs) * 1e-9) +
                   " s, about 31 years): the profile's figures are too small for this run");
  return static_cast<int64_t>(std::llround(ns));
}

int64_t CostModel::computeNs(double flops, double bytes) const {
  const auto& d = m_profile.device;
  return toNs(std::max(flops / (d.bf16_flops * d.compute_efficiency), bytes / d.mem_bandwidth));
}

int64_t CostModel::memoryNs(double bytes) const { return toNs(bytes / m_profile.device.mem_bandwidth); }

int64_t CostModel::hostIssueNs(int kernels, int hooks) const {
  return toNs(kernels * m_profile.host.kernel_launch + hooks * m_profile.host.unit_hook);
}

bool CostModel::sameNode(const std::vector<int>& members) const {
  const int per_node = std::max(1, m_profile.gpus_per_node);
  for (int r : members)
    if (r / per_node != members.front() / per_node) return false;
  return true;
}

namespace {
int ringSteps(EventKind kind, int p) { return kind == EventKind::AllReduce ? 2 * (p - 1) : p - 1; }
}  // namespace

int64_t CostModel::latencyNs(EventKind kind, const std::vector<int>& members) const {
  const int p = static_cast<int>(members.size());
  if (p <= 1) return 0;
  const HardwareProfile::Link& link = sameNode(members) ? m_profile.intra_node : m_profile.inter_node;
  return toNs(link.latency * ringSteps(kind, p));
}

int64_t CostModel::collectiveNs(EventKind kind, double bytes_sent, const std::vector<int>& members) const {
  const int p = static_cast<int>(members.size());
  if (p <= 1) return 0;
  const HardwareProfile::Link& link = sameNode(members) ? m_profile.intra_node : m_profile.inter_node;
  return toNs(link.latency * ringSteps(kind, p) + bytes_sent / link.bandwidth);
}

int64_t CostModel::pointToPointNs(double bytes, int from, int to) const {
  const HardwareProfile::Link& link = sameNode({from, to}) ? m_profile.intra_node : m_profile.inter_node;
  return toNs(link.latency + bytes / link.bandwidth);
}

}  // namespace shardscope
