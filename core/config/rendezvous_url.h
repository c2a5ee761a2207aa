// --rdzv URL: where the processes of a run meet (torchrun's rendezvous
// endpoint): file://DIR (Gloo's FileStore: one host, or a shared file system)
// or redis://HOST:PORT (Gloo's RedisStore).
#pragma once

#include <string>

namespace shardscope {

struct RendezvousUrl {
  enum class Kind { File, Redis } kind = Kind::File;
  std::string path;  // File: the directory
  std::string host;  // Redis
  int port = 6379;
};

// Throws ConfigError naming `flag` and the two forms allowed.
RendezvousUrl parseRendezvousUrl(const std::string& url, const char* flag = "--rdzv");

}  // namespace shardscope
