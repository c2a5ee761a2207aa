// Prices ops for the modeled clock under a hardware profile. Compute:
// max(FLOPs / rate, bytes / memory bandwidth); rate = peak x efficiency, or,
// under a calibrated profile given the run's block (priceComputeBy), the rate
// its GEMMs by shape and memory-bound ops reach (a CPU calibration adds the
// weight conversions; all run in turn on a rank's one thread). Collectives: latency x steps
// (ring, or tree for an all-reduce across nodes when fewer) + bytes this rank
// sends / bandwidth (the link's wire figure, or its nccl-tests busbw when
// calibrated), intra-node when every rank of the group shares a node.
// A profile whose figures cannot price ops (zero, negative, not finite) is a
// ConfigError at construction; an op longer than the modeled clock holds
// (kMaxTimeNs) is a RunError naming the profile, never an out-of-range llround.
#pragma once

#include <cstdint>
#include <vector>

#include "rank/compute_work.h"
#include "rank/hardware_profile.h"
#include "trace/event.h"

namespace shardscope {

class CostModel {
 public:
  explicit CostModel(HardwareProfile profile);
  const HardwareProfile& profile() const { return m_profile; }

  bool calibrated() const { return m_profile.calibration.has_value(); }
  // Calibrated profiles: compute is charged at the FLOP rate `work` reaches
  // (its FLOPs over the time its GEMMs and memory-bound ops take). Every
  // block of a transformer is alike, so one rate prices the whole model.
  void priceComputeBy(const BlockWork& work);
  double computeRate() const;  // FLOP/s a charged FLOP runs at
  // Calibrated profiles: one GEMM (all `count` of it), the max of its tile-
  // and wave-quantized compute and its HBM traffic; and `work` whole.
  double gemmSeconds(const GemmShape& gemm) const;
  double workSeconds(const BlockWork& work) const;
  double memoryBandwidth() const;  // bytes/s memory-bound ops reach
  // bytes/s a block's memory-bound ops (BlockWork::memory_bytes) reach: the
  // calibration's elementwise_bandwidth when it has one, else memoryBandwidth().
  double elementwiseBandwidth() const;

  int64_t computeNs(double flops, double bytes) const;
  int64_t memoryNs(double bytes) const;
  // bytes_sent: what this rank put on the wire (measured at the sends).
  int64_t collectiveNs(EventKind kind, double bytes_sent, const std::vector<int>& members) const;
  // The part of collectiveNs that the link's per-message latency makes: one
  // latency per ring step, 2(P-1) for an all-reduce, P-1 otherwise (an
  // all-reduce across nodes under a calibrated profile: NCCL's tree,
  // 2 log2(P) steps, when fewer).
  int64_t latencyNs(EventKind kind, const std::vector<int>& members) const;
  bool sameNode(const std::vector<int>& members) const;
  // A point-to-point transfer of `bytes` between two ranks (pipeline stages):
  // one message's latency plus the bytes over the link the pair shares.
  int64_t pointToPointNs(double bytes, int from, int to) const;
  // The host thread's time to issue `kernels` kernel launches and `hooks` FSDP unit hooks.
  int64_t hostIssueNs(int kernels, int hooks) const;

 private:
  int64_t toNs(double seconds) const;
  double latencySeconds(EventKind kind, const std::vector<int>& members) const;

  HardwareProfile m_profile;
  double m_computeRate = 0;  // FLOP/s from priceComputeBy; 0: the profile's flat rate
};

}  // namespace shardscope
