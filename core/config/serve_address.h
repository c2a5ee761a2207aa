// --serve ADDR (a live run, exposed to inspectors) and `attach ADDR`: PORT,
// HOST:PORT or tcp://HOST:PORT. A bare port is 127.0.0.1's. Every address is
// served with ZeroMQ's CURVE authentication and encryption; the serving user's
// own key is always authorized, so on 127.0.0.1 the same user attaches with no
// setup and another account is refused.
#pragma once

#include <string>

namespace shardscope {

struct ServeAddress {
  std::string host;  // "127.0.0.1", "10.0.0.5", "*" (all interfaces)
  int port = 0;      // 0: a free port, chosen when bound (serve only)
  // Not 127.0.0.1: an inspector must be given the server's public key
  // (--server-key). Every address is served with CURVE; on 127.0.0.1 the
  // same user's own identity is the server's key and is authorized by default.
  bool secured = false;
  std::string endpoint() const { return "tcp://" + host + ":" + std::to_string(port); }
};

// Throws ConfigError naming `flag` and the forms allowed. allow_any_port: a
// port of 0 (serve: pick one) is accepted.
ServeAddress parseServeAddress(const std::string& text, const char* flag, bool allow_any_port);

}  // namespace shardscope
