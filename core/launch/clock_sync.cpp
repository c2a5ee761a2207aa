#include "launch/clock_sync.h"

#include <cstring>
#include <limits>
#include <zmq.hpp>

#include "common/errors.h"

namespace shardscope {

namespace {
int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

struct ClockServer::Sockets {
  zmq::context_t context{1};
  zmq::socket_t rep{context, zmq::socket_type::rep};
};

ClockServer::ClockServer(const std::string& address, std::chrono::steady_clock::time_point origin)
    : m_sockets(std::make_unique<Sockets>()), m_origin(origin) {
  m_sockets->rep.set(zmq::sockopt::linger, 0);
  m_sockets->rep.bind("tcp://" + address + ":*");
  m_endpoint = m_sockets->rep.get(zmq::sockopt::last_endpoint);
  m_thread = std::thread([this] {
    while (!m_stop.load()) {
      zmq::pollitem_t item{m_sockets->rep.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t ping;
      if (!m_sockets->rep.recv(ping, zmq::recv_flags::dontwait)) continue;
      const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                               m_origin).count();
      m_sockets->rep.send(zmq::const_buffer(&now, sizeof now), zmq::send_flags::none);
    }
  });
}

ClockServer::~ClockServer() {
  m_stop.store(true);
  m_thread.join();
}

ClockEstimate estimateNodeZeroOrigin(const std::string& endpoint, int pings, std::chrono::milliseconds timeout) {
  zmq::context_t context(1);
  zmq::socket_t req(context, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, static_cast<int>(timeout.count()));
  req.connect(endpoint);
  ClockEstimate best;
  int64_t best_rtt = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < pings; ++i) {
    const uint8_t ping = 1;
    const int64_t sent = steadyNs();
    req.send(zmq::const_buffer(&ping, 1), zmq::send_flags::none);
    zmq::message_t reply;
    if (!req.recv(reply) || reply.size() != sizeof(int64_t))
      throw RunError("node 0's clock at " + endpoint + " did not answer within " + std::to_string(timeout.count()) +
                     " ms");
    const int64_t received = steadyNs();
    int64_t remote = 0;
    std::memcpy(&remote, reply.data(), sizeof remote);
    const int64_t rtt = received - sent;
    if (rtt < best_rtt) {
      best_rtt = rtt;
      best.origin_ns = sent + rtt / 2 - remote;
      best.uncertainty_ns = (rtt + 1) / 2;
    }
    ++best.pings;
  }
  return best;
}

}  // namespace shardscope
