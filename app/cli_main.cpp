// shardscope-cli: the headless front end. All logic lives in core/cli.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/devices_report.h"
#include "common/stop_signals.h"
#include "kernels/cpu_kernels.h"

int main(int argc, char** argv) {
  // First, before any thread: a stop signal stops a run and keeps what it measured.
  shardscope::installStopSignals();
  // A file-size limit (ulimit -f) makes a write fail with EFBIG, reported with
  // the file's name like any write error, instead of killing the process
  // (exit 153, no message, half a file). Inherited by the workers it starts.
  std::signal(SIGXFSZ, SIG_IGN);
  // OpenBLAS's idle thread pool would spin on a core through the first 0.1 s.
  shardscope::cpu::initBlasSingleThreaded();
  std::vector<std::string> args(argv + 1, argv + argc);
  shardscope::CliHooks hooks;
  hooks.devices_report = [](bool json) {
    return json ? shardscope::devicesReportJson() : shardscope::devicesReport();
  };
  const int code = shardscope::runCli(args, std::cout, std::cerr, hooks);
  // Every output is written and closed by now. Leave without the libraries'
  // exit handlers: OpenBLAS joins the worker threads it started when it was
  // loaded, and one that could not map its buffer (under ulimit -v) retries
  // forever, so a clean refusal would hang at exit.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}
