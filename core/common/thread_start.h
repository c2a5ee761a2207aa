// Starting a thread fails when the process is at its thread or address-space
// limit (ulimit -u, ulimit -v): std::thread throws std::system_error, and a
// vector of started threads destroyed while unwinding calls std::terminate.
// startThread turns the failure into a ResourceError that names what the
// thread was for; JoinedThreads joins whatever it started, also when a later
// start fails, so no failure to start a thread can end in terminate.
#pragma once

#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace shardscope {

namespace detail {
bool injectedThreadStartFailure();  // consumes one count of failThreadStartsAfter
[[noreturn]] void throwThreadStartFailure(const std::string& what, const std::string& reason);
}  // namespace detail

// Runs f on a new thread; throws ResourceError "cannot start a thread for
// <what>: <reason> (N threads running; ...)" when the system refuses one.
template <class F>
std::thread startThread(const std::string& what, F&& f) {
  if (detail::injectedThreadStartFailure())
    detail::throwThreadStartFailure(what, "Resource temporarily unavailable (injected)");
  try {
    return std::thread(std::forward<F>(f));
  } catch (const std::system_error& e) {
    detail::throwThreadStartFailure(what, e.code().message());
  }
}

// Threads started together and joined together (on joinAll or destruction).
class JoinedThreads {
 public:
  JoinedThreads() = default;
  JoinedThreads(const JoinedThreads&) = delete;
  JoinedThreads& operator=(const JoinedThreads&) = delete;
  ~JoinedThreads() { joinAll(); }

  template <class F>
  void start(const std::string& what, F&& f) {
    m_threads.reserve(m_threads.size() + 1);  // a full vector cannot throw after the start
    m_threads.push_back(startThread(what, std::forward<F>(f)));
  }
  void joinAll() {
    for (std::thread& t : m_threads)
      if (t.joinable()) t.join();
    m_threads.clear();
  }
  size_t size() const { return m_threads.size(); }

 private:
  std::vector<std::thread> m_threads;
};

// Tests: after `starts` more successful startThread calls, the next one fails
// as a system at its thread limit would (once); a negative value disarms it.
void failThreadStartsAfter(int starts);

// Threads of this process now (/proc/self/status), or -1 where unknown.
int processThreadCount();

}  // namespace shardscope
