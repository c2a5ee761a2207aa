// Makes the communicators of one group for a backend that brings its own (a
// GPU runtime's NCCL or emulated ones), so CommMesh builds its groups without
// knowing which runtime it is.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace shardscope {

class CommunicatorFactory {
 public:
  virtual ~CommunicatorFactory() = default;
  // Communicators of one group, in group-rank order; members are global ranks.
  // Calls enqueue on the caller's current queue and return.
  virtual std::vector<std::unique_ptr<Communicator>> createGroup(const std::string& name,
                                                                 const std::vector<int>& members) = 0;
};

}  // namespace shardscope
