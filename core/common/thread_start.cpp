#include "common/thread_start.h"

#include <atomic>
#include <cstdlib>
#include <fstream>

namespace shardscope {

namespace {
std::atomic<int> g_failAfter{-1};
}  // namespace

void failThreadStartsAfter(int starts) { g_failAfter.store(starts < 0 ? -1 : starts); }

bool detail::injectedThreadStartFailure() {
  int left = g_failAfter.load(std::memory_order_relaxed);
  while (left >= 0) {
    // left == 0: this start fails and disarms; otherwise count it down.
    if (g_failAfter.compare_exchange_weak(left, left - 1)) return left == 0;
  }
  return false;
}

void detail::throwThreadStartFailure(const std::string& what, const std::string& reason) {
  std::string message = "cannot start a thread for " + what + ": " + reason;
  const int threads = processThreadCount();
  if (threads > 0) message += " (" + std::to_string(threads) + " threads running";
  else message += " (";
  message += std::string(threads > 0 ? "; " : "") +
             "the process is at its thread or address-space limit, see ulimit -u and ulimit -v): try fewer --ranks";
  throw ResourceError(message);
}

int processThreadCount() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return -1;
}

}  // namespace shardscope
