#include "launch/process_launcher.h"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gloo/rendezvous/store.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>
#include <zmq.hpp>

#include "common/exit_codes.h"
#include "comm/rendezvous_store.h"
#include "config/rendezvous_url.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/stop_signals.h"
#include "launch/clock_sync.h"
#include "launch/gate_relay.h"
#include "launch/rank_result_json.h"
#include "launch/run_keys.h"
#include "launch/wire_format.h"
#include "launch/wire_socket.h"
#include "launch/worker.h"

extern char** environ;

namespace shardscope {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(20);
// After its process exits, a worker's last messages may still be in flight.
constexpr auto kLateMessages = std::chrono::milliseconds(2000);
// A process the kernel killed sends nothing more: what it sent is already in
// the connection's buffers, read within a few polls.
constexpr auto kLateMessagesKilled = std::chrono::milliseconds(250);
// After SIGTERM, a worker that has not exited gets SIGKILL.
constexpr auto kKillGrace = std::chrono::milliseconds(3000);
// After a worker dies, the others are stopped (SIGTERM) this soon: the death
// is the run's error whatever they then meet, and a rank held at a stop, or in
// its rendezvous, would otherwise wait on the dead one.
constexpr auto kDeathGrace = std::chrono::milliseconds(250);
// The store's gate key when the run's gate is off (a store value is never empty).
const std::string kNoGate = "off";
// After a stop under a cluster launcher that kills the other ranks soon
// after (--launch env), node 0 waits this long for their last messages.
constexpr auto kBriefStopCollect = std::chrono::milliseconds(500);
// How long another node's launcher whose ranks failed waits for node 0 to
// write the run's outputs before it leaves anyway (node 0 may be gone).
constexpr auto kNodeZeroWrites = std::chrono::seconds(30);
// How long node 0 waits for the other nodes to leave before it cleans the store.
constexpr auto kOtherNodesLeave = std::chrono::seconds(5);
// How often another node's launcher looks in the store for node 0's word.
constexpr auto kStoreLook = std::chrono::milliseconds(100);

// The job's records in the store, beside Gloo's keys: node 0 asks the other
// nodes to stop their ranks (abort), says its outputs are written, with the
// run's error (written); each other node says it leaves (left/N).
std::string jobKey(const RunConfig& config, const std::string& what) { return config.rdzv_id + "/job/" + what; }

bool storeHasKey(gloo::rendezvous::Store& store, const std::string& key) { return rendezvousStoreHas(store, {key}); }

std::string storeText(gloo::rendezvous::Store& store, const std::string& key) {
  const std::vector<char> v = store.get(key);
  return {v.begin(), v.end()};
}

// Sets a job record; one already there (set twice) or a store gone is logged only:
// the records speed the job's end, they never decide the run's outcome.
void setJobRecord(gloo::rendezvous::Store& store, const std::string& key, const std::string& text) {
  try {
    store.set(key, std::vector<char>(text.begin(), text.end()));
  } catch (const std::exception& e) {
    SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Engine), "rendezvous store: cannot set {}: {}", key, e.what());
  }
}

// A worker process stopped (SIGSTOP, SIGTSTP) or held by a debugger: it is
// alive but will answer nothing, and its peers' timeouts are its doing.
bool processIsStopped(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  std::FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* name_end = std::strrchr(buf, ')');  // the state follows the command name, which may hold spaces
  return name_end && name_end[1] == ' ' && (name_end[2] == 'T' || name_end[2] == 't');
}

struct Worker {
  int rank = 0;
  bool remote = false;     // on another node: its launcher reports for it
  pid_t pid = -1;
  bool exited = false;
  Clock::time_point exited_at;
  int status = 0;
  bool done = false;       // sent its last message
  bool arrived = false;    // sent its hello: its process started and reached the collector
  bool signalled_by_us = false;
  std::string died;        // another node says its process died
  bool stopped = false;    // found stopped while the run failed: the one that stopped responding
  int last_step = -1;
  int64_t last_ns = 0;     // end of the last event it sent
};

// `where`: " on node N" for another node's launcher, which knows no step.
std::string stoppedText(const Worker& w, const std::string& where) {
  return "rank " + std::to_string(w.rank) + " (worker pid " + std::to_string(w.pid) + where +
         ") stopped responding" + (where.empty() ? " during step " + std::to_string(std::max(0, w.last_step)) : "") +
         ": its process is stopped (SIGSTOP or SIGTSTP, or a debugger holds it)";
}

// The stop signal a worker exited on: killed by it, or exited 128 + it after
// stopping its rank (a worker's own SIGTERM or SIGINT handler); 0 otherwise.
int exitSignal(int status) {
  if (WIFSIGNALED(status)) return WTERMSIG(status);
  if (WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + 65) return WEXITSTATUS(status) - 128;
  return 0;
}

std::string exitText(int status) {
  if (WIFEXITED(status) && exitSignal(status) != 0) return "exited (" + signalName(exitSignal(status)) + ")";
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// FNV-1a: every node derives the same run id from the run's name.
uint64_t runIdOf(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

pid_t spawn(const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> copy = args;
  std::string argv0 = "shardscope-cli";
  std::vector<char*> argv = {argv0.data()};
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group: a terminal's Ctrl-C reaches the launcher alone,
  // which passes one stop to every worker (a second would end them at once).
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, program.c_str(), nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw RunError("cannot start a worker process (" + program + "): " + std::strerror(rc));
  return pid;
}

std::vector<char> bytesOf(const std::string& s) { return {s.begin(), s.end()}; }

// A run's own rendezvous directory names its launcher, so a later run can
// tell one left behind (its launcher killed with SIGKILL) from a live one.
constexpr const char* kRdzvPrefix = "shardscope-rdzv-";
constexpr const char* kRdzvOwnerFile = ".shardscope-launcher-pid";

// Removes this user's rendezvous directories in /tmp whose launcher is gone
// (its pid no longer runs). A directory whose launcher runs, or that names
// none, is left alone.
void removeStaleRendezvousDirs() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/tmp", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kRdzvPrefix, 0) != 0) continue;
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) continue;
    std::FILE* f = std::fopen((entry.path() / kRdzvOwnerFile).c_str(), "r");
    if (!f) continue;
    long long pid = 0;
    const bool read = std::fscanf(f, "%lld", &pid) == 1;
    std::fclose(f);
    if (!read || pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    std::filesystem::remove_all(entry.path(), ignored);
    SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Engine), "removed {} (its launcher, pid {}, is gone)",
                        entry.path().string(), pid);
  }
}

// A launcher's own directory (0700, named for removeStaleRendezvousDirs): the
// run's store when --rdzv names none, and its workers' copy of the run's keys.
struct LauncherDir {
  std::string path;
  LauncherDir() {
    char dir_template[] = "/tmp/shardscope-rdzv-XXXXXX";
    if (!mkdtemp(dir_template)) throw RunError(std::string("cannot make a rendezvous directory: ") + std::strerror(errno));
    path = dir_template;
    if (std::FILE* owner = std::fopen((path + "/" + kRdzvOwnerFile).c_str(), "w")) {
      std::fprintf(owner, "%lld\n", static_cast<long long>(getpid()));
      std::fclose(owner);
    }
  }
  ~LauncherDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  LauncherDir(const LauncherDir&) = delete;
  LauncherDir& operator=(const LauncherDir&) = delete;
  // The workers' keys: readable by this user alone (mkdtemp's 0700, the file's 0600).
  std::string writeKeys(const RunKeys& keys) const {
    const std::string file = path + "/run-keys";
    writePrivateFile(file, workerKeysText(keys));
    return file;
  }
};

// A multi-node run's keys for the other nodes' launchers: in a file:// store,
// a 0600 file beside the store's (the other nodes share its file system and
// user); a redis:// store has no files, so the keys are one of its values.
std::string sharedKeysFile(const RendezvousUrl& url, uint64_t run_id) {
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(run_id));
  return url.path + "/shardscope-run-keys-" + id;
}

// Another node could not read the run's keys node 0 published.
struct KeysUnreadable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// This node's workers: started, stopped once on request, reaped.
class LocalWorkers {
 public:
  LocalWorkers(const RunConfig& config, const LaunchOptions& options, WorkerArgs args)
      : m_config(config), m_options(options), m_args(std::move(args)) {}

  // Starts ranks [first, first + count); a failed start is returned as text.
  std::string start(std::vector<Worker>& workers, int first, int count) {
    // The workers log at the launcher's level, to the same stderr.
    const std::string level = logLevelName(logger(LogComponent::Engine).level());
    for (int r = first; r < first + count; ++r) {
      m_args.rank = r;
      m_args.local_rank = r - first;  // its GPU, for the GPU backends
      m_args.local_size = count;
      if (m_options.local_rank >= 0 && m_options.local_size > 0 && count == 1) {
        m_args.local_rank = m_options.local_rank;
        m_args.local_size = m_options.local_size;
      }
      std::vector<std::string> args = {"--log-level", level};
      for (std::string& a : workerArgs(m_args, m_config)) args.push_back(std::move(a));
      try {
        workers[static_cast<size_t>(r)].pid = spawn(m_options.worker_program, args);
      } catch (const RunError& e) {
        return e.what();
      }
      SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Engine), "rank {}: worker pid {}", r,
                          workers[static_cast<size_t>(r)].pid);
    }
    return {};
  }

  // Returns the workers that exited since the last call.
  static std::vector<Worker*> reap(std::vector<Worker>& workers, Clock::time_point now) {
    std::vector<Worker*> gone;
    for (Worker& w : workers) {
      if (w.remote || w.exited || w.pid <= 0) continue;
      int status = 0;
      if (waitpid(w.pid, &status, WNOHANG) != w.pid) continue;
      w.exited = true;
      w.exited_at = now;
      w.status = status;
      gone.push_back(&w);
      SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Engine), "rank {}: worker pid {} {}", w.rank, w.pid, exitText(status));
    }
    return gone;
  }

  static void signalAll(std::vector<Worker>& workers, int signal) {
    for (Worker& w : workers)
      if (!w.remote && !w.exited && w.pid > 0) {
        w.signalled_by_us = true;
        kill(w.pid, signal);
      }
  }

  static bool allExited(const std::vector<Worker>& workers) {
    return std::all_of(workers.begin(), workers.end(),
                       [](const Worker& w) { return w.remote || w.exited || w.pid <= 0; });
  }

 private:
  const RunConfig& m_config;
  const LaunchOptions& m_options;
  WorkerArgs m_args;
};

WorkerArgs baseWorkerArgs(const RunConfig& config, const RemoteRankFeed* feed) {
  WorkerArgs w;
  w.node_addr = config.node_addr;
  w.launcher_pid = getpid();
  w.connect_timeout_ms = config.rdzv_timeout_s * 1000;
  if (feed)
    w.clock_origin_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(feed->clock().origin().time_since_epoch()).count();
  return w;
}

class Collector {
 public:
  Collector(RemoteRankFeed& feed, const LaunchOptions& options) : m_feed(feed), m_options(options) {}
  ~Collector() {
    if (!m_sharedKeysFile.empty()) ::unlink(m_sharedKeysFile.c_str());
  }
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  void run() {
    const RunConfig& config = m_feed.config();
    // Only this run's workers are heard: the collector and the relay take
    // only connections with the run's client key (launch/run_keys.h).
    m_keys = makeRunKeys();
    zmq::context_t context;
    RunKeyAuthenticator authenticator(context, m_keys.client_public, "the collector");
    zmq::socket_t pull(context, zmq::socket_type::pull);
    pull.set(zmq::sockopt::rcvhwm, 0);  // take everything: the ranks never wait on the collector
    secureAsRunServer(pull, m_keys);
    pull.bind("tcp://" + config.node_addr + ":*");
    const std::string endpoint = pull.get(zmq::sockopt::last_endpoint);
    WorkerArgs w = baseWorkerArgs(config, &m_feed);
    w.collector = endpoint;
    removeStaleRendezvousDirs();
    LauncherDir own_dir;
    w.keys_file = own_dir.writeKeys(m_keys);
    if (config.rdzv.empty()) {
      // A fresh store per run: a stale key of an earlier run can never match.
      w.rdzv = "file://" + own_dir.path;
      std::random_device entropy;
      m_runId = (static_cast<uint64_t>(entropy()) << 32) ^ entropy();
      startRelay(w);
    } else {
      w.rdzv = config.rdzv;
      m_runId = runIdOf(config.rdzv_id);
      startRelay(w);
      if (config.nnodes > 1) {
        // The other nodes' workers send here, and their launchers align
        // their clocks to this one's; the keys are the run's.
        m_clockServer = std::make_unique<ClockServer>(config.node_addr, m_feed.clock().origin());
        m_store = openRendezvousStore(config.rdzv, config.rdzv_id);
        gloo::rendezvous::Store* store = m_store.get();
        const RendezvousUrl url = parseRendezvousUrl(config.rdzv);
        if (url.kind == RendezvousUrl::Kind::File) {
          // A file left by a launcher killed with this --rdzv-id is replaced;
          // O_EXCL then refuses one another account planted meanwhile.
          m_sharedKeysFile = sharedKeysFile(url, m_runId);
          ::unlink(m_sharedKeysFile.c_str());
          writePrivateFile(m_sharedKeysFile, workerKeysText(m_keys));
        }
        try {
          if (url.kind == RendezvousUrl::Kind::Redis) store->set(config.rdzv_id + "/keys", bytesOf(workerKeysText(m_keys)));
          store->set(config.rdzv_id + "/clock", bytesOf(m_clockServer->endpoint()));
          // Before the collector's key, which the other nodes wait for.
          store->set(config.rdzv_id + "/gate", bytesOf(w.gate.empty() ? kNoGate : w.gate));
          store->set(config.rdzv_id + "/collector", bytesOf(endpoint));
        } catch (const std::exception& e) {
          throw RunError("--rdzv " + config.rdzv + ": cannot publish run '" + config.rdzv_id + "' (" + e.what() +
                         "): a store keeps each run's keys, so give every run its own --rdzv-id");
        }
      }
    }
    w.run_id = m_runId;
    w.prefix = config.rdzv_id;
    const int local = config.procsPerNode();
    m_workers.resize(static_cast<size_t>(config.ranks));
    for (int r = 0; r < config.ranks; ++r) {
      m_workers[static_cast<size_t>(r)].rank = r;
      m_workers[static_cast<size_t>(r)].remote = r >= local;
    }
    SPDLOG_LOGGER_INFO(&logger(LogComponent::Engine), "node 0 of {}: starting ranks 0..{}; collector at {}, rendezvous {}",
                       config.nnodes, local - 1, endpoint, w.rdzv);
    m_feed.control().setAbortHandler([this] { m_stopRequested.store(true); });
    LocalWorkers workers(config, m_options, w);
    const std::string start_error = workers.start(m_workers, 0, local);
    if (!start_error.empty()) {
      m_failures.push_back(start_error);
      LocalWorkers::signalAll(m_workers, SIGTERM);
    }
    loop(pull);
    m_relay.reset();  // every worker is gone
    m_feed.control().setAbortHandler(nullptr);
    finish();
  }

 private:
  // An enabled gate (breakpoints, a served run) is the launcher's: the
  // workers pass it through the relay.
  void startRelay(WorkerArgs& w) {
    if (!m_feed.gate().enabled()) return;
    m_relay = std::make_unique<GateRelay>(m_feed, m_feed.config().node_addr, m_runId, m_keys);
    w.gate = m_relay->endpoint();
  }

  void loop(zmq::socket_t& pull) {
    const RunConfig& config = m_feed.config();
    std::optional<Clock::time_point> grace_until, kill_at, give_up_at;
    bool stop_forwarded = false;
    while (true) {
      zmq::pollitem_t item{pull.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, kPoll);
      while (receive(pull)) {
      }
      const Clock::time_point now = Clock::now();
      LocalWorkers::reap(m_workers, now);
      if (m_stopRequested.load() && !stop_forwarded) {
        stop_forwarded = true;
        LocalWorkers::signalAll(m_workers, SIGINT);  // their exits on it are the run's stop, not deaths
        publishAbort("the run was stopped");
        // Ranks on other nodes that never send their last message (their node
        // is gone) are not waited for without end; under a cluster launcher
        // that kills soon after a stop, hardly at all.
        const Clock::time_point until = now + (m_options.brief_stop ? std::chrono::milliseconds(kBriefStopCollect)
                                                                    : std::chrono::milliseconds(2 * kKillGrace));
        if (!give_up_at || until < *give_up_at) give_up_at = until;
      }
      if (!m_failures.empty() || anyDeath()) findStoppedWorkers();
      // The first failure: the others get the collective timeout to stop on
      // their own (they see the broken connections), then a SIGTERM. A death
      // (a rank that will never arrive): a SIGTERM at once, after which every
      // rank forwards what it has and stops.
      const bool death = anyDeath();
      if (!kill_at && (death || !m_failures.empty())) {
        const Clock::time_point until = now + (death ? std::chrono::milliseconds(kDeathGrace)
                                                     : std::chrono::milliseconds(config.timeout_ms));
        if (!grace_until || until < *grace_until) grace_until = until;
        if (m_relay) m_relay->releaseAll();  // ranks at a stop go on to meet the broken connections
      }
      if (grace_until && now >= *grace_until && !kill_at) {
        LocalWorkers::signalAll(m_workers, SIGTERM);
        publishAbort("the run failed");
        kill_at = now + kKillGrace;
        give_up_at = now + 2 * kKillGrace;  // remote ranks that still say nothing
      }
      if (kill_at && now >= *kill_at) {
        LocalWorkers::signalAll(m_workers, SIGKILL);
        kill_at = now + std::chrono::hours(1);
      }
      if (!LocalWorkers::allExited(m_workers)) continue;
      const bool waiting = std::any_of(m_workers.begin(), m_workers.end(), [&](const Worker& w) {
        if (w.done || !w.died.empty()) return false;
        if (w.remote) return !give_up_at || now < *give_up_at;
        // A worker that exited at once on a second stop signal sends nothing more either.
        const bool quick = WIFSIGNALED(w.status) || (stop_forwarded && m_options.brief_stop);
        return now - w.exited_at < (quick ? kLateMessagesKilled : kLateMessages);
      });
      if (!waiting) break;
    }
  }

  // A worker that ended on its own without finishing: gone with no word
  // (killed), or stopped by a signal that was not the launcher's (its Done
  // then says "stopped early"; the others would wait for it at the next stop
  // or collective). A worker that stopped on an error reported it (Failed).
  static bool isDeath(const Worker& w) {
    if (!w.died.empty() || w.stopped) return true;
    return !w.remote && w.exited && !w.signalled_by_us && (!w.done || exitSignal(w.status) != 0);
  }
  bool anyDeath() const { return std::any_of(m_workers.begin(), m_workers.end(), isDeath); }

  // While the run fails: a worker of this node whose process is stopped is
  // why the others timed out (they then close their connections, and those
  // errors say nothing of it).
  void findStoppedWorkers() {
    for (Worker& w : m_workers)
      if (!w.remote && !w.exited && !w.done && !w.stopped && !w.signalled_by_us && w.pid > 0 &&
          processIsStopped(w.pid)) {
        w.stopped = true;
        SPDLOG_LOGGER_WARN(&logger(LogComponent::Engine), "{}", stoppedText(w, ""));
      }
  }

  // Asks the other nodes' launchers to stop their ranks (once).
  void publishAbort(const std::string& why) {
    if (!m_store || m_abortPublished) return;
    m_abortPublished = true;
    setJobRecord(*m_store, jobKey(m_feed.config(), "abort"), why);
  }

  // One message, if there is one. A bad message is dropped with a log line.
  bool receive(zmq::socket_t& pull) {
    zmq::message_t header, payload;
    const size_t parts = receiveWireParts(pull, header, payload);
    if (parts == 0) return false;
    try {
      if (parts != 2) throw WireError("a message must have two parts, it had " + std::to_string(parts));
      file(decodeWireMessage({header.data<uint8_t>(), header.size()}, {payload.data<uint8_t>(), payload.size()},
                             m_runId, m_feed.config().ranks));
    } catch (const std::exception& e) {
      SPDLOG_LOGGER_WARN(&logger(LogComponent::Engine), "dropped a message from a rank process: {}", e.what());
    }
    return true;
  }

  void file(const WireMessage& m) {
    if (m.kind >= WireKind::AttachHello)  // the attach protocol's, or the gate relay's own socket's
      throw WireError("kind " + std::to_string(static_cast<int>(m.kind)) + " is not a rank process's message");
    Worker& w = m_workers.at(static_cast<size_t>(m.rank));
    switch (m.kind) {
      case WireKind::Hello:
        w.arrived = true;
        break;
      case WireKind::Events:
        m_feed.events(m.rank, m.events.data(), m.events.size());
        if (m_relay) m_relay->filedEvents(m.rank, m.events.size());
        for (const Event& e : m.events) {
          w.last_ns = std::max(w.last_ns, e.end_ns);
          w.last_step = std::max(w.last_step, e.step);
        }
        break;
      case WireKind::Loss:
        m_feed.loss(m.rank, m.step, m.loss);
        break;
      case WireKind::Result: {
        int64_t padding = 0;
        m_feed.rankResult(m.rank, parseRankResultJson(m.text, &padding), padding);
        break;
      }
      case WireKind::Master:
        m_feed.master(m.offset, m.master.data(), m.master.size());
        break;
      case WireKind::Failed:
        m_failures.push_back(m.text);
        break;
      case WireKind::Done:
        w.done = true;
        break;
      case WireKind::Died:
        if (w.remote) w.died = m.text;
        break;
      case WireKind::NodeClock:
        m_feed.nodeClock(m.node_clock);
        break;
      default:
        break;  // attach kinds: refused above
    }
  }

  // The run's one error: a death explains the failures it caused in others.
  void finish() {
    std::string death;
    for (const Worker& w : m_workers) {
      std::string why;
      if (!w.died.empty()) why = w.died;
      else if (w.stopped) why = stoppedText(w, "");
      else if (isDeath(w))
        why = "rank " + std::to_string(w.rank) + " (worker pid " + std::to_string(w.pid) + ") " + exitText(w.status) +
              " during step " + std::to_string(std::max(0, w.last_step));
      else if (w.remote && !w.arrived)
        why = "rank " + std::to_string(w.rank) + " (on another node) never arrived: its process did not start, or "
              "cannot reach this one";
      else if (w.remote && !w.done)
        why = "rank " + std::to_string(w.rank) + " (on another node) sent nothing more after step " +
              std::to_string(std::max(0, w.last_step)) + ": its node may be gone";
      if (why.empty()) continue;
      // What it sent stays; its log ends with the error, as a thread's does.
      Event err;
      err.kind = EventKind::Error;
      err.lane = Lane::Host;
      err.rank = static_cast<int16_t>(w.rank);
      err.step = w.last_step;
      err.begin_ns = err.end_ns = w.last_ns;
      m_feed.events(w.rank, &err, 1);
      if (death.empty()) death = why;
    }
    if (!death.empty()) m_feed.control().fail(death);
    else if (!m_failures.empty()) m_feed.control().fail(m_failures.front());
  }

  RemoteRankFeed& m_feed;
  const LaunchOptions& m_options;
  uint64_t m_runId = 0;
  RunKeys m_keys;
  std::string m_sharedKeysFile;  // a multi-node run's keys in its file:// store
  std::vector<Worker> m_workers;
  std::vector<std::string> m_failures;
  std::atomic<bool> m_stopRequested{false};
  std::unique_ptr<GateRelay> m_relay;  // the run's gate is enabled
  std::unique_ptr<ClockServer> m_clockServer;  // multi-node runs: the other nodes' clocks align to it
  std::shared_ptr<gloo::rendezvous::Store> m_store;  // multi-node runs: the job's records
  bool m_abortPublished = false;
};
// Another node whose ranks failed: waits until node 0 says it wrote the run's
// outputs (or a stop signal, or kNodeZeroWrites). Returns the run's error as
// node 0 reports it, "" when it said nothing in time.
std::string waitForNodeZeroOutputs(gloo::rendezvous::Store& store, const RunConfig& config,
                                   const std::atomic<bool>& stop) {
  const std::string key = jobKey(config, "written");
  const Clock::time_point deadline = Clock::now() + kNodeZeroWrites;
  while (!stop.load() && Clock::now() < deadline) {
    if (storeHasKey(store, key)) {
      try {
        return storeText(store, key);
      } catch (const std::exception&) {
        return {};
      }
    }
    std::this_thread::sleep_for(kPoll);
  }
  return {};
}
}  // namespace

std::function<void(RemoteRankFeed&)> processLauncher(LaunchOptions options) {
  return [options](RemoteRankFeed& feed) {
    Collector collector(feed, options);
    collector.run();
  };
}

int runOtherNode(const RunConfig& config, std::ostream& out, std::ostream& err, LaunchOptions options) {
  const int local = config.procsPerNode();
  const int first = config.node_rank * local;
  std::string endpoint, clock_endpoint, gate_endpoint;
  RunKeys keys;
  const uint64_t run_id = runIdOf(config.rdzv_id);
  std::shared_ptr<gloo::rendezvous::Store> store;  // also node 0's word at the job's end
  try {
    store = openRendezvousStore(config.rdzv, config.rdzv_id);
    const std::string key = config.rdzv_id + "/collector", clock_key = config.rdzv_id + "/clock";
    store->wait({key, clock_key}, std::chrono::milliseconds(int64_t{config.rdzv_timeout_s} * 1000));
    const std::vector<char> value = store->get(key), clock_value = store->get(clock_key);
    endpoint.assign(value.begin(), value.end());
    clock_endpoint.assign(clock_value.begin(), clock_value.end());
    const std::vector<char> gate_value = store->get(config.rdzv_id + "/gate");  // set before the collector's
    gate_endpoint.assign(gate_value.begin(), gate_value.end());
    if (gate_endpoint == kNoGate) gate_endpoint.clear();
    // Published before the collector's key (Collector::run).
    const RendezvousUrl url = parseRendezvousUrl(config.rdzv);
    try {
      if (url.kind == RendezvousUrl::Kind::File) {
        keys = readRunKeysFile(sharedKeysFile(url, run_id));
      } else {
        const std::vector<char> text = store->get(config.rdzv_id + "/keys");
        keys = parseWorkerKeys(std::string(text.begin(), text.end()), config.rdzv + " key " + config.rdzv_id + "/keys");
      }
    } catch (const std::exception& e) {
      throw KeysUnreadable(e.what());
    }
  } catch (const ConfigError&) {
    throw;
  } catch (const KeysUnreadable& e) {
    err << "error: node " << config.node_rank << ": " << e.what() << "\n";
    return kExitRunFailed;
  } catch (const std::exception& e) {
    err << "error: node " << config.node_rank << ": node 0 of run '" << config.rdzv_id << "' did not appear in "
        << config.rdzv << " within " << config.rdzv_timeout_s << " s (--rdzv-timeout): " << e.what() << "\n";
    return kExitRunFailed;
  }
  WorkerArgs w = baseWorkerArgs(config, nullptr);
  w.collector = endpoint;
  w.gate = gate_endpoint;
  w.run_id = run_id;
  // This node's workers read the keys from this launcher's own directory.
  std::unique_ptr<LauncherDir> own_dir;
  try {
    own_dir = std::make_unique<LauncherDir>();
    w.keys_file = own_dir->writeKeys(keys);
  } catch (const RunError& e) {
    err << "error: node " << config.node_rank << ": " << e.what() << "\n";
    return kExitRunFailed;
  }
  w.rdzv = config.rdzv;
  w.prefix = config.rdzv_id;
  std::vector<Worker> workers(static_cast<size_t>(config.ranks));
  for (int r = 0; r < config.ranks; ++r) {
    workers[static_cast<size_t>(r)].rank = r;
    workers[static_cast<size_t>(r)].remote = r < first || r >= first + local;
  }
  const std::string& node = options.node_word;
  if (local == 1 && node != "node")
    out << node << " " << first << " of " << config.ranks << ": streaming to " << node << " 0 at " << endpoint << "\n"
        << std::flush;
  else
    out << "node " << config.node_rank << " of " << config.nnodes << ": ranks " << first << ".." << first + local - 1
        << ", streaming to node 0 at " << endpoint << "\n"
      << std::flush;
  zmq::context_t context;
  zmq::socket_t push(context, zmq::socket_type::push);
  secureAsRunClient(push, keys);
  push.set(zmq::sockopt::linger, 5000);
  push.connect(endpoint);
  // Measured runs: this node's ranks time their events from node 0's origin,
  // as this host's steady clock places it: estimated now, and the trace says
  // how well. (The modeled clock is the same on every node.)
  if (config.clock == ClockKind::Measured) {
    ClockEstimate clock;
    try {
      clock = estimateNodeZeroOrigin(clock_endpoint);
    } catch (const std::exception& e) {
      err << "error: node " << config.node_rank << ": " << e.what() << "\n";
      return kExitRunFailed;
    }
    w.clock_origin_ns = clock.origin_ns;
    const RunTrace::NodeClock info{config.node_rank, first, local, clock.uncertainty_ns, clock.pings};
    const std::vector<uint8_t> payload = nodeClockPayload(info);
    push.send(zmq::buffer(wireHeader(WireKind::NodeClock, first, 0, w.run_id)), zmq::send_flags::sndmore);
    push.send(zmq::buffer(payload), zmq::send_flags::none);
    SPDLOG_LOGGER_INFO(&logger(LogComponent::Engine), "node {}: clock aligned to node 0 within {:.1f} us ({} pings)",
                       config.node_rank, static_cast<double>(clock.uncertainty_ns) / 1e3, clock.pings);
  }
  std::atomic<bool> stop{false};
  const StopSignalScope on_signal([&stop] { stop.store(true); });
  LocalWorkers starter(config, options, w);
  std::string failure = starter.start(workers, first, local);
  if (!failure.empty()) LocalWorkers::signalAll(workers, SIGTERM);
  bool forwarded = false, told_to_stop = false;
  Clock::time_point next_look = Clock::now() + kStoreLook;
  std::optional<Clock::time_point> kill_at;
  const std::string where = " on node " + std::to_string(config.node_rank);
  const auto sendDied = [&](int rank, const std::string& text) {
    const std::vector<uint8_t> header = wireHeader(WireKind::Died, rank, static_cast<uint32_t>(text.size()), w.run_id);
    push.send(zmq::buffer(header), zmq::send_flags::sndmore);
    push.send(zmq::buffer(text), zmq::send_flags::none);
  };
  while (!LocalWorkers::allExited(workers)) {
    std::this_thread::sleep_for(kPoll);
    if (stop.load() && !forwarded) {
      forwarded = true;
      LocalWorkers::signalAll(workers, SIGINT);
    }
    // Node 0 stops the run (a rank failed, or it was stopped): this node's
    // ranks stop too, and one that is stopped is named, since its peers'
    // timeouts say nothing of it.
    const Clock::time_point now = Clock::now();
    if (!told_to_stop && now >= next_look) {
      next_look = now + kStoreLook;
      if (storeHasKey(*store, jobKey(config, "abort"))) {
        told_to_stop = true;
        for (const Worker& x : workers)
          if (!x.remote && !x.exited && x.pid > 0 && processIsStopped(x.pid)) {
            const std::string text = stoppedText(x, where);
            if (failure.empty()) failure = text;
            sendDied(x.rank, text);
          }
        LocalWorkers::signalAll(workers, SIGTERM);
        kill_at = now + kKillGrace;
      }
    }
    if (kill_at && now >= *kill_at) {
      LocalWorkers::signalAll(workers, SIGKILL);
      kill_at = now + std::chrono::hours(1);
    }
    for (Worker* gone : LocalWorkers::reap(workers, Clock::now())) {
      if (WIFEXITED(gone->status) && WEXITSTATUS(gone->status) == 0) continue;
      const std::string text = "rank " + std::to_string(gone->rank) + " (worker pid " + std::to_string(gone->pid) +
                               " on node " + std::to_string(config.node_rank) + ") " + exitText(gone->status);
      if (failure.empty()) failure = text;
      // Only a death the worker did not report as a failure: killed, or
      // stopped by a signal that was not this launcher's (node 0 would wait
      // for its rank at the next stop).
      if (exitSignal(gone->status) == 0 || gone->signalled_by_us) continue;
      sendDied(gone->rank, text);
    }
  }
  const std::string self = (local == 1 && node != "node" ? node + " " + std::to_string(first)
                                                          : "node " + std::to_string(config.node_rank));
  if (!failure.empty()) {
    err << "error: " << self << ": " << failure << "\n" << std::flush;
    // A cluster launcher ends the whole job at this exit (mpirun): node 0
    // must have written what the run measured first.
    if (!stop.load()) {
      const std::string verdict = waitForNodeZeroOutputs(*store, config, stop);
      if (verdict.empty())
        err << self << ": " << node << " 0 did not say within " << kNodeZeroWrites.count()
            << " s that it wrote the run's outputs\n";
      else
        err << self << ": " << node << " 0 wrote the run's outputs; the run's error: " << verdict << "\n";
    }
    // After a stop signal node 0 does not wait for this, and may be removing the store.
    if (!stop.load()) setJobRecord(*store, jobKey(config, "left/" + std::to_string(config.node_rank)), "failed");
    return kExitRunFailed;
  }
  if (!stop.load()) setJobRecord(*store, jobKey(config, "left/" + std::to_string(config.node_rank)), "finished");
  if (local == 1 && node != "node")
    out << node << " " << first << " finished; " << node << " 0 writes the trace and summary\n";
  else
    out << "node " << config.node_rank << ": ranks " << first << ".." << first + local - 1
        << " finished; node 0 writes the trace and summary\n";
  return stop.load() ? exitCodeForSignal(stopSignalReceived()) : kExitOk;
}

JobEnd::JobEnd(const RunConfig& config)
    : m_config(config), m_active(config.launch == Launch::Processes && config.node_rank == 0 && !config.rdzv.empty()) {}

JobEnd::~JobEnd() { written(""); }

void JobEnd::written(const std::string& error) {
  if (!m_active) return;
  m_active = false;
  if (m_config.nnodes > 1) {
    try {
      const std::shared_ptr<gloo::rendezvous::Store> store = openRendezvousStore(m_config.rdzv, m_config.rdzv_id);
      if (!error.empty()) setJobRecord(*store, jobKey(m_config, "abort"), error);  // if the run did not already
      setJobRecord(*store, jobKey(m_config, "written"), error.empty() ? std::string("finished") : error);
      // The other nodes read that before they leave; after a stop signal the
      // cluster launcher ends them (and this one) now anyway.
      std::vector<std::string> left;
      for (int n = 1; n < m_config.nnodes; ++n) left.push_back(jobKey(m_config, "left/" + std::to_string(n)));
      const Clock::time_point deadline = Clock::now() + kOtherNodesLeave;
      bool all_left = false;
      while (!all_left && stopSignalReceived() == 0 && Clock::now() < deadline) {
        all_left = std::all_of(left.begin(), left.end(), [&](const std::string& k) { return storeHasKey(*store, k); });
        if (!all_left) std::this_thread::sleep_for(kPoll);
      }
      if (!all_left)
        SPDLOG_LOGGER_INFO(&logger(LogComponent::Engine), "not every node said it left within {} s: cleaning the store anyway",
                           kOtherNodesLeave.count());
    } catch (const std::exception& e) {
      SPDLOG_LOGGER_WARN(&logger(LogComponent::Engine), "--rdzv {}: {}", m_config.rdzv, e.what());
    }
  }
  if (!removeRendezvousJobDir(m_config.rdzv, m_config.rdzv_id))
    SPDLOG_LOGGER_WARN(&logger(LogComponent::Engine), "--rdzv {}: could not remove {}", m_config.rdzv,
                       rendezvousJobDir(m_config.rdzv, m_config.rdzv_id));
}

}  // namespace shardscope
