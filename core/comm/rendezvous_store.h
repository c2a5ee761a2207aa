// Opens the rendezvous store a --rdzv URL names (config/rendezvous_url.h):
// Gloo's own FileStore or RedisStore, through which the ranks' Gloo pairs
// (and the run's collector address) are exchanged.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace gloo::rendezvous {
class Store;
}

namespace shardscope {

// A file:// store keeps each job's keys in a directory of its own inside the
// URL's (rendezvousJobDir), so that the job's end can remove exactly what the
// job wrote (Gloo names its files by a hash of the key) and never another
// job's or the directory itself.
// Throws ConfigError for a malformed URL, RunError when the store cannot be
// reached (the message names the URL).
std::shared_ptr<gloo::rendezvous::Store> openRendezvousStore(const std::string& url, const std::string& job);

// Whether the store holds every key now, without waiting: Gloo's wait counts
// its timeout in whole seconds, so a 1 ms wait for a missing key takes 1 s.
bool rendezvousStoreHas(gloo::rendezvous::Store& store, const std::vector<std::string>& keys);

// The job's own directory of a file:// store ("" for redis://): DIR/shardscope-job-<job>.
// `job` is the --rdzv-id (no '/', so the name is always one path component).
std::string rendezvousJobDir(const std::string& url, const std::string& job);

// Removes the job's directory of a file:// store (what every process of the
// job wrote there); the URL's directory and anything else in it stay. Never
// throws; false when something could not be removed.
bool removeRendezvousJobDir(const std::string& url, const std::string& job);

}  // namespace shardscope
