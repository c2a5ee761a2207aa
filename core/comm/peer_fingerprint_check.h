// The fingerprint check for ranks that are separate processes: before each
// collective every member sends its fingerprint and modeled arrival time to
// every other member over the group's own Gloo pairs (uncounted), as PyTorch's
// TORCH_DISTRIBUTED_DEBUG=DETAIL checks collectives through the process group.
// A mismatch or a member that does not answer within the timeout becomes the
// same RunError the in-process monitor gives; a remote rank's status is in its
// own process, so the report names it without one.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "comm/collective_monitor.h"

namespace shardscope {

class GlooCommunicator;

class PeerFingerprintCheck final : public CollectiveCheck {
 public:
  PeerFingerprintCheck(std::string group_name, std::vector<int> members, GlooCommunicator& comm,
                       std::chrono::milliseconds timeout);

  int64_t check(int group_rank, const Fingerprint& fp, int64_t arrival_ns,
                std::chrono::milliseconds timeout) override;
  const std::vector<int>& members() const override { return m_members; }

 private:
  std::string m_name;
  std::vector<int> m_members;
  GlooCommunicator& m_comm;
  std::chrono::milliseconds m_timeout;
};

}  // namespace shardscope
