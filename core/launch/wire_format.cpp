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

std::vector<uint8_t> attachHelloPayload(const std::string& name) {
  std::vector<uint8_t> out;
  append(out, kAttachProtocol);
  out.insert(out.end(), name.begin(), name.end());
  return out;
}

std::vector<uint8_t> commandPayload(const StepCommand& c) {
  std::vector<uint8_t> out;
  append(out, static_cast<uint8_t>(c.op));
  append(out, static_cast<uint8_t>(c.mode));
  append(out, uint16_t{0});
  append(out, static_cast<uint32_t>(c.kinds.size()));
  append(out, static_cast<uint32_t>(c.units.size()));
  for (EventKind k : c.kinds) append(out, static_cast<uint8_t>(k));
  for (int u : c.units) append(out, static_cast<int32_t>(u));
  return out;
}

namespace {
// kind (1, then 3 zero), step, block, unit, microbatch (int32), 4 zero, the
// pipeline slot (int64): a pipeline of processes is stepped by its slots.
constexpr size_t kGatePointBytes = 32;
constexpr size_t kGateRankBytes = kGatePointBytes + 8 + kCategoryCount * sizeof(int64_t);  // point, time, ledger

void appendGatePoint(std::vector<uint8_t>& out, const GatePoint& p) {
  append(out, static_cast<uint8_t>(p.kind));
  out.insert(out.end(), 3, 0);
  append(out, static_cast<int32_t>(p.step));
  append(out, static_cast<int32_t>(p.block));
  append(out, static_cast<int32_t>(p.unit));
  append(out, static_cast<int32_t>(p.microbatch));
  append(out, uint32_t{0});
  append(out, p.slot);
}

// `what` names the message in errors ("gate state", "gate arrival").
GatePoint readGatePoint(std::span<const uint8_t> payload, size_t at, const char* what) {
  GatePoint p;
  const auto kind = readAt<uint8_t>(payload, at);
  if (kind >= kEventKindCount)
    throw WireError(std::string(what) + ": event kind " + std::to_string(kind) + " must be below " +
                    std::to_string(kEventKindCount));
  p.kind = static_cast<EventKind>(kind);
  if (payload[at + 1] != 0 || payload[at + 2] != 0 || payload[at + 3] != 0)
    throw WireError(std::string(what) + ": the 3 bytes after a point's kind are padding and must be 0");
  p.step = readAt<int32_t>(payload, at + 4);
  p.block = readAt<int32_t>(payload, at + 8);
  p.unit = readAt<int32_t>(payload, at + 12);
  p.microbatch = readAt<int32_t>(payload, at + 16);
  if (p.step < -1 || p.block < -1 || p.unit < -1 || p.microbatch < -1)
    throw WireError(std::string(what) + ": step, block, unit and microbatch must be -1 or more");
  if (readAt<uint32_t>(payload, at + 20) != 0)
    throw WireError(std::string(what) + ": the 4 bytes after a point's microbatch are padding and must be 0");
  p.slot = readAt<int64_t>(payload, at + 24);
  if (p.slot < -1) throw WireError(std::string(what) + ": a pipeline slot must be -1 (none) or more");
  return p;
}
}  // namespace

std::vector<uint8_t> gateStatePayload(const GateStateMessage& g) {
  std::vector<uint8_t> out;
  append(out, g.stop_id);
  append(out, static_cast<uint8_t>(g.stopped));
  append(out, static_cast<uint8_t>(g.paused));
  append(out, uint16_t{0});
  append(out, static_cast<uint32_t>(g.points.size()));
  for (size_t r = 0; r < g.points.size(); ++r) {
    appendGatePoint(out, g.points[r]);
    append(out, r < g.times_ns.size() ? g.times_ns[r] : int64_t{0});
    const std::array<int64_t, kCategoryCount> none{};
    append(out, r < g.ledgers.size() ? g.ledgers[r] : none);
  }
  return out;
}

namespace {
constexpr size_t kLedgerBytes = 2 * kCategoryCount * sizeof(int64_t) + 2 * sizeof(int64_t);
constexpr size_t kArrivalBytes = kGatePointBytes + 16 + kLedgerBytes;  // point, now_ns and events_sent, ledger

void appendLedger(std::vector<uint8_t>& out, const GateArrival& a) {
  append(out, a.current);
  append(out, a.peak);
  append(out, a.model_state_peak);
  append(out, a.total_peak);
}

void readLedger(std::span<const uint8_t> p, size_t at, GateArrival& a) {
  a.current = readAt<std::array<int64_t, kCategoryCount>>(p, at);
  a.peak = readAt<std::array<int64_t, kCategoryCount>>(p, at + kCategoryCount * sizeof(int64_t));
  a.model_state_peak = readAt<int64_t>(p, at + 2 * kCategoryCount * sizeof(int64_t));
  a.total_peak = readAt<int64_t>(p, at + 2 * kCategoryCount * sizeof(int64_t) + 8);
  for (size_t c = 0; c < kCategoryCount; ++c)
    if (a.current[c] < 0 || a.peak[c] < a.current[c])
      throw WireError("gate ledger: category " + std::to_string(c) + " must hold 0 or more bytes, at most its peak");
  if (a.model_state_peak < 0 || a.total_peak < 0) throw WireError("gate ledger: peaks must not be negative");
}

GateArrival decodeArrival(std::span<const uint8_t> payload) {
  if (payload.size() != kArrivalBytes)
    throw WireError("gate arrival: " + std::to_string(payload.size()) + " bytes, must be " + std::to_string(kArrivalBytes));
  GateArrival a;
  a.point = readGatePoint(payload, 0, "gate arrival");
  a.now_ns = readAt<int64_t>(payload, kGatePointBytes);
  a.events_sent = readAt<uint64_t>(payload, kGatePointBytes + 8);
  readLedger(payload, kGatePointBytes + 16, a);
  return a;
}

}  // namespace

std::vector<uint8_t> gateArrivalPayload(const GateArrival& a) {
  std::vector<uint8_t> out;
  out.reserve(kArrivalBytes);
  appendGatePoint(out, a.point);
  append(out, a.now_ns);
  append(out, a.events_sent);
  appendLedger(out, a);
  return out;
}

std::vector<uint8_t> gateLedgerPayload(const GateArrival& a) {
  std::vector<uint8_t> out;
  appendLedger(out, a);
  return out;
}

namespace {
StepCommand decodeCommand(std::span<const uint8_t> payload) {
  if (payload.size() < 12) throw WireError("command: " + std::to_string(payload.size()) + " bytes, at least 12 needed");
  StepCommand c;
  const auto op = readAt<uint8_t>(payload, 0);
  const auto mode = readAt<uint8_t>(payload, 1);
  if (op < 1 || op > 5) throw WireError("command: op " + std::to_string(op) + " must be 1..5 (pause, resume, step, stop, breakpoints)");
  c.op = static_cast<StepCommandOp>(op);
  if (mode > static_cast<uint8_t>(StepMode::NextAction))
    throw WireError("command: step mode " + std::to_string(mode) + " must be 0.." +
                    std::to_string(static_cast<int>(StepMode::NextAction)));
  c.mode = static_cast<StepMode>(mode);
  if (c.op == StepCommandOp::Step && (c.mode == StepMode::Run || c.mode == StepMode::Pause))
    throw WireError("command: a step's granularity must be an action, op, unit, phase or step");
  if (readAt<uint16_t>(payload, 2) != 0) throw WireError("command: bytes 2..3 are padding and must be 0");
  const auto kinds = readAt<uint32_t>(payload, 4);
  const auto units = readAt<uint32_t>(payload, 8);
  if (kinds > static_cast<uint32_t>(kEventKindCount) || units > 1u << 16 ||
      payload.size() != 12 + size_t{kinds} + 4 * size_t{units})
    throw WireError("command: " + std::to_string(kinds) + " kinds and " + std::to_string(units) +
                    " units do not match its " + std::to_string(payload.size()) + " bytes");
  for (uint32_t i = 0; i < kinds; ++i) {
    const auto k = readAt<uint8_t>(payload, 12 + i);
    if (k >= kEventKindCount) throw WireError("command: event kind " + std::to_string(k) + " must be below " + std::to_string(kEventKindCount));
    c.kinds.push_back(static_cast<EventKind>(k));
  }
  for (uint32_t i = 0; i < units; ++i) {
    const auto u = readAt<int32_t>(payload, 12 + kinds + 4 * size_t{i});
    if (u < 0) throw WireError("command: unit or block " + std::to_string(u) + " must not be negative");
    c.units.push_back(u);
  }
  return c;
}

GateStateMessage decodeGateState(std::span<const uint8_t> payload, int ranks) {
  if (payload.size() < 16) throw WireError("gate state: " + std::to_string(payload.size()) + " bytes, at least 16 needed");
  GateStateMessage g;
  g.stop_id = readAt<uint64_t>(payload, 0);
  const auto stopped = readAt<uint8_t>(payload, 8);
  const auto paused = readAt<uint8_t>(payload, 9);
  if (stopped > 1 || paused > 1) throw WireError("gate state: stopped and paused must be 0 or 1");
  g.stopped = stopped == 1;
  g.paused = paused == 1;
  if (readAt<uint16_t>(payload, 10) != 0) throw WireError("gate state: bytes 10..11 are padding and must be 0");
  const auto n = readAt<uint32_t>(payload, 12);
  if (n != 0 && n != static_cast<uint32_t>(ranks))
    throw WireError("gate state: " + std::to_string(n) + " ranks, must be 0 or the run's " + std::to_string(ranks));
  if (g.stopped && n == 0) throw WireError("gate state: a stop must say where every rank is");
  if (payload.size() != 16 + size_t{n} * kGateRankBytes)
    throw WireError("gate state: " + std::to_string(payload.size()) + " bytes do not match its " + std::to_string(n) + " ranks");
  for (uint32_t r = 0; r < n; ++r) {
    const size_t at = 16 + size_t{r} * kGateRankBytes;
    g.points.push_back(readGatePoint(payload, at, "gate state"));
    g.times_ns.push_back(readAt<int64_t>(payload, at + kGatePointBytes));
    g.ledgers.push_back(readAt<std::array<int64_t, kCategoryCount>>(payload, at + kGatePointBytes + 8));
  }
  return g;
}
}  // namespace

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
  const auto kind = static_cast<WireKind>(h.kind);
  const bool learns_run_id = kind == WireKind::AttachHello || kind == WireKind::RunInfo;
  if (h.run_id != run_id && !learns_run_id) throw WireError("header: run id belongs to another run");
  // Messages of a rank name it; those of the attach protocol are the run's (-1).
  const bool of_the_run = isAttachKind(h.kind);
  if (of_the_run ? h.rank < -1 || h.rank >= ranks : h.rank < 0 || h.rank >= ranks)
    throw WireError("header: rank " + std::to_string(h.rank) + " must be in " + (of_the_run ? "-1" : "0") + ".." +
                    std::to_string(ranks - 1));
  if (payload.size() > kWireMaxPayload)
    throw WireError("payload: " + std::to_string(payload.size()) + " bytes, more than the " +
                    std::to_string(kWireMaxPayload) + " allowed");
  WireMessage m;
  m.rank = h.rank;
  m.run_id = h.run_id;
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
    case WireKind::RunInfo:
    case WireKind::Notice:
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
    case WireKind::AttachHello:
      if (payload.size() < 4) throw WireError("attach hello: " + std::to_string(payload.size()) + " bytes, at least 4 needed");
      m.protocol = readAt<uint32_t>(payload, 0);
      m.text.assign(reinterpret_cast<const char*>(payload.data()) + 4, payload.size() - 4);
      break;
    case WireKind::Command:
      m.command = decodeCommand(payload);
      break;
    case WireKind::GateState:
      m.gate = decodeGateState(payload, ranks);
      break;
    case WireKind::Bye:
      expect(0, "bye");
      break;
    case WireKind::Ended:
      if (payload.empty()) throw WireError("ended: the payload needs its outcome byte");
      if (payload[0] > 1) throw WireError("ended: outcome must be 0 (stopped) or 1 (finished)");
      m.finished = payload[0] == 1;
      m.text.assign(reinterpret_cast<const char*>(payload.data()) + 1, payload.size() - 1);
      break;
    case WireKind::GateArrived:
      m.arrival = decodeArrival(payload);
      break;
    case WireKind::GateLedger:
      expect(kLedgerBytes, "gate ledger");
      readLedger(payload, 0, m.arrival);
      break;
    case WireKind::GateGo:
      expect(0, "gate go");
      break;
    case WireKind::GateAsk:
      expect(0, "gate ask");
      break;
    default:
      throw WireError("header: kind " + kindText(h.kind) + " must be 1.." + std::to_string(kWireKindLast) +
                      " (hello, events, loss, result, master, failed, done, died, node clock, attach hello, run info, "
                      "command, gate state, notice, bye, ended, gate arrived, gate ledger, gate go, gate ask)");
  }
  m.kind = static_cast<WireKind>(h.kind);
  return m;
}

}  // namespace shardscope
