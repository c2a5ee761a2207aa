// What a rank process sends the run's collector (the launcher, or an attached
// inspector): one ZeroMQ message per record batch, a fixed 32-byte header and
// a payload. The receiver checks the header (magic, version, byte order, run
// id, rank) and the payload's size and fields before it trusts a byte; a bad
// message is one WireError naming what is wrong, never a crash.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "trace/event.h"
#include "trace/run_trace.h"

namespace shardscope {

inline constexpr uint32_t kWireMagic = 0x53535752;  // "SSWR"
inline constexpr uint16_t kWireVersion = 1;
inline constexpr uint16_t kWireByteOrder = 0x0102;  // as the sender stores it
// One message's payload at most (a batch of events, a result, a master part).
inline constexpr size_t kWireMaxPayload = size_t{64} << 20;

enum class WireKind : uint16_t {
  Hello = 1,   // the worker is up: payload = its pid (int64)
  Events = 2,  // count Event records (64 bytes each)
  Loss = 3,    // one step's loss: int32 step, int32 0, double loss
  Result = 4,  // the rank's result: JSON (launch/rank_result_json.h)
  Master = 5,  // final master weights: int64 offset, then count floats
  Failed = 6,  // the rank stopped with an error: UTF-8 text
  Done = 7,    // the last message: uint8 1 = finished, 0 = stopped early
  Died = 8,    // another node's launcher: this rank's process died (UTF-8 text)
  NodeClock = 9,  // another node's launcher: int32 node, first rank, ranks, pings; int64 uncertainty ns
};

struct WireHeader {
  uint32_t magic = kWireMagic;
  uint16_t version = kWireVersion;
  uint16_t byte_order = kWireByteOrder;
  uint16_t kind = 0;
  int16_t rank = -1;
  uint32_t count = 0;  // Events: records; Master: floats; else payload bytes
  uint64_t run_id = 0;
  uint64_t reserved = 0;
};
static_assert(sizeof(WireHeader) == 32);

class WireError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One decoded message; only the fields of its kind are set.
struct WireMessage {
  WireKind kind = WireKind::Hello;
  int rank = -1;
  int64_t pid = 0;
  // Events: a view of the payload when it is aligned for Event (ZeroMQ's
  // buffers are), else of a copy; valid while the payload is.
  std::span<const Event> events;
  std::vector<Event> copied;
  int step = 0;
  double loss = 0;
  std::string text;  // Result's JSON, Failed's message
  int64_t offset = 0;
  std::vector<float> master;
  bool finished = false;
  RunTrace::NodeClock node_clock;
};

// Header + payload of each kind, as the sender puts them on the wire.
std::vector<uint8_t> wireHeader(WireKind kind, int rank, uint32_t count, uint64_t run_id);
std::vector<uint8_t> lossPayload(int step, double loss);
std::vector<uint8_t> masterPayload(int64_t offset, std::span<const float> values);
std::vector<uint8_t> nodeClockPayload(const RunTrace::NodeClock& clock);

// Checks and decodes one message for run `run_id` of `ranks` ranks. Throws
// WireError naming the field and what is allowed.
WireMessage decodeWireMessage(std::span<const uint8_t> header, std::span<const uint8_t> payload, uint64_t run_id,
                              int ranks);

}  // namespace shardscope
