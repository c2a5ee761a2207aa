#include "launch/wire_format.h"

#include <cstring>

namespace shardscope {

namespace {
template <class T>
T readAt(std::span<const uint8_t> bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

template <class T>
void append(std::vector<uint8_t>& out, const T& value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), p, p + sizeof value);
}

std::string kindText(uint16_t kind) { return std::to_string(kind); }

void checkEvent(const Event& e, int rank, size_t index) {
  const auto where = [&] { return "event " + std::to_string(index) + " of the batch: "; };
  if (e.rank != rank)
    throw WireError(where() + "rank " + std::to_string(e.rank) + " must be the sender's rank " + std::to_string(rank));
  if (static_cast<int>(e.lane) >= kLaneCount)
    throw WireError(where() + "lane " + std::to_string(static_cast<int>(e.lane)) + " must be below " +
                    std::to_string(kLaneCount));
  if (static_cast<int>(e.kind) >= kEventKindCount)
    throw WireError(where() + "kind " + std::to_string(static_cast<int>(e.kind)) + " must be below " +
                    std::to_string(kEventKindCount));
  if (static_cast<int>(e.category) >= kCategoryCount)
    throw WireError(where() + "category " + std::to_string(static_cast<int>(e.category)) + " must be below " +
                    std::to_string(kCategoryCount));
  if (e.end_ns < e.begin_ns) throw WireError(where() + "end_ns must not come before begin_ns");
}
}  // namespace

std::vector<uint8_t> wireHeader(WireKind kind, int rank, uint32_t count, uint64_t run_id) {
  WireHeader h;
  h.kind = static_cast<uint16_t>(kind);
  h.rank = static_cast<int16_t>(rank);
  h.count = count;
  h.run_id = run_id;
  std::vector<uint8_t> out;
  append(out, h);
  return out;
}

std::vector<uint8_t> lossPayload(int step, double loss) {
  std::vector<uint8_t> out;
  append(out, static_cast<int32_t>(step));
  append(out, int32_t{0});
  append(out, loss);
  return out;
}

std::vector<uint8_t> masterPayload(int64_t offset, std::span<const float> values) {
  std::vector<uint8_t> out;
  out.reserve(8 + values.size_bytes());
  append(out, offset);
  const auto* p = reinterpret_cast<const uint8_t*>(values.data());
  out.insert(out.end(), p, p + values.size_bytes());
  return out;
}

std::vector<uint8_t> nodeClockPayload(const RunTrace::NodeClock& c) {
  std::vector<uint8_t> out;
  append(out, static_cast<int32_t>(c.node));
  append(out, static_cast<int32_t>(c.first_rank));
  append(out, static_cast<int32_t>(c.ranks));
  append(out, static_cast<int32_t>(c.pings));
  append(out, c.uncertainty_ns);
  return out;
}

WireMessage decodeWireMessage(std::span<const uint8_t> header, std::span<const uint8_t> payload, uint64_t run_id,
                              int ranks) {
  if (header.size() != sizeof(WireHeader))
    throw WireError("header: " + std::to_string(header.size()) + " bytes, must be " +
                    std::to_string(sizeof(WireHeader)));
  const auto h = readAt<WireHeader>(header, 0);
  if (h.magic != kWireMagic) throw WireError("header: magic is not ShardScope's (not a rank's message)");
  if (h.byte_order != kWireByteOrder)
    throw WireError("header: byte order differs from this machine's (ranks and collector must share it)");
  if (h.version != kWireVersion)
    throw WireError("header: version " + std::to_string(h.version) + ", this build reads version " +
                    std::to_string(kWireVersion));
  if (h.run_id != run_id) throw WireError("header: run id belongs to another run");
  if (h.rank < 0 || h.rank >= ranks)
    throw WireError("header: rank " + std::to_string(h.rank) + " must be in 0.." + std::to_string(ranks - 1));
  if (payload.size() > kWireMaxPayload)
    throw WireError("payload: " + std::to_string(payload.size()) + " bytes, more than the " +
                    std::to_string(kWireMaxPayload) + " allowed");
  WireMessage m;
  m.rank = h.rank;
  const auto expect = [&](size_t bytes, const char* what) {
    if (payload.size() != bytes)
      throw WireError(std::string("payload of a ") + what + " message: " + std::to_string(payload.size()) +
                      " bytes, must be " + std::to_string(bytes));
  };
  switch (static_cast<WireKind>(h.kind)) {
    case WireKind::Hello:
      expect(8, "hello");
      m.pid = readAt<int64_t>(payload, 0);
      break;
    case WireKind::Events:
      expect(static_cast<size_t>(h.count) * sizeof(Event), "events");
      if (reinterpret_cast<uintptr_t>(payload.data()) % alignof(Event) == 0) {
        m.events = {reinterpret_cast<const Event*>(payload.data()), h.count};
      } else {
        m.copied.resize(h.count);
        if (h.count) std::memcpy(m.copied.data(), payload.data(), payload.size());
        m.events = m.copied;
      }
      for (size_t i = 0; i < m.events.size(); ++i) checkEvent(m.events[i], m.rank, i);
      break;
    case WireKind::Loss:
      expect(16, "loss");
      m.step = readAt<int32_t>(payload, 0);
      m.loss = readAt<double>(payload, 8);
      if (m.step < 0) throw WireError("loss: step " + std::to_string(m.step) + " must not be negative");
      break;
    case WireKind::Result:
    case WireKind::Failed:
    case WireKind::Died:
      expect(h.count, "text");
      m.text.assign(reinterpret_cast<const char*>(payload.data()), payload.size());
      break;
    case WireKind::Master:
      expect(8 + static_cast<size_t>(h.count) * sizeof(float), "master");
      m.offset = readAt<int64_t>(payload, 0);
      m.master.resize(h.count);
      if (h.count) std::memcpy(m.master.data(), payload.data() + 8, m.master.size() * sizeof(float));
      if (m.offset < 0) throw WireError("master: offset must not be negative");
      break;
    case WireKind::Done:
      expect(1, "done");
      if (payload[0] > 1) throw WireError("done: outcome must be 0 (stopped) or 1 (finished)");
      m.finished = payload[0] == 1;
      break;
    case WireKind::NodeClock: {
      expect(24, "node clock");
      RunTrace::NodeClock& c = m.node_clock;
      c.node = readAt<int32_t>(payload, 0);
      c.first_rank = readAt<int32_t>(payload, 4);
      c.ranks = readAt<int32_t>(payload, 8);
      c.pings = readAt<int32_t>(payload, 12);
      c.uncertainty_ns = readAt<int64_t>(payload, 16);
      if (c.node < 1) throw WireError("node clock: node " + std::to_string(c.node) + " must be 1 or more");
      if (c.first_rank < 0 || c.ranks < 1 || c.first_rank > ranks - c.ranks)
        throw WireError("node clock: ranks " + std::to_string(c.first_rank) + " + " + std::to_string(c.ranks) +
                        " must lie in 0.." + std::to_string(ranks - 1));
      if (c.pings < 1 || c.uncertainty_ns < 0)
        throw WireError("node clock: pings must be 1 or more and the uncertainty not negative");
      break;
    }
    default:
      throw WireError("header: kind " + kindText(h.kind) + " must be 1..9 (hello, events, loss, result, master, "
                      "failed, done, died, node clock)");
  }
  m.kind = static_cast<WireKind>(h.kind);
  return m;
}

}  // namespace shardscope
