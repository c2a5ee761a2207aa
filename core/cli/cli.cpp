#include "cli/cli.h"

#include <ostream>

#include "analysis/run_summary.h"
#include "cli/calc_command.h"
#include "cli/profiles_command.h"
#include "common/errors.h"
#include "engine/run.h"
#include "trace/chrome_trace_writer.h"

namespace shardscope {

namespace {

constexpr int kExitOk = 0, kExitBadInput = 2, kExitRunFailed = 3;

const char* const kUsage = R"(usage: shardscope-cli COMMAND [flags]
commands:
  run       run real training steps on CPU ranks and report what they measured
  devices   list visible CUDA devices, their memory and the NCCL version
  calc      model-state memory per rank for each stage, and which stage fits (calc --help)
  profiles  hardware profiles for modeled timelines; --calibrate measures this machine
  help      this text (run --help lists the run flags)
)";

int commandRun(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  RunConfig config;
  try {
    bool help = false;
    config = parseRunArgs(args, &help);
    if (help) {
      out << runUsage();
      return kExitOk;
    }
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
  Run run(config);
  RunResult result;
  try {
    result = run.execute();
  } catch (const RunError& e) {
    err << "error: run stopped: " << e.what() << "\n";
    if (!config.trace_path.empty()) {
      RunTrace trace = run.trace();
      trace.config_json = configJson(config);
      writeChromeTraceFile(trace, config.trace_path);
      err << "trace of the stopped run written to " << config.trace_path << "\n";
    }
    return kExitRunFailed;
  }
  printSummaryText(result, out);
  if (!config.trace_path.empty()) {
    RunTrace trace = run.trace();
    trace.config_json = configJson(config);
    writeChromeTraceFile(trace, config.trace_path);
    out << "trace written to " << config.trace_path << " (open in ui.perfetto.dev or shardscope)\n";
  }
  if (!config.summary_path.empty()) {
    writeSummaryFile(result, config.summary_path);
    out << "summary written to " << config.summary_path << "\n";
  }
  return kExitOk;
}

int commandDevices(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                   const CliHooks& hooks) {
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--json") {
      json = true;
    } else {
      err << "error: devices takes only --json, got '" << a << "'\n";
      return kExitBadInput;
    }
  }
  if (!hooks.devices_report) {
    if (json) out << R"({"cuda_built": false, "devices": []})" << "\n";
    else out << "built without CUDA (SHARDSCOPE_CUDA=OFF, or nvcc/NCCL not found at configure time)\n";
    return kExitOk;
  }
  out << hooks.devices_report(json);
  return kExitOk;
}

}  // namespace

int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
           const CliHooks& hooks) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    out << kUsage;
    return args.empty() ? kExitBadInput : kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (args[0] == "run") return commandRun(rest, out, err);
    if (args[0] == "devices") return commandDevices(rest, out, err, hooks);
    if (args[0] == "calc") return commandCalc(rest, out, err);
    if (args[0] == "profiles") return commandProfiles(rest, out, err);
    if (args[0] == "--version") {
      out << "shardscope-cli " << SHARDSCOPE_VERSION << "\n";
      return kExitOk;
    }
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return kExitRunFailed;
  }
  err << "error: unknown command '" << args[0] << "'; commands: run, devices, calc, profiles, help\n";
  return kExitBadInput;
}

}  // namespace shardscope
