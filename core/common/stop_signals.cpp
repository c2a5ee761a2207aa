#include "common/stop_signals.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cerrno>
#include <csignal>
#include <mutex>
#include <thread>

// A repeat of the first stop signal within kStopSignalRepeatWindowNs (or
// another stop signal from the same sending process in that time) is the same
// request and is ignored: tools deliver one stop twice (`timeout` signals the
// child and then its group; a launcher forwards the Ctrl-C the terminal also
// sends to the group). A later one while the stop is under way exits at once.

namespace shardscope {

namespace {

constexpr int64_t kStopSignalRepeatWindowNs = 1'000'000'000;

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

int g_pipe[2] = {-1, -1};
std::atomic<int> g_first{0};  // lock-free int: safe to touch in a handler
static_assert(std::atomic<int>::is_always_lock_free);
// When the first came (CLOCK_MONOTONIC ns, 0 until its handler stored it) and
// who sent it (si_pid of a kill(); 0 from the terminal or the kernel).
std::atomic<int64_t> g_firstNs{0};
std::atomic<int> g_firstSender{0};
static_assert(std::atomic<int64_t>::is_always_lock_free);

int64_t stopSignalsNowNs() {  // clock_gettime is async-signal-safe
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One stop delivered twice: `timeout` signals the child, then its group;
// a launcher forwards the Ctrl-C the terminal also sends to the group.
bool stopSignalRepeats(int signal, int sender, int64_t now_ns) {
  const int64_t first_ns = g_firstNs.load();
  if (first_ns == 0) return true;  // the first's handler is still running: this is simultaneous
  if (now_ns - first_ns >= kStopSignalRepeatWindowNs) return false;
  return signal == g_first.load() || (sender != 0 && sender == g_firstSender.load());
}

std::mutex g_stopMutex;
std::function<void()> g_stop;  // under g_stopMutex

extern "C" void onStopSignal(int signal, siginfo_t* info, void*) {
  const int saved_errno = errno;
  const int64_t now_ns = stopSignalsNowNs();
  const int sender = info != nullptr && info->si_code == SI_USER ? static_cast<int>(info->si_pid) : 0;
  int expected = 0;
  if (!g_first.compare_exchange_strong(expected, signal)) {
    // A repeat of the stop under way is ignored; a later (or another) one means "now".
    if (!stopSignalRepeats(signal, sender, now_ns)) _exit(exitCodeForSignal(signal));
    errno = saved_errno;
    return;
  }
  g_firstSender.store(sender);
  g_firstNs.store(now_ns == 0 ? 1 : now_ns);
  const unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] const ssize_t n = write(g_pipe[1], &byte, 1);
  errno = saved_errno;
}

void watch() {
  for (;;) {
    unsigned char byte = 0;
    const ssize_t n = read(g_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1) return;
    const int signal = byte;
    std::lock_guard lock(g_stopMutex);
    if (g_stop) {
      g_stop();
      continue;
    }
    // Nothing to stop: the signal's own action, as if no handler were installed.
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    _exit(exitCodeForSignal(signal));
  }
}

}  // namespace

bool installStopSignals() {
  static std::once_flag once;
  static bool installed = false;
  std::call_once(once, [] {
    if (pipe2(g_pipe, O_CLOEXEC) != 0) return;
    try {
      std::thread(watch).detach();
    } catch (const std::exception&) {
      close(g_pipe[0]);
      close(g_pipe[1]);
      return;
    }
    struct sigaction action {};
    action.sa_sigaction = onStopSignal;
    sigemptyset(&action.sa_mask);
    for (int signal : kStopSignals) sigaddset(&action.sa_mask, signal);  // one handler at a time per thread
    action.sa_flags = SA_RESTART | SA_SIGINFO;
    for (int signal : kStopSignals) sigaction(signal, &action, nullptr);
    installed = true;
  });
  return installed;
}

bool restartStopSignalsInChild() {
  if (g_pipe[0] < 0) return false;
  ::close(g_pipe[0]);
  ::close(g_pipe[1]);
  g_first.store(0);
  g_firstNs.store(0);
  g_firstSender.store(0);
  {
    std::lock_guard lock(g_stopMutex);
    g_stop = nullptr;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    g_pipe[0] = g_pipe[1] = -1;
    for (int signal : kStopSignals) std::signal(signal, SIG_DFL);
    return false;
  }
  g_pipe[0] = fds[0];
  g_pipe[1] = fds[1];
  try {
    std::thread(watch).detach();
  } catch (const std::exception&) {
    for (int signal : kStopSignals) std::signal(signal, SIG_DFL);
    return false;
  }
  return true;
}

StopSignalScope::StopSignalScope(std::function<void()> stop) {
  std::lock_guard lock(g_stopMutex);
  g_stop = std::move(stop);
}

StopSignalScope::~StopSignalScope() {
  std::lock_guard lock(g_stopMutex);
  g_stop = nullptr;
}

int stopSignalReceived() { return g_first.load(); }

std::string signalName(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(signal);
  }
}

}  // namespace shardscope
