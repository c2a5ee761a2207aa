#include "comm/rendezvous_store.h"

#include <gloo/rendezvous/file_store.h>
// Debian installs hiredis under hiredis/.
#define HIREDIS_NESTED_INCLUDE 1
#include <gloo/rendezvous/redis_store.h>

#include <chrono>
#include <filesystem>
#include <system_error>

#include <sys/stat.h>
#include <unistd.h>

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
// The job's keys decide who runs and when a run aborts: a folder another
// account made first (its name follows from the public --rdzv-id) or may
// write into would let it stop the job or plant keys. The folder is made
// 0700 for the job's own account; the nodes of one job run as one account.
void checkJobDirIsOurs(const std::string& url, const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw RunError("--rdzv " + url + ": " + dir + " is not a folder (a link or file in its place is refused)");
  if (st.st_uid != ::geteuid())
    throw RunError("--rdzv " + url + ": " + dir + " belongs to another account (uid " + std::to_string(st.st_uid) +
                   "), which could stop the job or write into its keys: remove it, or choose another --rdzv-id");
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0)
    throw RunError("--rdzv " + url + ": " + dir + " is open to other accounts and cannot be made private");
}

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
      checkJobDirIsOurs(url, dir);
      return std::make_shared<CheckableFileStore>(dir);
    }
    return std::make_shared<gloo::rendezvous::RedisStore>(u.host, u.port);
  } catch (const RunError&) {
    throw;
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
