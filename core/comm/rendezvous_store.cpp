#include "comm/rendezvous_store.h"

#include <gloo/rendezvous/file_store.h>
// Debian installs hiredis under hiredis/.
#define HIREDIS_NESTED_INCLUDE 1
#include <gloo/rendezvous/redis_store.h>

#include <filesystem>

#include "common/errors.h"
#include "config/rendezvous_url.h"

namespace shardscope {

std::shared_ptr<gloo::rendezvous::Store> openRendezvousStore(const std::string& url) {
  const RendezvousUrl u = parseRendezvousUrl(url);
  try {
    if (u.kind == RendezvousUrl::Kind::File) {
      std::filesystem::create_directories(u.path);
      return std::make_shared<gloo::rendezvous::FileStore>(u.path);
    }
    return std::make_shared<gloo::rendezvous::RedisStore>(u.host, u.port);
  } catch (const std::exception& e) {
    throw RunError("--rdzv " + url + ": cannot open the rendezvous store: " + e.what());
  }
}

}  // namespace shardscope
