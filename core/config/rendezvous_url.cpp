#include "config/rendezvous_url.h"

#include "common/errors.h"

namespace shardscope {

RendezvousUrl parseRendezvousUrl(const std::string& url, const char* flag) {
  const auto bad = [&](const std::string& why) {
    return ConfigError(std::string(flag) + " '" + url + "': " + why +
                       "; allowed: file://DIR (one host or a shared file system) or redis://HOST:PORT");
  };
  RendezvousUrl u;
  if (url.starts_with("file://")) {
    u.kind = RendezvousUrl::Kind::File;
    u.path = url.substr(7);
    if (u.path.empty() || u.path[0] != '/') throw bad("the directory must be an absolute path");
    return u;
  }
  if (url.starts_with("redis://")) {
    u.kind = RendezvousUrl::Kind::Redis;
    const std::string rest = url.substr(8);
    const size_t colon = rest.rfind(':');
    u.host = colon == std::string::npos ? rest : rest.substr(0, colon);
    if (u.host.empty()) throw bad("no host");
    if (colon != std::string::npos) {
      const std::string port = rest.substr(colon + 1);
      if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
        throw bad("the port must be a number in 1..65535");
      u.port = std::stoi(port);
      if (u.port < 1 || u.port > 65535) throw bad("the port must be a number in 1..65535");
    }
    return u;
  }
  throw bad("unknown scheme");
}

}  // namespace shardscope
