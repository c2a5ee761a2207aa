// SIGINT, SIGTERM and SIGHUP as a request to stop. The handler does only what
// is async-signal-safe: it records the signal and writes one byte to a pipe. A
// watcher thread reads the pipe and calls the stop action the front end
// registered (a run's cancel, as the Stop button does), so the run unwinds
// normally and what it measured can still be written. A repeat of the first
// signal within a second (or another stop signal from the same sender in that
// second) is the same request and is ignored: tools deliver one stop twice
// (`timeout` signals the child and then its group). A later signal while a
// stop is under way exits at once (128 + signal number). A signal that comes
// while no stop action is registered ends the process as the signal would.
#pragma once

#include <functional>
#include <string>

namespace shardscope {

// Installs the handlers and starts the watcher; once per process (later calls
// return true and do nothing). False when the pipe or the thread cannot be made
// (the signals then keep their default action).
bool installStopSignals();

// In a child made by fork() after installStopSignals: the watcher thread was
// the parent's, and so was the pipe its handlers write to. Gives the child its
// own pipe and watcher, and forgets the parent's signals. False when they
// cannot be made (the child's stop signals then end it).
bool restartStopSignalsInChild();

// While alive, a stop signal calls `stop` on the watcher thread instead of
// ending the process. One at a time.
class StopSignalScope {
 public:
  explicit StopSignalScope(std::function<void()> stop);
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
};

// The first stop signal received since installStopSignals (0: none).
int stopSignalReceived();
// "SIGINT", "SIGTERM", "SIGHUP"; "signal N" for others.
std::string signalName(int signal);
// The exit status a process stopped by `signal` reports: 128 + its number.
constexpr int exitCodeForSignal(int signal) { return 128 + signal; }

}  // namespace shardscope
