// Opens the rendezvous store a --rdzv URL names (config/rendezvous_url.h):
// Gloo's own FileStore or RedisStore, through which the ranks' Gloo pairs
// (and the run's collector address) are exchanged.
#pragma once

#include <memory>
#include <string>

namespace gloo::rendezvous {
class Store;
}

namespace shardscope {

// Throws ConfigError for a malformed URL, RunError when the store cannot be
// reached (the message names the URL).
std::shared_ptr<gloo::rendezvous::Store> openRendezvousStore(const std::string& url);

}  // namespace shardscope
