// How the members of one communicator group agree on a transport's bootstrap
// token across processes, as torchrun + NCCL do with ncclGetUniqueId: the
// group's first member makes the token and publishes it in the rendezvous
// store; every other member waits for the key and reads it. The token itself
// is opaque here (NCCL's 128-byte ncclUniqueId), so the exchange builds and is
// tested without a GPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gloo::rendezvous {
class Store;
}

namespace shardscope {

struct TokenExchange {
  std::string key;         // unique to the run and the group: "<run prefix>/nccl/<group>"
  std::string group;       // for messages: "world", "shard0.gather"
  std::string store_name;  // for messages: the --rdzv URL
  size_t bytes = 0;        // the token's size; a key of any other size is refused
  std::chrono::milliseconds timeout{60000};  // how long a member waits for the first one
};

// is_first: make the token with generate() and publish it; otherwise wait for it.
// Returns the token. Throws RunError naming the group, the key and the store
// when the key never comes, has the wrong size, or the store fails.
std::vector<uint8_t> exchangeToken(gloo::rendezvous::Store& store, const TokenExchange& exchange, bool is_first,
                                   const std::function<std::vector<uint8_t>()>& generate);

}  // namespace shardscope
