// The meta backend's collectives: no data moves, but each call counts the
// bytes this rank would put on the wire under the ring algorithm (the same
// chunking as the Gloo rings), so traffic and the modeled clock match a real run.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"

namespace shardscope {

std::vector<std::unique_ptr<Communicator>> createMetaGroup(int size);

}  // namespace shardscope
