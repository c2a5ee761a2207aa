#include "attach/run_server.h"

#include <zmq.hpp>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <set>

#include "attach/curve_keys.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/thread_start.h"
#include "config/config_json.h"
#include "launch/rank_result_json.h"
#include "launch/wire_format.h"

namespace shardscope {

// Named, not anonymous: RunServer::Impl holds these.
namespace serve_detail {
using ServeClock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kServePoll{10};
constexpr std::chrono::milliseconds kServeBusyPoll{1};  // catching an inspector up: its socket frees up fast
constexpr std::chrono::seconds kRefusalLogEvery{10};
constexpr size_t kMasterChunk = size_t{4} << 20;  // floats per message (16 MiB)

struct OutMessage {
  std::vector<uint8_t> header, payload;
};

OutMessage outMessage(WireKind kind, int rank, uint32_t count, uint64_t run_id, std::vector<uint8_t> payload) {
  return {wireHeader(kind, rank, count, run_id), std::move(payload)};
}

OutMessage textMessage(WireKind kind, int rank, const std::string& text, uint64_t run_id) {
  return outMessage(kind, rank, static_cast<uint32_t>(text.size()), run_id, {text.begin(), text.end()});
}

struct Inspector {
  std::string id;  // ZeroMQ routing id
  std::string name;
  std::vector<size_t> cursors;  // per rank: events sent
  int losses_sent = 0;          // steps
  uint64_t gate_key = UINT64_MAX;
  std::vector<std::array<int64_t, kCategoryCount>> gate_ledgers;  // as last sent
  std::deque<OutMessage> queue;  // produced, not yet taken by the socket
  size_t end_sent = 0;           // of the ending's messages
  bool done = false;             // went away (the socket no longer routes to it)
};
}  // namespace serve_detail

using namespace serve_detail;

struct RunServer::Impl {
  zmq::context_t context;
  zmq::socket_t router{context, zmq::socket_type::router};
  std::optional<zmq::socket_t> zap;      // secured: ZeroMQ's authentication handler
  std::optional<zmq::socket_t> monitor;  // secured: handshakes that failed
  uint64_t run_id = 0;
  std::set<std::string> authorized;  // Z85 public keys
  std::map<std::string, std::string> authorized_names;
  std::map<std::string, ServeClock::time_point> refusals_logged;
  std::map<std::string, Inspector> inspectors;
  std::vector<int> representatives;  // ranks whose logs hold events
  std::vector<Event> scratch;

  std::mutex mutex;
  std::condition_variable ended_cv;
  bool ending = false;  // under mutex
  std::vector<OutMessage> ending_messages;
  std::optional<ServeClock::time_point> linger_until;
  bool all_served = false;  // under mutex
  bool attached_once = false;  // under mutex: an inspector said hello
};

RunServer::RunServer(Run& run, ServeOptions options)
    : m_run(run), m_options(std::move(options)), m_impl(std::make_unique<Impl>()) {
  Impl& s = *m_impl;
  const RunConfig& config = run.config();
  m_secured = m_options.address.secured;
  // Every address is served with CURVE, loopback too: on a shared machine any
  // local account could otherwise watch and stop the run.
  if (m_options.config_dir.empty()) m_options.config_dir = shardscopeConfigDir();
  // Threads or processes: the run's gate is in this process (a processes
  // run's ranks pass it through the launcher's gate relay).
  m_steppable = true;
  std::random_device entropy;
  s.run_id = (static_cast<uint64_t>(entropy()) << 32) ^ entropy();
  for (int r = 0; r < config.ranks; ++r)
    if (run.representativeOf(r) == r) s.representatives.push_back(r);
  s.router.set(zmq::sockopt::router_mandatory, 1);  // a full queue says so instead of dropping
  s.router.set(zmq::sockopt::sndhwm, kSendQueue);
  s.router.set(zmq::sockopt::maxmsgsize, kMaxInbound);
  s.router.set(zmq::sockopt::linger, 0);
  // An inspector that stops answering (gone without a reset) is dropped.
  s.router.set(zmq::sockopt::heartbeat_ivl, 1000);
  s.router.set(zmq::sockopt::heartbeat_timeout, 5000);
  {
    const CurveKeyPair identity = loadOrMakeIdentity(m_options.config_dir);
    m_publicKey = identity.public_key;
    for (const AuthorizedKey& k : loadAuthorizedKeys(m_options.config_dir)) {
      s.authorized.insert(k.key);
      s.authorized_names[k.key] = k.name;
    }
    m_authorized = s.authorized.size();
    // The serving user's own identity: the same user attaches with no setup.
    s.authorized.insert(identity.public_key);
    if (s.authorized_names[identity.public_key].empty()) s.authorized_names[identity.public_key] = "this user";
    // The handler must be bound before the socket that uses it.
    s.zap.emplace(s.context, zmq::socket_type::rep);
    s.zap->bind("inproc://zeromq.zap.01");
    s.router.set(zmq::sockopt::curve_server, 1);
    s.router.set(zmq::sockopt::curve_secretkey, identity.secret_key);
    s.router.set(zmq::sockopt::zap_domain, "shardscope");
    const std::string monitor_endpoint = "inproc://shardscope-serve-monitor";
    if (zmq_socket_monitor(s.router.handle(), monitor_endpoint.c_str(),
                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) != 0)
      throw RunError(std::string("--serve: cannot watch the socket's handshakes: ") + zmq_strerror(zmq_errno()));
    s.monitor.emplace(s.context, zmq::socket_type::pair);
    s.monitor->connect(monitor_endpoint);
  }
  try {
    s.router.bind(m_options.address.endpoint());
  } catch (const zmq::error_t& e) {
    throw RunError("--serve " + m_options.address.endpoint() + ": cannot listen there (" + e.what() + ")");
  }
  m_endpoint = s.router.get(zmq::sockopt::last_endpoint);
}

RunServer::~RunServer() {
  m_stop.store(true);
  if (m_thread.joinable()) m_thread.join();
  m_impl->router.set(zmq::sockopt::linger, 1000);  // what inspectors were sent reaches them
}

void RunServer::start() {
  m_thread = startThread("the run's server", [this] { serve(); });
}

bool RunServer::waitForInspector(std::chrono::milliseconds limit) {
  Impl& s = *m_impl;
  std::unique_lock lock(s.mutex);
  return s.ended_cv.wait_for(lock, limit, [&] { return s.attached_once; });
}

void RunServer::finish(const RunResult* result, const std::string& error) {
  Impl& s = *m_impl;
  std::vector<OutMessage> end;
  if (result) {
    for (const RankResult& r : result->ranks)
      end.push_back(textMessage(WireKind::Result, r.rank, rankResultJson(r, result->padding_elements), s.run_id));
    const std::vector<float>& master = result->final_master;
    for (size_t i = 0; i < master.size(); i += kMasterChunk) {
      const size_t n = std::min(kMasterChunk, master.size() - i);
      end.push_back(outMessage(WireKind::Master, 0, static_cast<uint32_t>(n), s.run_id,
                               masterPayload(static_cast<int64_t>(i), {master.data() + i, n})));
    }
  }
  for (const RunTrace::NodeClock& c : m_run.nodeClocks())  // not trace(): that sorts every event
    end.push_back(outMessage(WireKind::NodeClock, c.first_rank, 0, s.run_id, nodeClockPayload(c)));
  const bool all_steps = result && static_cast<int>(result->losses.size()) == m_run.config().steps;
  const uint8_t finished = all_steps && !result->interrupted && error.empty() ? 1 : 0;
  std::vector<uint8_t> ended{finished};
  ended.insert(ended.end(), error.begin(), error.end());
  end.push_back(outMessage(WireKind::Ended, -1, static_cast<uint32_t>(ended.size()), s.run_id, std::move(ended)));
  std::unique_lock lock(s.mutex);
  s.ending_messages = std::move(end);
  s.linger_until = ServeClock::now() + m_options.end_linger;
  s.ending = true;
  s.ended_cv.wait(lock, [&] { return s.all_served || !m_thread.joinable(); });
}

void RunServer::serve() {
  Impl& s = *m_impl;
  spdlog::logger& log = logger(LogComponent::Engine);
  const RunConfig& config = m_run.config();
  const int ranks = config.ranks;

  // One frame a message (header, then payload): see attach_client.cpp, receive().
  std::vector<uint8_t> frame;
  const auto trySend = [&](Inspector& in, const OutMessage& m) {
    try {
      if (!s.router.send(zmq::buffer(in.id), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return false;
    } catch (const zmq::error_t&) {  // EHOSTUNREACH: it went away
      in.done = true;
      in.queue.clear();
      return false;
    }
    frame.assign(m.header.begin(), m.header.end());
    frame.insert(frame.end(), m.payload.begin(), m.payload.end());
    s.router.send(zmq::buffer(frame), zmq::send_flags::none);
    return true;
  };
  const auto flush = [&](Inspector& in) {
    while (!in.queue.empty() && trySend(in, in.queue.front())) in.queue.pop_front();
    return in.queue.empty();
  };

  nlohmann::ordered_json info;
  info["protocol"] = kAttachProtocol;
  info["config"] = configToJson(config);
  info["launch"] = launchName(config.launch);
  info["steppable"] = m_steppable;
  info["events_kept_per_rank"] = EventLog::kChunkEvents * EventLog::kMaxChunks;
  const std::string info_text = info.dump();

  const auto handleZap = [&] {
    std::vector<zmq::message_t> frames;
    while (true) {
      zmq::message_t f;
      if (!s.zap->recv(f, zmq::recv_flags::dontwait)) return false;
      frames.push_back(std::move(f));
      while (s.zap->get(zmq::sockopt::rcvmore)) {
        zmq::message_t more;
        (void)s.zap->recv(more, zmq::recv_flags::none);
        frames.push_back(std::move(more));
      }
      break;
    }
    // version, request id, domain, address, routing id, mechanism, credentials...
    std::string status = "400", text = "no CURVE key";
    std::string address = frames.size() > 3 ? frames[3].to_string() : "?";
    std::string key_text;
    if (frames.size() >= 7 && frames[5].to_string() == "CURVE" && frames[6].size() == 32) {
      char z85[41];
      zmq_z85_encode(z85, frames[6].data<uint8_t>(), 32);
      key_text = z85;
      if (!s.authorized.count(key_text)) {
        // Keys authorized since the run started count too (authorize, then attach).
        try {
          for (const AuthorizedKey& k : loadAuthorizedKeys(m_options.config_dir)) {
            s.authorized.insert(k.key);
            s.authorized_names[k.key] = k.name;
          }
        } catch (const std::exception& e) {
          SPDLOG_LOGGER_WARN(&log, "serve: {}", e.what());
        }
      }
      if (s.authorized.count(key_text)) status = "200", text = "OK";
      else text = "key not authorized";
    }
    if (status == "200") {
      SPDLOG_LOGGER_INFO(&log, "serve: accepted an inspector at {} (key {}{})", address, key_text,
                         s.authorized_names[key_text].empty() ? "" : ", " + s.authorized_names[key_text]);
    } else {
      const std::string who = address + " " + key_text;
      const auto now = ServeClock::now();
      auto it = s.refusals_logged.find(who);
      if (it == s.refusals_logged.end() || now - it->second > kRefusalLogEvery) {
        s.refusals_logged[who] = now;
        SPDLOG_LOGGER_WARN(&log, "serve: refused an inspector at {}: its key {} is not in {} (authorize it there with "
                           "`shardscope-cli keys --authorize '{}'`)",
                           address, key_text.empty() ? "(none)" : key_text,
                           authorizedKeysPath(m_options.config_dir).string(), key_text.empty() ? "KEY" : key_text);
      }
    }
    const std::string request_id = frames.size() > 1 ? frames[1].to_string() : "";
    s.zap->send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
    s.zap->send(zmq::buffer(request_id), zmq::send_flags::sndmore);
    s.zap->send(zmq::buffer(status), zmq::send_flags::sndmore);
    s.zap->send(zmq::buffer(text), zmq::send_flags::sndmore);
    s.zap->send(zmq::str_buffer(""), zmq::send_flags::sndmore);
    s.zap->send(zmq::str_buffer(""), zmq::send_flags::none);
    return true;
  };

  const auto handleMonitor = [&] {
    zmq::message_t event, endpoint;
    if (!s.monitor->recv(event, zmq::recv_flags::dontwait)) return false;
    if (s.monitor->get(zmq::sockopt::rcvmore)) (void)s.monitor->recv(endpoint, zmq::recv_flags::none);
    const std::string where = endpoint.to_string();
    const auto now = ServeClock::now();
    auto it = s.refusals_logged.find(where);
    if (it == s.refusals_logged.end() || now - it->second > kRefusalLogEvery) {
      s.refusals_logged[where] = now;
      SPDLOG_LOGGER_WARN(&log, "serve: refused a connection on {}: its handshake failed (an inspector without CURVE, "
                         "or without this server's key)", where);
    }
    return true;
  };

  const auto apply = [&](Inspector& in, const StepCommand& c) {
    if (c.op == StepCommandOp::Stop) {
      SPDLOG_LOGGER_WARN(&log, "serve: inspector '{}' stopped the run", in.name);
      {
        std::lock_guard lock(m_stoppedByMutex);
        if (m_stoppedBy.empty()) m_stoppedBy = "'" + in.name + "'";
      }
      m_run.cancel();
      return;
    }
    StepGate& gate = m_run.gate();
    switch (c.op) {
      case StepCommandOp::Pause: gate.pause(); break;
      case StepCommandOp::Resume: gate.resume(); break;
      case StepCommandOp::Step: gate.step(c.mode); break;
      case StepCommandOp::Breakpoints:
        gate.setBreakpoints({c.kinds.begin(), c.kinds.end()}, {c.units.begin(), c.units.end()});
        break;
      case StepCommandOp::Stop: break;
    }
  };

  const auto receive = [&] {
    zmq::message_t id;
    if (!s.router.recv(id, zmq::recv_flags::dontwait)) return false;
    std::vector<zmq::message_t> parts;
    while (s.router.get(zmq::sockopt::rcvmore)) {
      zmq::message_t part;
      (void)s.router.recv(part, zmq::recv_flags::none);
      parts.push_back(std::move(part));
    }
    const std::string who = id.to_string();
    try {
      if (parts.size() != 2) throw WireError("a message must have two parts, it had " + std::to_string(parts.size()));
      const WireMessage m = decodeWireMessage({parts[0].data<uint8_t>(), parts[0].size()},
                                              {parts[1].data<uint8_t>(), parts[1].size()}, s.run_id, ranks);
      auto it = s.inspectors.find(who);
      if (m.kind == WireKind::AttachHello) {
        if (m.protocol != kAttachProtocol)
          throw WireError("attach protocol " + std::to_string(m.protocol) + ", this run speaks " +
                          std::to_string(kAttachProtocol));
        if (it == s.inspectors.end() && static_cast<int>(s.inspectors.size()) >= kMaxInspectors) {
          // Told why, not left to time out as if the run had gone. The
          // refusal carries run id 0: this inspector was never told the run's.
          Inspector refused;
          refused.id = who;
          trySend(refused, textMessage(WireKind::Notice, -1,
                                       std::to_string(kMaxInspectors) + " inspectors are attached to this run, the "
                                       "most it serves; detach one (or wait for one to leave) and attach again",
                                       0));
          throw WireError("already " + std::to_string(kMaxInspectors) + " inspectors attached");
        }
        Inspector in;  // a second hello starts over: catch-up from the start
        in.id = who;
        in.name = m.text.substr(0, 200);
        in.cursors.assign(static_cast<size_t>(ranks), 0);
        in.queue.push_back(textMessage(WireKind::RunInfo, -1, info_text, s.run_id));
        s.inspectors[who] = std::move(in);
        SPDLOG_LOGGER_INFO(&log, "serve: inspector '{}' attached", s.inspectors[who].name);
        {
          std::lock_guard lock(s.mutex);
          s.attached_once = true;
        }
        s.ended_cv.notify_all();
        return true;
      }
      if (it == s.inspectors.end()) throw WireError("it has not said hello");
      if (m.kind == WireKind::Bye) {
        SPDLOG_LOGGER_INFO(&log, "serve: inspector '{}' detached", it->second.name);
        s.inspectors.erase(it);
      } else if (m.kind == WireKind::Command) {
        apply(it->second, m.command);
      } else {
        throw WireError("kind " + std::to_string(static_cast<int>(m.kind)) + " is not an inspector's message");
      }
    } catch (const WireError& e) {
      SPDLOG_LOGGER_WARN(&log, "serve: dropped a message from an inspector: {}", e.what());
    }
    return true;
  };

  // What an inspector gets next, up to kSendQueue messages: events (oldest
  // first, per rank), losses, the gate's state, then, once every event of an
  // ended run is out, the ending.
  const auto produce = [&](Inspector& in, bool ending) {
    bool events_left = false;
    for (int r : s.representatives) {
      size_t& cursor = in.cursors[static_cast<size_t>(r)];
      while (static_cast<int>(in.queue.size()) < kSendQueue) {
        s.scratch.clear();
        cursor = m_run.eventLog(r).readFrom(cursor, s.scratch, kBatchEvents);
        if (s.scratch.empty()) break;
        std::vector<uint8_t> payload(s.scratch.size() * sizeof(Event));
        std::memcpy(payload.data(), s.scratch.data(), payload.size());
        in.queue.push_back(outMessage(WireKind::Events, r, static_cast<uint32_t>(s.scratch.size()), s.run_id,
                                      std::move(payload)));
      }
      events_left |= cursor < m_run.eventLog(r).publishedCount();
    }
    for (const int done = m_run.stepsDone(); in.losses_sent < done; ++in.losses_sent) {
      const std::vector<double> losses = m_run.rankLosses(in.losses_sent);
      for (int r : s.representatives)
        in.queue.push_back(outMessage(WireKind::Loss, r, 0, s.run_id, lossPayload(in.losses_sent, losses[static_cast<size_t>(r)])));
    }
    if (m_steppable) {
      GateStateMessage g;
      g.stopped = m_run.gate().stopped(&g.points, &g.stop_id, &g.times_ns);
      g.paused = m_run.gate().paused();
      if (!g.stopped) g.points.clear(), g.times_ns.clear();
      const uint64_t key = g.stop_id * 4 + (g.stopped ? 2 : 0) + (g.paused ? 1 : 0);
      // At a stop the other streams may still finish ops (a prefetched
      // gather): the ledgers are sent again whenever they change.
      if (g.stopped)
        for (int r = 0; r < ranks; ++r) g.ledgers.push_back(m_run.ledger(r).current);
      if (key != in.gate_key || g.ledgers != in.gate_ledgers) {
        in.gate_key = key;
        in.gate_ledgers = g.ledgers;
        const std::vector<uint8_t> payload = gateStatePayload(g);
        in.queue.push_back(outMessage(WireKind::GateState, -1, static_cast<uint32_t>(payload.size()), s.run_id, payload));
      }
    }
    if (ending && !events_left && static_cast<int>(in.queue.size()) < kSendQueue) {
      for (; in.end_sent < s.ending_messages.size(); ++in.end_sent) in.queue.push_back(s.ending_messages[in.end_sent]);
    }
  };

  bool busy = false;  // an inspector still has messages to take: come back at once
  while (!m_stop.load()) {
    std::vector<zmq::pollitem_t> items{{s.router.handle(), 0, ZMQ_POLLIN, 0}};
    if (s.zap) items.push_back({s.zap->handle(), 0, ZMQ_POLLIN, 0});
    if (s.monitor) items.push_back({s.monitor->handle(), 0, ZMQ_POLLIN, 0});
    zmq::poll(items.data(), items.size(), busy ? kServeBusyPoll : kServePoll);
    busy = false;
    while (s.zap && handleZap()) {
    }
    while (s.monitor && handleMonitor()) {
    }
    while (receive()) {
    }
    bool ending;
    {
      std::lock_guard lock(s.mutex);
      ending = s.ending;
    }
    for (auto it = s.inspectors.begin(); it != s.inspectors.end();) {
      Inspector& in = it->second;
      if (!in.done && flush(in)) {
        produce(in, ending);
        flush(in);
      }
      busy |= !in.done && !in.queue.empty();
      // Gone (the socket no longer knows it): nothing more to serve.
      if (in.done) it = s.inspectors.erase(it);
      else ++it;
    }
    // Served: every inspector said bye after the Ended message (or went away).
    if (ending && (s.inspectors.empty() || ServeClock::now() >= *s.linger_until)) {
      std::lock_guard lock(s.mutex);
      s.all_served = true;
      s.ended_cv.notify_all();
      break;
    }
  }
  std::lock_guard lock(s.mutex);
  s.all_served = true;
  s.ended_cv.notify_all();
}

}  // namespace shardscope
