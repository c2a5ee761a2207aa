// What a rank process sends the run's collector (the launcher), and what a
// served run and an attached inspector say to each other (attach/): one
// ZeroMQ message per record batch or command, a fixed 32-byte header and a
// payload. The receiver checks the header (magic, version, byte order, run
// id, rank) and the payload's size and fields before it trusts a byte; a bad
// message is one WireError naming what is wrong, never a crash.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "rank/step_control.h"
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
  // A served run and its attached inspectors (rank -1; Events, Loss, Result,
  // Master and NodeClock go to inspectors as they come from ranks).
  AttachHello = 10,  // inspector: uint32 protocol version, then its name (UTF-8); any run id
  RunInfo = 11,      // server: the run's description (JSON); its header carries the run id
  Command = 12,      // inspector: a stepping command (StepCommand)
  GateState = 13,    // server: where the ranks are stopped (GateStateMessage)
  Notice = 14,       // server: a line for the inspector's user (a refused command)
  Bye = 15,          // inspector: detaching (empty)
  Ended = 16,        // server, last: uint8 1 = every step ran, 0 = stopped early; then the run's error (UTF-8, may be empty)
  // A rank process and its launcher's gate relay (launch/gate_relay.h), on
  // their own socket: the launcher's StepGate is the run's, a worker's rank
  // waits there at each gate point.
  GateArrived = 17,  // rank: at a gate point (GateArrival)
  GateLedger = 18,   // rank, while it waits: its ledger changed (LedgerSnapshot as in GateArrival)
  GateGo = 19,       // relay: go on past the point (empty)
  GateAsk = 20,      // relay, to a rank waiting at a stop: send your ledger now (empty)
};
inline constexpr uint32_t kAttachProtocol = 3;  // 2: each message one frame; 3: gate points carry microbatch and slot
inline constexpr uint16_t kWireKindLast = 20;

// The attach protocol's kinds, sent as the run's (rank -1 allowed); the
// others name a rank.
constexpr bool isAttachKind(uint16_t kind) {
  return kind >= static_cast<uint16_t>(WireKind::AttachHello) && kind <= static_cast<uint16_t>(WireKind::Ended);
}
constexpr bool isAttachKind(WireKind kind) { return isAttachKind(static_cast<uint16_t>(kind)); }
// Those of a rank and its gate relay.
constexpr bool isGateKind(WireKind kind) { return kind >= WireKind::GateArrived && kind <= WireKind::GateAsk; }

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

enum class StepCommandOp : uint8_t { Pause = 1, Resume = 2, Step = 3, Stop = 4, Breakpoints = 5 };

struct StepCommand {
  StepCommandOp op = StepCommandOp::Pause;
  StepMode mode = StepMode::NextOp;  // Step's granularity
  std::vector<EventKind> kinds;      // Breakpoints: event kinds, and units or blocks
  std::vector<int> units;
};

// A served run's gate as the inspector mirrors it: the stop every rank waits
// at (stopped), or none; with each rank's ledger there.
struct GateStateMessage {
  uint64_t stop_id = 0;
  bool stopped = false;
  bool paused = false;
  std::vector<GatePoint> points;  // per rank, when stopped
  std::vector<int64_t> times_ns;
  std::vector<std::array<int64_t, kCategoryCount>> ledgers;  // current bytes by category
};

// A rank at a gate point of the launcher's gate: where, its clock there, how
// many events it had sent before (the relay files them before the rank counts
// as stopped) and its ledger (the views of a stop show it).
struct GateArrival {
  GatePoint point;
  int64_t now_ns = 0;        // the rank's run-clock time there
  uint64_t events_sent = 0;  // Events records sent so far, all batches
  std::array<int64_t, kCategoryCount> current{}, peak{};  // bytes by category
  int64_t model_state_peak = 0, total_peak = 0;           // bytes
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
  uint32_t protocol = 0;  // AttachHello
  uint64_t run_id = 0;    // RunInfo: the served run's
  StepCommand command;
  GateStateMessage gate;
  GateArrival arrival;  // GateArrived; GateLedger sets its ledger fields
};

// Header + payload of each kind, as the sender puts them on the wire.
std::vector<uint8_t> wireHeader(WireKind kind, int rank, uint32_t count, uint64_t run_id);
std::vector<uint8_t> lossPayload(int step, double loss);
std::vector<uint8_t> masterPayload(int64_t offset, std::span<const float> values);
std::vector<uint8_t> nodeClockPayload(const RunTrace::NodeClock& clock);
std::vector<uint8_t> attachHelloPayload(const std::string& name);
std::vector<uint8_t> commandPayload(const StepCommand& command);
std::vector<uint8_t> gateStatePayload(const GateStateMessage& gate);
std::vector<uint8_t> gateArrivalPayload(const GateArrival& arrival);
std::vector<uint8_t> gateLedgerPayload(const GateArrival& ledger);  // its ledger fields only

// Checks and decodes one message for run `run_id` of `ranks` ranks (an
// AttachHello or RunInfo may carry any run id: they are how it is learnt).
// Throws WireError naming the field and what is allowed.
WireMessage decodeWireMessage(std::span<const uint8_t> header, std::span<const uint8_t> payload, uint64_t run_id,
                              int ranks);

}  // namespace shardscope
