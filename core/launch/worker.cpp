#include "launch/worker.h"

#include <atomic>
#include <bit>
#include <chrono>
#include <optional>
#include <thread>
#include <zmq.hpp>

#if defined(__linux__)
#include <sys/prctl.h>
#endif
#include <csignal>
#include <unistd.h>

#include "common/exit_codes.h"
#include "comm/rendezvous_store.h"
#include "comm/stoppable_store.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/stop_signals.h"
#include "engine/run.h"
#include "launch/rank_result_json.h"
#include "launch/run_keys.h"
#include "launch/wire_format.h"
#include "launch/wire_socket.h"

namespace shardscope {

namespace {
constexpr auto kForwardEvery = std::chrono::milliseconds(10);
// A rank stopped while it still connects leaves this long after the stop if
// its run has not ended by then (the launcher's SIGKILL comes 3 s after).
constexpr auto kSetupStopGrace = std::chrono::milliseconds(800);
constexpr size_t kBatchEvents = 16384;        // 1 MiB of records a message
constexpr size_t kMasterFloats = size_t{4} << 20;  // 16 MiB of weights a message
constexpr int kSendTimeoutMs = 60000;         // a collector that stops reading ends the worker
constexpr auto kGatePoll = std::chrono::milliseconds(20);  // a rank waiting for a go looks at its run and launcher

int64_t parseI64(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used, 0);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  throw ConfigError(flag + " must be an integer, got '" + v + "'");
}

// Sends one message; a collector that does not take it within the timeout is gone.
class CollectorLink {
 public:
  CollectorLink(const WorkerArgs& args, const RunKeys& keys)
      : m_socket(m_context, zmq::socket_type::push), m_args(args) {
    secureAsRunClient(m_socket, keys);
    m_socket.set(zmq::sockopt::sndtimeo, kSendTimeoutMs);
    m_socket.set(zmq::sockopt::linger, kSendTimeoutMs);  // what is queued is delivered before exit
    m_socket.connect(args.collector);
  }
  void send(WireKind kind, uint32_t count, const void* payload, size_t bytes) {
    const std::vector<uint8_t> header = wireHeader(kind, m_args.rank, count, m_args.run_id);
    if (!m_socket.send(zmq::buffer(header), zmq::send_flags::sndmore) ||
        !m_socket.send(zmq::const_buffer(payload, bytes), zmq::send_flags::none))
      throw RunError("rank " + std::to_string(m_args.rank) + ": the collector at " + m_args.collector +
                     " took no message for " + std::to_string(kSendTimeoutMs / 1000) + " s (the launcher is gone)");
  }
  void sendText(WireKind kind, const std::string& text) {
    send(kind, static_cast<uint32_t>(text.size()), text.data(), text.size());
  }

 private:
  zmq::context_t m_context;
  zmq::socket_t m_socket;
  const WorkerArgs& m_args;
};

// Streams what the rank recorded since the last call.
class RankForwarder {
 public:
  RankForwarder(const Run& run, int rank, CollectorLink& link) : m_run(run), m_rank(rank), m_link(link) {}
  void forward() {
    m_batch.clear();
    m_cursor = m_run.eventLog(m_rank).readFrom(m_cursor, m_batch);
    for (size_t i = 0; i < m_batch.size(); i += kBatchEvents) {
      const size_t n = std::min(kBatchEvents, m_batch.size() - i);
      m_link.send(WireKind::Events, static_cast<uint32_t>(n), m_batch.data() + i, n * sizeof(Event));
    }
    const std::vector<double> losses = m_run.losses();
    for (; m_lossesSent < losses.size(); ++m_lossesSent) {
      const std::vector<uint8_t> p = lossPayload(static_cast<int>(m_lossesSent), losses[m_lossesSent]);
      m_link.send(WireKind::Loss, 0, p.data(), p.size());
    }
  }

 private:
  const Run& m_run;
  int m_rank;
  CollectorLink& m_link;
  size_t m_cursor = 0;
  size_t m_lossesSent = 0;
  std::vector<Event> m_batch;
};

// The rank's gate points, passed in the launcher: say where it is (with its
// ledger and the events recorded so far), and wait for the go; a cancelled run or a
// launcher that is gone ends the wait within a poll.
class WorkerGate final : public RemoteGatePass {
 public:
  WorkerGate(const Run& run, const WorkerArgs& args, const RunKeys& keys)
      : m_run(run), m_args(args), m_socket(m_context, zmq::socket_type::dealer) {
    secureAsRunClient(m_socket, keys);
    m_socket.set(zmq::sockopt::linger, 0);
    m_socket.connect(args.gate);
  }

  void pass(int rank, const GatePoint& point, int64_t now_ns, const RunControl& control) override {
    GateArrival a;
    a.point = point;
    a.now_ns = now_ns;
    // The main thread streams them within kForwardEvery; at a stop the relay
    // files them before the rank counts as stopped.
    a.events_sent = m_run.eventLog(rank).publishedCount();
    setLedger(a);
    send(WireKind::GateArrived, gateArrivalPayload(a));
    while (true) {
      zmq::pollitem_t item{m_socket.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, kGatePoll);
      zmq::message_t header, payload;
      for (size_t parts; (parts = receiveWireParts(m_socket, header, payload)) != 0;) {
        try {
          if (parts != 2) throw WireError("a message must have two parts");
          const WireMessage m = decodeWireMessage({header.data<uint8_t>(), header.size()},
                                                  {payload.data<uint8_t>(), payload.size()}, m_args.run_id,
                                                  m_run.config().ranks);
          if (m.rank != rank) throw WireError("a message for rank " + std::to_string(m.rank));
          if (m.kind == WireKind::GateGo) return;
          if (m.kind == WireKind::GateAsk) {  // the stop is complete: the views want the ledger as it is now
            setLedger(a);
            send(WireKind::GateLedger, gateLedgerPayload(a));
            continue;
          }
          throw WireError("kind " + std::to_string(static_cast<int>(m.kind)) + " is not the gate relay's");
        } catch (const WireError& e) {
          SPDLOG_LOGGER_WARN(&logger(LogComponent::Engine), "rank {}: dropped a gate message: {}", rank, e.what());
        }
      }
      if (control.isAborted()) throw RunAborted();
      if (m_args.launcher_pid > 0 && getppid() != m_args.launcher_pid)
        throw RunError("rank " + std::to_string(rank) + ": its launcher (pid " + std::to_string(m_args.launcher_pid) +
                       ") is gone while the rank waited at the gate");
      // At a stop the rank's other streams may still finish ops (a prefetched
      // gather): the views get its ledger again when it changes.
      GateArrival now;
      setLedger(now);
      if (now.current != a.current || now.peak != a.peak) {
        a = now;
        send(WireKind::GateLedger, gateLedgerPayload(now));
      }
    }
  }

 private:
  void setLedger(GateArrival& a) const {
    const LedgerSnapshot l = m_run.ledger(m_args.rank);
    a.current = l.current;
    a.peak = l.peak;
    a.model_state_peak = l.model_state_peak;
    a.total_peak = l.total_peak;
  }
  void send(WireKind kind, const std::vector<uint8_t>& payload) {
    const std::vector<uint8_t> header =
        wireHeader(kind, m_args.rank, static_cast<uint32_t>(payload.size()), m_args.run_id);
    m_socket.send(zmq::buffer(header), zmq::send_flags::sndmore);
    m_socket.send(zmq::buffer(payload), zmq::send_flags::none);
  }

  const Run& m_run;
  const WorkerArgs& m_args;
  zmq::context_t m_context;
  zmq::socket_t m_socket;  // used by the rank's compute stream alone
};

// The weights this rank owns: the runs of final_master it wrote.
void sendMaster(const std::vector<float>& master, CollectorLink& link) {
  const auto written = [&](size_t i) { return std::bit_cast<uint32_t>(master[i]) != kUnwrittenMaster; };
  for (size_t i = 0; i < master.size();) {
    if (!written(i)) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < master.size() && end - i < kMasterFloats && written(end)) ++end;
    const std::vector<uint8_t> p = masterPayload(static_cast<int64_t>(i), {master.data() + i, end - i});
    link.send(WireKind::Master, static_cast<uint32_t>(end - i), p.data(), p.size());
    i = end;
  }
}
}  // namespace

WorkerArgs parseWorkerArgs(const std::vector<std::string>& args, RunConfig* config) {
  WorkerArgs w;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size() || args[i + 1] == "--") throw ConfigError("worker " + flag + " needs a value");
    const std::string& v = args[++i];
    if (flag == "--rank") w.rank = static_cast<int>(parseI64(flag, v));
    else if (flag == "--collector") w.collector = v;
    else if (flag == "--gate") w.gate = v;
    else if (flag == "--keys") w.keys_file = v;
    else if (flag == "--run-id") w.run_id = static_cast<uint64_t>(std::stoull(v, nullptr, 16));
    else if (flag == "--rdzv") w.rdzv = v;
    else if (flag == "--rdzv-prefix") w.prefix = v;
    else if (flag == "--node-addr") w.node_addr = v;
    else if (flag == "--clock-origin-ns") w.clock_origin_ns = parseI64(flag, v);
    else if (flag == "--launcher-pid") w.launcher_pid = static_cast<int>(parseI64(flag, v));
    else if (flag == "--local-rank") w.local_rank = static_cast<int>(parseI64(flag, v));
    else if (flag == "--local-world-size") w.local_size = static_cast<int>(parseI64(flag, v));
    else if (flag == "--connect-timeout-ms") w.connect_timeout_ms = static_cast<int>(parseI64(flag, v));
    else
      throw ConfigError("worker: unknown flag '" + flag + "' (worker processes are started by `run --launch "
                        "processes`, not by hand)");
  }
  if (i == args.size()) throw ConfigError("worker: the run's flags must follow '--'");
  if (w.connect_timeout_ms <= 0) throw ConfigError("worker --connect-timeout-ms must be positive");
  if (w.collector.empty() || w.rdzv.empty() || w.keys_file.empty() || w.rank < 0)
    throw ConfigError("worker: --rank, --collector, --keys and --rdzv are required");
  *config = parseRunArgs({args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end()});
  if (w.rank >= config->ranks)
    throw ConfigError("worker --rank " + std::to_string(w.rank) + " must be below --ranks " +
                      std::to_string(config->ranks));
  // The run's flags leave out how it was launched (runArgs): a worker is a
  // rank process, placed on its node as the launcher says (its GPU).
  config->launch = Launch::Processes;
  if (w.local_rank >= 0) {
    if (w.local_size <= 0 || w.local_rank >= w.local_size || config->ranks % w.local_size != 0 ||
        w.rank < w.local_rank)
      throw ConfigError("worker --local-rank " + std::to_string(w.local_rank) + " --local-world-size " +
                        std::to_string(w.local_size) + " do not place rank " + std::to_string(w.rank) + " of " +
                        std::to_string(config->ranks));
    config->nproc_per_node = w.local_size;
    config->nnodes = config->ranks / w.local_size;
    config->node_rank = (w.rank - w.local_rank) / w.local_size;
    config->rdzv = w.rdzv;
  }
  return w;
}

std::vector<std::string> workerArgs(const WorkerArgs& w, const RunConfig& config) {
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(w.run_id));
  std::vector<std::string> a = {"worker",          "--rank",        std::to_string(w.rank), "--collector",
                                w.collector,       "--run-id",      id,                     "--rdzv",
                                w.rdzv,            "--rdzv-prefix", w.prefix,               "--node-addr",
                                w.node_addr,       "--launcher-pid", std::to_string(w.launcher_pid),
                                "--connect-timeout-ms", std::to_string(w.connect_timeout_ms),
                                "--keys",          w.keys_file};
  if (!w.gate.empty()) {
    a.push_back("--gate");
    a.push_back(w.gate);
  }
  if (w.clock_origin_ns) {
    a.push_back("--clock-origin-ns");
    a.push_back(std::to_string(*w.clock_origin_ns));
  }
  if (w.local_rank >= 0) {
    a.push_back("--local-rank");
    a.push_back(std::to_string(w.local_rank));
    a.push_back("--local-world-size");
    a.push_back(std::to_string(w.local_size));
  }
  a.push_back("--");
  for (std::string& f : runArgs(config)) a.push_back(std::move(f));
  return a;
}

int runWorker(const RunConfig& config, const WorkerArgs& args, std::ostream& err) {
#if defined(__linux__)
  // A worker never outlives its launcher (killed with -9, say): the kernel
  // ends it then. The check after it closes the race with an early death.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (args.launcher_pid > 0 && getppid() != args.launcher_pid) return kExitRunFailed;
#endif
  const std::string who = "rank " + std::to_string(args.rank) + " (pid " + std::to_string(getpid()) + ")";
  std::unique_ptr<CollectorLink> link;
  RunKeys keys;
  try {
    keys = readRunKeysFile(args.keys_file);
  } catch (const std::exception& e) {
    err << "error: " << who << ": " << e.what() << "\n";
    return kExitRunFailed;
  }
  try {
    link = std::make_unique<CollectorLink>(args, keys);
    const int64_t pid = getpid();
    link->send(WireKind::Hello, 0, &pid, sizeof pid);
  } catch (const std::exception& e) {
    err << "error: " << who << ": cannot reach the collector at " << args.collector << ": " << e.what() << "\n";
    return kExitRunFailed;
  }
  std::unique_ptr<Run> run;
  int code = kExitOk;
  const auto stop_requested = std::make_shared<std::atomic<bool>>(false);
  try {
    run = std::make_unique<Run>(config);
    WorkerPlacement place;
    place.store = std::make_shared<StoppableStore>(openRendezvousStore(args.rdzv, args.prefix), stop_requested);
    place.mesh.rank = args.rank;
    place.mesh.prefix = args.prefix;
    place.mesh.hostname = args.node_addr;
    place.mesh.local_rank = args.local_rank;
    place.mesh.store_name = args.rdzv;
    place.mesh.connect_timeout_ms = args.connect_timeout_ms;
    if (args.clock_origin_ns)
      place.clock_origin = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(*args.clock_origin_ns));
    run->setWorker(std::move(place));
  } catch (const std::exception& e) {
    link->sendText(WireKind::Failed, who + ": " + failureText(e));
    const uint8_t stopped = 0;
    link->send(WireKind::Done, 0, &stopped, 1);
    return kExitRunFailed;
  }
  const StopSignalScope on_signal([r = run.get(), stop_requested] {
    stop_requested->store(true);  // a rank still in its rendezvous stops waiting
    r->cancel();
  });
  RankForwarder forwarder(*run, args.rank, *link);
  std::unique_ptr<WorkerGate> gate;
  bool finished = false;
  try {
    if (!args.gate.empty()) {
      gate = std::make_unique<WorkerGate>(*run, args, keys);
      run->gate().enable();
      run->gate().setRemote(gate.get());
    }
    run->start();
    std::optional<std::chrono::steady_clock::time_point> leave_at;
    while (!run->finished()) {
      std::this_thread::sleep_for(kForwardEvery);
      forwarder.forward();
      if (!stop_requested->load() || run->stepsDone() > 0) continue;
      // Stopped before its first step: a rank thread may be inside Gloo's
      // connect to a peer that died after publishing its address, where no
      // cancel reaches. Nothing measured is lost by leaving: what it recorded
      // is forwarded, the run (its threads blocked) is left to the exit.
      const auto now = std::chrono::steady_clock::now();
      if (!leave_at) leave_at = now + kSetupStopGrace;
      if (now < *leave_at) continue;
      forwarder.forward();
      const uint8_t stopped = 0;
      link->send(WireKind::Done, 0, &stopped, 1);
      (void)run.release();
      const int signal = stopSignalReceived();
      return exitCodeForSignal(signal ? signal : SIGTERM);
    }
    RunResult result;
    std::string failure;
    try {
      result = run->wait();
      finished = true;
    } catch (const RunAborted&) {
      result = run->resultSoFar();
      const int signal = stopSignalReceived();
      code = signal ? exitCodeForSignal(signal) : kExitRunFailed;
    } catch (const RunError& e) {
      failure = e.what();
      code = kExitRunFailed;
    }
    forwarder.forward();
    if (failure.empty()) {
      link->sendText(WireKind::Result, rankResultJson(result.ranks[static_cast<size_t>(args.rank)],
                                                      result.padding_elements));
      if (finished && config.backend != Backend::Meta) sendMaster(result.final_master, *link);
    } else {
      link->sendText(WireKind::Failed, failure);
    }
    const uint8_t outcome = finished ? 1 : 0;
    link->send(WireKind::Done, 0, &outcome, 1);
  } catch (const std::exception& e) {  // the collector is gone, or the run's thread could not start
    err << "error: " << who << ": " << failureText(e) << "\n";
    run->cancel();
    run.reset();  // its rank is gone before the gate and forwarder it uses
    return kExitRunFailed;
  }
  return code;
}

}  // namespace shardscope
