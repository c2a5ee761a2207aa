#include "config/serve_address.h"

#include <charconv>

#include "common/errors.h"

namespace shardscope {

ServeAddress parseServeAddress(const std::string& text, const char* flag, bool allow_any_port) {
  const auto bad = [&](const std::string& why) {
    return ConfigError(std::string(flag) + " must be PORT, HOST:PORT or tcp://HOST:PORT (" + why + "), got '" + text +
                       "'");
  };
  std::string rest = text;
  if (rest.rfind("tcp://", 0) == 0) rest = rest.substr(6);
  ServeAddress a;
  std::string port_text = rest;
  a.host = "127.0.0.1";
  if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    a.host = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
    if (a.host.empty()) throw bad("the host is empty");
    if (a.host.find_first_of(":/ []") != std::string::npos) throw bad("a host name or IPv4 address");
  } else if (text.rfind("tcp://", 0) == 0) {
    throw bad("tcp:// needs HOST:PORT");
  }
  if (a.host == "localhost") a.host = "127.0.0.1";
  if (a.host == "0.0.0.0") a.host = "*";
  int port = -1;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535)
    throw bad("the port is a number 1..65535");
  if (port == 0 && !allow_any_port) throw bad("the port is a number 1..65535");
  a.port = port;
  a.secured = a.host != "127.0.0.1";
  if (a.host == "*" && !allow_any_port) throw bad("attach to a host, not '*'");
  return a;
}

}  // namespace shardscope
