#include "comm/unique_id_exchange.h"

#include <gloo/rendezvous/store.h>

#include <exception>

#include "common/errors.h"

namespace shardscope {

std::vector<uint8_t> exchangeToken(gloo::rendezvous::Store& store, const TokenExchange& x, bool is_first,
                                   const std::function<std::vector<uint8_t>()>& generate) {
  const std::string where = "group '" + x.group + "': key '" + x.key + "' in the rendezvous store " + x.store_name;
  if (is_first) {
    std::vector<uint8_t> token = generate();
    if (token.size() != x.bytes)
      throw RunError(where + ": the token is " + std::to_string(token.size()) + " bytes, not " +
                     std::to_string(x.bytes));
    try {
      store.set(x.key, std::vector<char>(token.begin(), token.end()));
    } catch (const std::exception& e) {
      throw RunError(where + ": cannot publish the group's id: " + e.what());
    }
    return token;
  }
  std::vector<char> data;
  try {
    store.wait({x.key}, x.timeout);
  } catch (const std::exception& e) {
    throw RunError(where + ": the group's first member did not publish its id within " +
                   std::to_string(x.timeout.count()) + " ms (did it start? every rank must start within the "
                   "run's timeout): " + e.what());
  }
  try {
    data = store.get(x.key);
  } catch (const std::exception& e) {
    throw RunError(where + ": cannot read the group's id: " + e.what());
  }
  if (data.size() != x.bytes)
    throw RunError(where + ": holds " + std::to_string(data.size()) + " bytes, not the " + std::to_string(x.bytes) +
                   " of an id (a key left from another run? give each run its own --rdzv-id)");
  return {data.begin(), data.end()};
}

}  // namespace shardscope
