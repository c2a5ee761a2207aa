#include "common/stop_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <mutex>
#include <thread>

namespace shardscope {

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

int g_pipe[2] = {-1, -1};
std::atomic<int> g_first{0};  // lock-free int: safe to touch in a handler
static_assert(std::atomic<int>::is_always_lock_free);

std::mutex g_stopMutex;
std::function<void()> g_stop;  // under g_stopMutex

extern "C" void onStopSignal(int signal) {
  const int saved_errno = errno;
  int expected = 0;
  if (!g_first.compare_exchange_strong(expected, signal)) _exit(exitCodeForSignal(signal));  // the second one
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
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (int signal : kStopSignals) sigaction(signal, &action, nullptr);
    installed = true;
  });
  return installed;
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
