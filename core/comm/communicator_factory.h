// Makes the communicators of one group for a backend that brings its own (a
// GPU runtime's NCCL or emulated ones), so CommMesh builds its groups without
// knowing which runtime it is.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "common/errors.h"

namespace shardscope {

struct MeshProcess;

class CommunicatorFactory {
 public:
  virtual ~CommunicatorFactory() = default;
  // Communicators of one group, in group-rank order; members are global ranks.
  // Calls enqueue on the caller's current queue and return.
  virtual std::vector<std::unique_ptr<Communicator>> createGroup(const std::string& name,
                                                                 const std::vector<int>& members) = 0;
  // Ranks as processes (--launch processes): this process's member group_rank
  // of one group, connected to the members in other processes through
  // process.store. A backend without a cross-process transport refuses.
  virtual std::unique_ptr<Communicator> connectMember(const std::string& name, const std::vector<int>& members,
                                                      int group_rank, const MeshProcess& process) {
    (void)members, (void)group_rank, (void)process;
    throw ConfigError("group '" + name + "': this backend runs its ranks as threads of one process (--launch threads)");
  }
};

}  // namespace shardscope
