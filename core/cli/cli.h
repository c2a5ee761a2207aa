// shardscope-cli's commands, Qt-free so tests and the GUI share them. Exit
// codes (exitCodesText()): 0 ok, 2 bad input (one line naming the flag and the
// allowed range) or a run refused up front, 3 the run stopped (collective
// mismatch or hang, a failed rank), 4 an output could not be written, 128 +
// the signal's number when SIGINT, SIGTERM or SIGHUP stopped the run (with
// installStopSignals(); see common/stop_signals.h).
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope {

struct CliHooks {
  // Renders the `devices` report (text or JSON); null when built without CUDA.
  std::function<std::string(bool json)> devices_report;
};

int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
           const CliHooks& hooks = {});

}  // namespace shardscope
