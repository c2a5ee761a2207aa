// Taking one wire message (launch/wire_format.h: a header part and a payload
// part) off a ZeroMQ socket, whatever the sender put in it.
#pragma once

#include <zmq.hpp>

namespace shardscope {

// Receives every part of the next message without waiting, keeping the first
// two in header and payload; returns how many parts it had (0: none waiting).
inline size_t receiveWireParts(zmq::socket_t& socket, zmq::message_t& header, zmq::message_t& payload) {
  if (!socket.recv(header, zmq::recv_flags::dontwait)) return 0;
  size_t parts = 1;
  while (socket.get(zmq::sockopt::rcvmore)) {
    zmq::message_t part;
    (void)socket.recv(part, zmq::recv_flags::none);
    if (++parts == 2) payload = std::move(part);
  }
  return parts;
}

}  // namespace shardscope
