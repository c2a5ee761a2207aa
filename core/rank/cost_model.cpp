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
  if (const auto& c = m_profile.calibration) {
    requirePositive(m_profile, "calibration.gemm_efficiency", c->gemm_efficiency);
    requirePositive(m_profile, "calibration.hbm_efficiency", c->hbm_efficiency);
    requirePositive(m_profile, "calibration.intra_node_busbw_gb_per_s", c->intra_node_busbw);
    requirePositive(m_profile, "calibration.inter_node_busbw_gb_per_s", c->inter_node_busbw);
    for (const int n : {c->gemm_tile_m, c->gemm_tile_n, c->sms})
      if (n < 1) throw ConfigError("profile '" + m_profile.name + "': calibration's gemm_tile and sms must be >= 1");
  }
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

double CostModel::memoryBandwidth() const {
  const auto& c = m_profile.calibration;
  return m_profile.device.mem_bandwidth * (c ? c->hbm_efficiency : 1.0);
}

double CostModel::gemmSeconds(const GemmShape& g) const {
  if (!calibrated()) return g.flops() / (m_profile.device.bf16_flops * m_profile.device.compute_efficiency);
  const auto& c = *m_profile.calibration;
  // Each thread block computes one output tile over the whole k: a partial
  // tile costs a full one, and tiles (a batched GEMM's all together) run in
  // waves of `sms`, so the last wave's idle SMs cost too. The tile lies either
  // way (the library transposes the problem), whichever wastes less. The
  // plateau is what full waves of full tiles reach.
  const auto waves = [&](double tm, double tn) {
    return std::ceil(g.count * std::ceil(g.m / tm) * std::ceil(g.n / tn) / c.sms);
  };
  const double tile = double(c.gemm_tile_m) * c.gemm_tile_n;
  const double wave_count = std::min(waves(c.gemm_tile_m, c.gemm_tile_n), waves(c.gemm_tile_n, c.gemm_tile_m));
  const double padded_flops = 2.0 * wave_count * c.sms * tile * g.k;
  const double compute = padded_flops / (m_profile.device.bf16_flops * c.gemm_efficiency);
  if (!g.through_hbm) return compute;
  const double bytes = 2.0 * g.count * (g.m * g.k + g.k * g.n + g.m * g.n);  // bf16 in and out
  return std::max(compute, bytes / memoryBandwidth());
}

double CostModel::elementwiseBandwidth() const {
  const auto& c = m_profile.calibration;
  return c && c->elementwise_bandwidth > 0 ? c->elementwise_bandwidth : memoryBandwidth();
}

double CostModel::workSeconds(const BlockWork& work) const {
  double seconds = work.memory_bytes / elementwiseBandwidth();
  if (calibrated()) seconds += work.weight_elements * m_profile.calibration->weight_convert;
  for (const GemmShape& g : work.gemms) seconds += gemmSeconds(g);
  return seconds;
}

void CostModel::priceComputeBy(const BlockWork& work) {
  if (!calibrated() || !(work.flops > 0)) return;
  const double seconds = workSeconds(work);
  if (seconds > 0) m_computeRate = work.flops / seconds;
}

double CostModel::computeRate() const {
  if (m_computeRate > 0) return m_computeRate;
  const auto& d = m_profile.device;
  return d.bf16_flops * (calibrated() ? m_profile.calibration->gemm_efficiency : d.compute_efficiency);
}

int64_t CostModel::computeNs(double flops, double bytes) const {
  return toNs(std::max(flops / computeRate(), bytes / memoryBandwidth()));
}

int64_t CostModel::memoryNs(double bytes) const { return toNs(bytes / memoryBandwidth()); }

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

double CostModel::latencySeconds(EventKind kind, const std::vector<int>& members) const {
  const int p = static_cast<int>(members.size());
  const bool same_node = sameNode(members);
  const HardwareProfile::Link& link = same_node ? m_profile.intra_node : m_profile.inter_node;
  double steps = ringSteps(kind, p);
  // NCCL picks a tree for an all-reduce across nodes when it is faster: up
  // and down a binary tree, 2 log2(P) steps against the ring's 2(P-1).
  if (calibrated() && !same_node && kind == EventKind::AllReduce)
    steps = std::min(steps, 2.0 * std::ceil(std::log2(double(p))));
  return link.latency * steps;
}

int64_t CostModel::latencyNs(EventKind kind, const std::vector<int>& members) const {
  if (members.size() <= 1) return 0;
  return toNs(latencySeconds(kind, members));
}

int64_t CostModel::collectiveNs(EventKind kind, double bytes_sent, const std::vector<int>& members) const {
  if (members.size() <= 1) return 0;
  const bool same_node = sameNode(members);
  double bandwidth = (same_node ? m_profile.intra_node : m_profile.inter_node).bandwidth;
  // bytes_sent / busbw is nccl-tests' time: busbw = S / t x 2(P-1)/P for an
  // all-reduce, x (P-1)/P otherwise, and a ring rank sends exactly that share.
  if (const auto& c = m_profile.calibration) bandwidth = same_node ? c->intra_node_busbw : c->inter_node_busbw;
  return toNs(latencySeconds(kind, members) + bytes_sent / bandwidth);
}

int64_t CostModel::pointToPointNs(double bytes, int from, int to) const {
  const HardwareProfile::Link& link = sameNode({from, to}) ? m_profile.intra_node : m_profile.inter_node;
  return toNs(link.latency + bytes / link.bandwidth);
}

}  // namespace shardscope
