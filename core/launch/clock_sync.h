// Aligning the measured clocks of several machines, NTP-style: node 0 answers
// pings with its run-clock reading; another node's launcher pings it a few
// times at rendezvous and keeps the exchange with the shortest round trip.
// Node 0's origin in this host's steady clock is then the round trip's
// midpoint minus node 0's reading, within half the round trip (the stated
// uncertainty). The node's workers time their events from that origin.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace shardscope {

class ClockServer {
 public:
  // Binds on `address` (a free port); answers until destroyed.
  ClockServer(const std::string& address, std::chrono::steady_clock::time_point origin);
  ~ClockServer();
  ClockServer(const ClockServer&) = delete;
  ClockServer& operator=(const ClockServer&) = delete;
  const std::string& endpoint() const { return m_endpoint; }

 private:
  struct Sockets;
  std::unique_ptr<Sockets> m_sockets;
  std::string m_endpoint;
  std::chrono::steady_clock::time_point m_origin;
  std::atomic<bool> m_stop{false};
  std::thread m_thread;
};

struct ClockEstimate {
  int64_t origin_ns = 0;       // node 0's origin in this host's steady clock (ns since its epoch)
  int64_t uncertainty_ns = 0;  // half the shortest round trip
  int pings = 0;
};

// Throws RunError when node 0's clock server does not answer within `timeout`.
ClockEstimate estimateNodeZeroOrigin(const std::string& endpoint, int pings = 16,
                                     std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

}  // namespace shardscope
