// Prices ops for the modeled clock under a hardware profile. Compute:
// max(FLOPs / (peak x efficiency), bytes / memory bandwidth). Collectives
// (ring): latency x ring steps + bytes this rank sends / link bandwidth, on the
// intra-node link when every rank of the group shares a node, else inter-node.
// A profile whose figures cannot price ops (zero, negative, not finite) is a
// ConfigError at construction; an op longer than the modeled clock holds
// (kMaxTimeNs) is a RunError naming the profile, never an out-of-range llround.
#pragma once

#include <cstdint>
#include <vector>

#include "rank/hardware_profile.h"
#include "trace/event.h"

namespace shardscope {

class CostModel {
 public:
  explicit CostModel(HardwareProfile profile);
  const HardwareProfile& profile() const { return m_profile; }

  int64_t computeNs(double flops, double bytes) const;
  int64_t memoryNs(double bytes) const;
  // bytes_sent: what this rank put on the wire (measured at the sends).
  int64_t collectiveNs(EventKind kind, double bytes_sent, const std::vector<int>& members) const;
  // The part of collectiveNs that the link's per-message latency makes: one
  // latency per ring step, 2(P-1) for an all-reduce, P-1 otherwise.
  int64_t latencyNs(EventKind kind, const std::vector<int>& members) const;
  bool sameNode(const std::vector<int>& members) const;
  // A point-to-point transfer of `bytes` between two ranks (pipeline stages):
  // one message's latency plus the bytes over the link the pair shares.
  int64_t pointToPointNs(double bytes, int from, int to) const;
  // The host thread's time to issue `kernels` kernel launches and `hooks` FSDP unit hooks.
  int64_t hostIssueNs(int kernels, int hooks) const;

 private:
  int64_t toNs(double seconds) const;

  HardwareProfile m_profile;
};

}  // namespace shardscope
