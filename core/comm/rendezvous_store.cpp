#include "comm/rendezvous_store.h"

#include <gloo/rendezvous/file_store.h>
// Debian installs hiredis under hiredis/.
#define HIREDIS_NESTED_INCLUDE 1
#include <gloo/rendezvous/redis_store.h>

#include <chrono>
#include <filesystem>
#include <system_error>

#include "common/errors.h"
#include "config/rendezvous_url.h"

namespace shardscope {

namespace {
// Gloo's FileStore, with its key check (protected there) open to rendezvousStoreHas.
class CheckableFileStore final : public gloo::rendezvous::FileStore {
 public:
  using FileStore::FileStore;
  bool has(const std::vector<std::string>& keys) { return check(keys); }
};
}  // namespace

bool rendezvousStoreHas(gloo::rendezvous::Store& store, const std::vector<std::string>& keys) {
  try {
    if (auto* file = dynamic_cast<CheckableFileStore*>(&store)) return file->has(keys);
    if (auto* redis = dynamic_cast<gloo::rendezvous::RedisStore*>(&store)) return redis->check(keys);
    store.wait(keys, std::chrono::milliseconds(1));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string rendezvousJobDir(const std::string& url, const std::string& job) {
  const RendezvousUrl u = parseRendezvousUrl(url);
  if (u.kind != RendezvousUrl::Kind::File) return {};
  return (std::filesystem::path(u.path) / ("shardscope-job-" + job)).string();
}

std::shared_ptr<gloo::rendezvous::Store> openRendezvousStore(const std::string& url, const std::string& job) {
  const RendezvousUrl u = parseRendezvousUrl(url);
  try {
    if (u.kind == RendezvousUrl::Kind::File) {
      const std::string dir = rendezvousJobDir(url, job);
      std::filesystem::create_directories(dir);
      return std::make_shared<CheckableFileStore>(dir);
    }
    return std::make_shared<gloo::rendezvous::RedisStore>(u.host, u.port);
  } catch (const std::exception& e) {
    throw RunError("--rdzv " + url + ": cannot open the rendezvous store: " + e.what());
  }
}

bool removeRendezvousJobDir(const std::string& url, const std::string& job) {
  try {
    const std::string dir = rendezvousJobDir(url, job);
    if (dir.empty()) return true;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return !ec;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace shardscope
