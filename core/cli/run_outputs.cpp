#include "cli/run_outputs.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "analysis/run_summary.h"
#include "common/errors.h"
#include "common/stop_signals.h"
#include "postmortem/flight_recorder.h"
#include "postmortem/fr_dump_writer.h"
#include "trace/chrome_trace_writer.h"

namespace shardscope {

bool writeOutputs(const Run& run, const RunResult* result, const RunConfig& config, std::ostream& out,
                  std::ostream& err) {
  bool ok = true;
  const bool failed = result && result->interrupted && !result->interrupted->error.empty();
  if (!config.trace_path.empty()) {
    try {
      RunTrace trace = run.trace(Run::CopiedRanks::Shared);  // copies are written from their source, streaming
      if (result && result->interrupted && !failed) {  // a failed run's trace ends in its error events
        trace.interrupted_by = result->interrupted->by;
        trace.interrupted_at_step = result->interrupted->at_step;
      }
      writeChromeTraceFile(trace, config.trace_path);
      if (result && !failed) out << "trace written to " << config.trace_path << " (open in ui.perfetto.dev or shardscope)\n";
      else err << "trace of the stopped run written to " << config.trace_path << "\n";
    } catch (const std::exception& e) {
      err << "error: --trace " << failureText(e) << "\n";  // "PATH: what failed"
      ok = false;
    }
  }
  if (!config.flight_recorder_dir.empty()) {
    try {
      // Derived from the trace: every rank's dump, a killed worker's included.
      const RunTrace trace = run.trace(Run::CopiedRanks::Shared);
      const std::vector<std::string> paths = postmortem::writeFlightRecorderDumps(trace, config.flight_recorder_dir);
      std::ostream& to = result && !failed ? out : err;
      to << "flight-recorder dumps of " << paths.size() << " ranks written to " << config.flight_recorder_dir
         << " (shardscope-cli analyze " << config.flight_recorder_dir << ", or open it in shardscope)\n";
      if (!result || failed) {
        const postmortem::FrDiagnosis d =
            postmortem::diagnoseFlightRecorder(postmortem::readFlightRecorderDumps({config.flight_recorder_dir}));
        if (d.first_mismatch) err << "flight recorder: " << postmortem::frMismatchSentence(*d.first_mismatch) << "\n";
      }
    } catch (const std::exception& e) {
      err << "error: --flight-recorder " << failureText(e) << "\n";
      ok = false;
    }
  }
  if (result && !config.summary_path.empty()) {
    try {
      writeSummaryFile(*result, config.summary_path);
      if (failed)
        err << "summary of the " << result->losses.size() << " completed steps written to " << config.summary_path
            << " (marked failed, with the error)\n";
      else
        out << "summary written to " << config.summary_path << "\n";
    } catch (const std::exception& e) {
      err << "error: --summary " << failureText(e) << "\n";
      ok = false;
    }
  }
  return ok;
}

std::optional<RunResult> resultOfFailedRun(Run& run, const std::string& error) {
  try {
    RunResult result = run.resultSoFar();
    result.interrupted = RunInterruption{"error", static_cast<int>(result.losses.size()), error};
    return result;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<int> runRankInOwnSession(std::ostream& out, std::ostream& err) {
  out.flush();  // what is buffered would be printed by both processes
  err.flush();
  const pid_t child = ::fork();
  if (child < 0) return std::nullopt;
  if (child == 0) {
    ::setsid();
    // The launcher's pipes may close before the rank is done writing: a print then fails quietly.
    std::signal(SIGPIPE, SIG_IGN);
    restartStopSignalsInChild();
    return std::nullopt;
  }
  // Only the first stop is passed on: the rank's own stop takes what time it
  // needs, and this process may be killed meanwhile.
  const StopSignalScope forward([child] { ::kill(child, stopSignalReceived()); });
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? exitCodeForSignal(WTERMSIG(status)) : 1;
}

}  // namespace shardscope
