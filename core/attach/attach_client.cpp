#include "attach/attach_client.h"

#include <unistd.h>
#include <zmq.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "attach/curve_keys.h"
#include "common/errors.h"
#include "common/log.h"
#include "config/config_json.h"
#include "launch/rank_result_json.h"
#include "launch/wire_format.h"
#include "launch/wire_socket.h"

namespace shardscope {

namespace {
constexpr std::chrono::milliseconds kAttachPoll{10};
// Every send is bounded: a DEALER with no live connection (the server went
// away) would otherwise block in send forever, and so would Ctrl-C's detach.
constexpr int kAttachSendTimeoutMs = 2000;
// Heartbeats both ways: a server that stops answering (gone without a reset,
// frozen) is a lost connection after this long.
constexpr int kHeartbeatIvlMs = 1000, kHeartbeatTimeoutMs = 5000;

// One connection to a served run; the attached Run's thread owns it after attachToRun.
struct AttachConnection {
  zmq::context_t context;
  zmq::socket_t dealer{context, zmq::socket_type::dealer};
  zmq::socket_t monitor{context, zmq::socket_type::pair};
  std::string endpoint;
  uint64_t run_id = 0;
  int ranks = 0;

  // False when the server took nothing within the send timeout (it is gone).
  bool send(WireKind kind, uint32_t count, const std::vector<uint8_t>& payload,
            zmq::send_flags flags = zmq::send_flags::none) {
    if (!dealer.send(zmq::buffer(wireHeader(kind, -1, count, run_id)), zmq::send_flags::sndmore | flags)) return false;
    // The first part is queued, so the second is too (the pipe takes a whole message).
    return dealer.send(zmq::buffer(payload), flags).has_value();
  }
  void sendOrThrow(WireKind kind, uint32_t count, const std::vector<uint8_t>& payload) {
    if (!send(kind, count, payload))
      throw RunError("lost the connection to the run at " + endpoint + ": it took no message for " +
                     std::to_string(kAttachSendTimeoutMs / 1000) + " s");
  }

  // The next message, if one came; a malformed one is dropped with a log line.
  // The server sends each as one frame (header then payload): a multipart
  // message cut off by the server's death trips an assertion in libzmq 4.3's
  // receiving side (fq.cpp: !_more) that aborts the inspector.
  std::optional<WireMessage> receive(zmq::message_t& header, zmq::message_t& payload, int ranks_known) {
    const size_t parts = receiveWireParts(dealer, header, payload);
    if (parts == 0) return std::nullopt;
    try {
      if (parts != 1) throw WireError("a message must have one part, it had " + std::to_string(parts));
      if (header.size() < sizeof(WireHeader))
        throw WireError("a message of " + std::to_string(header.size()) + " bytes is shorter than its header");
      const uint8_t* bytes = header.data<uint8_t>();
      return decodeWireMessage({bytes, sizeof(WireHeader)},
                               {bytes + sizeof(WireHeader), header.size() - sizeof(WireHeader)}, run_id, ranks_known);
    } catch (const WireError& e) {
      SPDLOG_LOGGER_WARN(&logger(LogComponent::Engine), "attach: dropped a message from {}: {}", endpoint, e.what());
      WireMessage none;
      none.kind = WireKind::Bye;  // nothing to file
      return none;
    }
  }

  // A failed handshake or a lost connection, as the monitor reports it ("" if none).
  std::string connectionProblem(bool own_key) {
    zmq::message_t event, where;
    if (!monitor.recv(event, zmq::recv_flags::dontwait)) return {};
    if (monitor.get(zmq::sockopt::rcvmore)) (void)monitor.recv(where, zmq::recv_flags::none);
    uint16_t id = 0;
    uint32_t value = 0;
    if (event.size() >= 6) {
      std::memcpy(&id, event.data(), 2);
      std::memcpy(&value, static_cast<const char*>(event.data()) + 2, 4);
    }
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
      return "the run at " + endpoint + " refused this inspector (status " + std::to_string(value) +
             "): its key is not authorized there";
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL || id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
      return "the handshake with " + endpoint + " failed" +
             (own_key ? std::string(": the run there is not served under your identity (another account's, or "
                                    "another config directory): ask its owner for --server-key (`shardscope-cli "
                                    "keys`) and to authorize your key")
                      : std::string(": is --server-key the key `shardscope-cli keys` prints on the serving machine?"));
    if (id == ZMQ_EVENT_DISCONNECTED) return "lost the connection to the run at " + endpoint;
    return {};
  }
};

std::string refusalHint(const std::filesystem::path& config_dir) {
  try {
    return " (on the serving machine: shardscope-cli keys --authorize '" +
           loadOrMakeIdentity(config_dir).public_key + "')";
  } catch (const std::exception&) {
    return "";
  }
}
}  // namespace

std::string defaultInspectorName() {
  const char* user = std::getenv("USER");
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return std::string(user && *user ? user : "someone") + "@" + host + " (pid " + std::to_string(getpid()) + ")";
}

AttachedRun attachToRun(const AttachOptions& options) {
  auto c = std::make_shared<AttachConnection>();
  c->endpoint = options.address.endpoint();
  c->dealer.set(zmq::sockopt::linger, 200);
  c->dealer.set(zmq::sockopt::sndtimeo, kAttachSendTimeoutMs);
  c->dealer.set(zmq::sockopt::rcvtimeo, kAttachSendTimeoutMs);  // reads are non-blocking; a bound all the same
  c->dealer.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kWireMaxPayload + sizeof(WireHeader)));
  c->dealer.set(zmq::sockopt::rcvhwm, 0);  // what the server sent is kept: it bounds itself
  c->dealer.set(zmq::sockopt::heartbeat_ivl, kHeartbeatIvlMs);
  c->dealer.set(zmq::sockopt::heartbeat_timeout, kHeartbeatTimeoutMs);
  c->monitor.set(zmq::sockopt::linger, 0);
  c->dealer.set(zmq::sockopt::reconnect_ivl, -1);  // a new connection would be a stranger to the server
  // Every served run speaks CURVE. On 127.0.0.1 the server's key defaults to
  // this user's own (a run this user serves); elsewhere it must be given.
  const std::filesystem::path config_dir = options.config_dir.empty() ? shardscopeConfigDir() : options.config_dir;
  const CurveKeyPair identity = loadOrMakeIdentity(config_dir);
  const bool own_key = !options.address.secured && options.server_key.empty();
  const std::string server_key = own_key ? identity.public_key : options.server_key;
  if (!isCurveKey(server_key))
    throw ConfigError("attaching to " + options.address.host +
                      " needs --server-key KEY: the served run's public key (40 Z85 characters, as "
                      "`shardscope-cli keys` prints it on the serving machine)");
  c->dealer.set(zmq::sockopt::curve_serverkey, server_key);
  c->dealer.set(zmq::sockopt::curve_publickey, identity.public_key);
  c->dealer.set(zmq::sockopt::curve_secretkey, identity.secret_key);
  static std::atomic<int> monitors{0};
  const std::string monitor_endpoint = "inproc://shardscope-attach-monitor-" + std::to_string(monitors++);
  if (zmq_socket_monitor(c->dealer.handle(), monitor_endpoint.c_str(),
                         ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_DISCONNECTED) != 0)
    throw RunError(std::string("attach: cannot watch the connection: ") + zmq_strerror(zmq_errno()));
  c->monitor.connect(monitor_endpoint);
  c->dealer.connect(c->endpoint);
  // Queued until the connection is up; a server that never comes is the timeout below.
  c->send(WireKind::AttachHello, 0, attachHelloPayload(options.name.empty() ? defaultInspectorName() : options.name));

  // The first message is the run's description.
  const auto deadline = std::chrono::steady_clock::now() + options.connect_timeout;
  std::optional<WireMessage> info;
  zmq::message_t header, payload;
  while (!info) {
    if (const std::string problem = c->connectionProblem(own_key); !problem.empty())
      throw RunError(problem + (problem.find("refused") != std::string::npos ? refusalHint(config_dir) : ""));
    if (std::chrono::steady_clock::now() >= deadline)
      throw RunError("no run answered at " + c->endpoint + " within " +
                     std::to_string(options.connect_timeout.count() / 1000.0).substr(0, 3) +
                     " s: is `shardscope-cli run ... --serve` running there" +
                     (own_key ? " (as this user? another account's run needs --server-key and your key "
                                "authorized)?"
                              : ", and is --server-key its key?"));
    zmq::pollitem_t item{c->dealer.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, kAttachPoll);
    // The run's rank count is not known yet: a RunInfo names no rank.
    if (auto m = c->receive(header, payload, 1); m && m->kind == WireKind::RunInfo) {
      info = std::move(m);
    } else if (m && m->kind == WireKind::Notice) {  // the run will not serve this inspector: say why
      throw RunError("the run at " + c->endpoint + " refused this inspector: " + m->text);
    }
  }
  AttachedRun out;
  out.endpoint = c->endpoint;
  RunConfig config;
  try {
    const auto json = nlohmann::ordered_json::parse(info->text);
    if (json.at("protocol").get<uint32_t>() != kAttachProtocol)
      throw RunError("the run at " + c->endpoint + " speaks attach protocol " + json.at("protocol").dump() +
                     ", this build speaks " + std::to_string(kAttachProtocol));
    config = configFromJson(json.at("config"));
    out.steppable = json.at("steppable").get<bool>();
    out.launch = json.at("launch").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw RunError("the run at " + c->endpoint + " described itself badly: " + e.what());
  } catch (const ConfigError& e) {
    throw RunError("the run at " + c->endpoint + " runs a config this build cannot read: " + e.what());
  }
  c->run_id = info->run_id;
  c->ranks = config.ranks;
  // Outputs are the inspector's own to ask for.
  config.trace_path.clear();
  config.summary_path.clear();
  config.flight_recorder_dir.clear();
  out.run = std::make_unique<Run>(config, kRanksElsewhere);
  out.gate = std::make_shared<RemoteGate>();
  out.run->setStepControl(out.gate);
  out.run->setRemoteRanks([c, gate = out.gate, own_key](RemoteRankFeed& feed) {
    zmq::message_t header, payload;
    while (true) {
      if (feed.control().isAborted()) {  // detached here: the served run goes on
        c->send(WireKind::Bye, 0, {}, zmq::send_flags::dontwait);  // a courtesy: a gone server is not waited for
        return;
      }
      for (const StepCommand& command : gate->takeCommands()) {
        const std::vector<uint8_t> p = commandPayload(command);
        c->sendOrThrow(WireKind::Command, static_cast<uint32_t>(p.size()), p);
      }
      if (const std::string problem = c->connectionProblem(own_key); !problem.empty())
        throw RunError(problem + " (the served run may go on; attach again to catch up)");
      zmq::pollitem_t item{c->dealer.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, kAttachPoll);
      while (auto m = c->receive(header, payload, c->ranks)) {
        if (feed.control().isAborted()) break;  // a long catch-up does not delay a detach
        switch (m->kind) {
          case WireKind::Events:
            feed.events(m->rank, m->events.data(), m->events.size());
            break;
          case WireKind::Loss:
            feed.loss(m->rank, m->step, m->loss);
            break;
          case WireKind::Result: {
            int64_t padding = 0;
            feed.rankResult(m->rank, parseRankResultJson(m->text, &padding), padding);
            break;
          }
          case WireKind::Master:
            feed.master(m->offset, m->master.data(), m->master.size());
            break;
          case WireKind::NodeClock:
            feed.nodeClock(m->node_clock);
            break;
          case WireKind::GateState:
            gate->update(std::move(m->gate));
            break;
          case WireKind::Notice:
            SPDLOG_LOGGER_WARN(&logger(LogComponent::Engine), "attach: the served run says: {}", m->text);
            gate->notice(m->text);
            break;
          case WireKind::Ended:
            c->send(WireKind::Bye, 0, {}, zmq::send_flags::dontwait);
            gate->update({});
            if (!m->text.empty()) feed.control().fail(m->text);
            else if (!m->finished) feed.control().cancel();
            return;
          default:
            break;  // a dropped message, or one an inspector does not take
        }
      }
    }
  });
  return out;
}

}  // namespace shardscope
