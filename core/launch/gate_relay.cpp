#include "launch/gate_relay.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <zmq.hpp>

#include "common/log.h"
#include "common/thread_start.h"
#include "launch/wire_format.h"
#include "launch/wire_socket.h"

namespace shardscope {

namespace {
constexpr auto kRelayPoll = std::chrono::milliseconds(20);
// A rank's events reach the collector on another socket: waited for this long
// at most before the stop shows without them.
constexpr auto kRelayEventsWait = std::chrono::milliseconds(2000);
// The ranks waiting at a stop answer an ask within one poll; past this the stop shows the ledgers it has.
constexpr auto kRelayAskWait = std::chrono::milliseconds(200);

LedgerSnapshot relayedLedger(const GateArrival& a) {
  LedgerSnapshot s;
  s.current = a.current;
  s.peak = a.peak;
  s.model_state_peak = a.model_state_peak;
  s.total_peak = a.total_peak;
  return s;
}
}  // namespace

struct GateRelay::Pending {
  std::optional<GateArrival> arrival;  // waiting to be passed
  std::string routing_id;              // the rank's socket
};

struct GateRelay::Sockets {
  zmq::context_t context;
  std::unique_ptr<RunKeyAuthenticator> auth;  // before the sockets: closed after them
  zmq::socket_t router{context, zmq::socket_type::router};
  zmq::socket_t wake{context, zmq::socket_type::pull};  // rank threads: "rank r may go"
};

GateRelay::GateRelay(RemoteRankFeed& feed, const std::string& node_addr, uint64_t run_id, const RunKeys& keys)
    : m_feed(feed), m_runId(run_id), m_sockets(std::make_unique<Sockets>()),
      m_filed(static_cast<size_t>(feed.config().ranks)) {
  const int ranks = feed.config().ranks;
  m_sockets->auth = std::make_unique<RunKeyAuthenticator>(m_sockets->context, keys.client_public, "the gate relay");
  m_sockets->router.set(zmq::sockopt::linger, 0);
  secureAsRunServer(m_sockets->router, keys);
  m_sockets->router.bind("tcp://" + node_addr + ":*");
  m_endpoint = m_sockets->router.get(zmq::sockopt::last_endpoint);
  m_wakeEndpoint = "inproc://shardscope-gate-relay-" + std::to_string(reinterpret_cast<uintptr_t>(this));
  m_sockets->wake.bind(m_wakeEndpoint);
  for (int r = 0; r < ranks; ++r) m_pending.push_back(std::make_unique<Pending>());
  m_asked.assign(static_cast<size_t>(ranks), false);
  m_poller = startThread("the gate relay", [this] { poll(); });
  for (int r = 0; r < ranks; ++r) {
    ++m_running;
    try {
      m_ranks.push_back(startThread("the gate relay", [this, r] { rankMain(r); }));
    } catch (...) {
      --m_running;
      m_stop.store(true);
      m_cv.notify_all();
      for (std::thread& t : m_ranks) t.join();
      m_poller.join();
      throw;
    }
  }
  SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Engine), "gate relay at {}", m_endpoint);
}

GateRelay::~GateRelay() {
  // The ranks are gone: a thread still at a stop (a controller may pause
  // again meanwhile) is released until every one has returned.
  m_stop.store(true);
  m_released.store(true);
  while (m_running.load() > 0) {
    m_feed.gate().setBreakpoints({}, {});
    m_feed.gate().resume();
    m_cv.notify_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (std::thread& t : m_ranks) t.join();
  m_poller.join();
}

void GateRelay::releaseAll() {
  if (m_released.exchange(true)) return;
  // Breakpoints off too: a point between the check and pass() must not stop.
  m_feed.gate().setBreakpoints({}, {});
  m_feed.gate().resume();  // ranks blocked at a stop return from pass()
  m_cv.notify_all();
}

void GateRelay::poll() {
  Sockets& s = *m_sockets;
  const int ranks = m_feed.config().ranks;
  while (!m_stop.load()) {
    zmq::pollitem_t items[] = {{s.router.handle(), 0, ZMQ_POLLIN, 0}, {s.wake.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, kRelayPoll);
    const auto go = [&](int rank, const std::string& id) {
      // Going away: the ranks are gone, and a go now would let a rank past
      // a point no controller sees (the threads are released only to return).
      if (m_stop.load()) return;
      const std::vector<uint8_t> header = wireHeader(WireKind::GateGo, rank, 0, m_runId);
      // A rank that is gone has no socket: ROUTER drops what is sent to it.
      s.router.send(zmq::buffer(id), zmq::send_flags::sndmore);
      s.router.send(zmq::buffer(header), zmq::send_flags::sndmore);
      s.router.send(zmq::const_buffer(nullptr, 0), zmq::send_flags::none);
    };
    const auto ask = [&] {  // every rank the last arrival waits for
      std::vector<std::pair<int, std::string>> asked;
      {
        std::lock_guard lock(m_mutex);
        for (int r = 0; r < ranks; ++r)
          if (m_asked[static_cast<size_t>(r)]) asked.push_back({r, m_pending[static_cast<size_t>(r)]->routing_id});
      }
      for (const auto& [r, id] : asked) {
        const std::vector<uint8_t> header = wireHeader(WireKind::GateAsk, r, 0, m_runId);
        s.router.send(zmq::buffer(id), zmq::send_flags::sndmore);
        s.router.send(zmq::buffer(header), zmq::send_flags::sndmore);
        s.router.send(zmq::const_buffer(nullptr, 0), zmq::send_flags::none);
      }
    };
    // A rank thread's go (the rank number, to that rank's socket), or -1: ask.
    zmq::message_t wake;
    while (s.wake.recv(wake, zmq::recv_flags::dontwait)) {
      int rank = -2;
      if (wake.size() == sizeof rank) std::memcpy(&rank, wake.data(), sizeof rank);
      if (rank == -1) ask();
      if (rank < 0 || rank >= ranks) continue;
      std::string id;
      {
        std::lock_guard lock(m_mutex);
        id = m_pending[static_cast<size_t>(rank)]->routing_id;
      }
      go(rank, id);
    }
    while (true) {
      zmq::message_t id, header, payload;
      if (!s.router.recv(id, zmq::recv_flags::dontwait)) break;
      size_t parts = 1;
      if (s.router.get(zmq::sockopt::rcvmore)) parts = 1 + receiveWireParts(s.router, header, payload);
      try {
        if (parts != 3) throw WireError("a rank's gate message must have two parts, it had " + std::to_string(parts - 1));
        const WireMessage m = decodeWireMessage({header.data<uint8_t>(), header.size()},
                                                {payload.data<uint8_t>(), payload.size()}, m_runId, ranks);
        if (m.kind == WireKind::GateLedger) {
          m_feed.ledger(m.rank, relayedLedger(m.arrival));
          bool answered = false;
          {
            std::lock_guard lock(m_mutex);
            answered = m_asked[static_cast<size_t>(m.rank)];
            m_asked[static_cast<size_t>(m.rank)] = false;
          }
          if (answered) m_cv.notify_all();
        } else if (m.kind == WireKind::GateArrived) {
          m_feed.ledger(m.rank, relayedLedger(m.arrival));
          std::string routing_id(id.data<char>(), id.size());
          // Most points are no stop: passed here, the go goes at once.
          bool free = false;
          {
            std::lock_guard lock(m_mutex);
            Pending& p = *m_pending[static_cast<size_t>(m.rank)];
            if (p.arrival) throw WireError("rank " + std::to_string(m.rank) + " arrived twice without a go");
            p.routing_id = routing_id;
            free = m_released.load() || m_feed.gate().passIfFree(m.rank, m.arrival.point, m.arrival.now_ns);
            if (!free) p.arrival = m.arrival;  // a stop: its thread passes it
          }
          if (free) go(m.rank, routing_id);
          else m_cv.notify_all();
        } else {
          throw WireError("kind " + std::to_string(static_cast<int>(m.kind)) + " is not a rank's gate message");
        }
      } catch (const std::exception& e) {
        SPDLOG_LOGGER_WARN(&logger(LogComponent::Engine), "gate relay: dropped a message from a rank process: {}",
                           e.what());
      }
    }
  }
}

void GateRelay::rankMain(int rank) {
  struct Running {
    std::atomic<int>& n;
    ~Running() { --n; }
  } running{m_running};
  zmq::socket_t wake(m_sockets->context, zmq::socket_type::push);
  wake.set(zmq::sockopt::linger, 0);
  wake.connect(m_wakeEndpoint);
  StepGate& gate = m_feed.gate();
  const RunControl& control = m_feed.control();
  const int ranks = m_feed.config().ranks;
  Pending& pending = *m_pending[static_cast<size_t>(rank)];
  while (true) {
    GateArrival arrival;
    {
      std::unique_lock lock(m_mutex);
      m_cv.wait(lock, [&] { return m_stop.load() || pending.arrival.has_value(); });
      if (m_stop.load()) return;
      arrival = *pending.arrival;
    }
    if (!m_released.load() && !control.isAborted()) {
      // At a stop, the rank's events up to the point are filed first.
      bool settled = false;
      const auto settle = [&] {
        const auto until = std::chrono::steady_clock::now() + kRelayEventsWait;
        while (m_filed[static_cast<size_t>(rank)].load() < arrival.events_sent && !control.isAborted() &&
               !m_released.load() && std::chrono::steady_clock::now() < until)
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        // The last to arrive: the others' other streams may have changed
        // their ledgers since they arrived (a prefetch landing); ask.
        std::unique_lock lock(m_mutex);
        settled = true;
        if (++m_settled != ranks) return;
        for (int r = 0; r < ranks; ++r) m_asked[static_cast<size_t>(r)] = r != rank;
        lock.unlock();
        const int code = -1;
        wake.send(zmq::buffer(&code, sizeof code), zmq::send_flags::none);
        lock.lock();
        m_cv.wait_for(lock, kRelayAskWait, [&] {
          return m_stop.load() || m_released.load() ||
                 std::none_of(m_asked.begin(), m_asked.end(), [](bool b) { return b; });
        });
        std::fill(m_asked.begin(), m_asked.end(), false);
      };
      const auto unsettle = [&] {
        std::lock_guard lock(m_mutex);
        if (settled) --m_settled;
      };
      try {
        gate.pass(rank, arrival.point, arrival.now_ns, settle);
        unsettle();
      } catch (const RunAborted&) {
        // The run is stopping: the rank is signalled and stops on its own; it gets no go.
        unsettle();
        std::lock_guard lock(m_mutex);
        pending.arrival.reset();
        continue;
      }
    }
    {
      std::lock_guard lock(m_mutex);
      pending.arrival.reset();
    }
    wake.send(zmq::buffer(&rank, sizeof rank), zmq::send_flags::none);
  }
}

}  // namespace shardscope
