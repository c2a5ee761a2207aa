#include "cli/cli.h"

#include <chrono>
#include <cstdio>
#include <ostream>
#include <thread>

#include "analysis/run_summary.h"
#include "cli/analyze_command.h"
#include "cli/calc_command.h"
#include "cli/inspect_command.h"
#include "cli/profiles_command.h"
#include "common/errors.h"
#include "common/log.h"
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
  analyze   PyTorch profiler traces of a real job: HTA's metrics per rank (analyze --help)
  inspect   per rank of a trace: bucket firing order, FSDP unit states, peak memory (inspect TRACE.json)
  help      this text (run --help lists the run flags)
every command takes:
  --log-level LEVEL  trace, debug, info, warn, error or off [warn]; the log goes to stderr
  --log-file FILE    the log also goes to FILE (overwritten)
)";

// --log-level / --log-file, taken out of the arguments wherever they stand so
// no command sees them (they are not run settings: never in traces or
// summaries). While alive, the log goes to `err` and the file at that level.
class LogFlags {
 public:
  // Returns false, with *error set, on a bad value.
  bool take(std::vector<std::string>& args, std::string* error) {
    std::vector<std::string> rest;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a != "--log-level" && a != "--log-file") {
        rest.push_back(a);
        continue;
      }
      if (i + 1 >= args.size()) {
        *error = a + " needs a value";
        return false;
      }
      const std::string& value = args[++i];
      if (a == "--log-file") {
        m_file = value;
      } else if (const auto level = parseLogLevel(value)) {
        m_level = *level;
      } else {
        *error = "--log-level must be one of " + std::string(logLevelNames()) + ", got '" + value + "'";
        return false;
      }
    }
    args = std::move(rest);
    return true;
  }
  // Throws std::runtime_error when the file cannot be written.
  void install(std::ostream& err) {
    std::vector<spdlog::sink_ptr> sinks{makeLogStreamSink(err)};
    if (!m_file.empty()) sinks.push_back(makeLogFileSink(m_file));
    m_previous = logLevel();
    m_installed = true;
    setLogSinks(std::move(sinks));
    setLogLevel(m_level);
  }
  ~LogFlags() {
    if (!m_installed) return;
    flushLog();
    setLogSinks({stderrLogSink()});
    setLogLevel(m_previous);
  }

 private:
  spdlog::level::level_enum m_level = spdlog::level::warn, m_previous = spdlog::level::warn;
  std::string m_file;
  bool m_installed = false;
};

// At every breakpoint stop: where the ranks are and what they hold, then go on.
void printBreaks(Run& run, std::ostream& out) {
  std::vector<GatePoint> points;
  uint64_t printed = 0, stop = 0;
  while (!run.finished()) {
    if (!run.gate().stopped(&points, &stop) || stop == printed) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    const GatePoint& p = points[0];
    bool lockstep = true;
    for (const GatePoint& q : points) lockstep &= q == p;
    out << "break: step " << p.step << ", all " << points.size() << " ranks " << (lockstep ? "at" : "NOT in lockstep at")
        << " " << eventKindName(p.kind) << " " << run.spec().segmentName(p.block);
    if (p.unit >= 0) out << " (unit " << p.unit << ")";
    if (!lockstep)
      for (size_t r = 0; r < points.size(); ++r)
        out << " [rank " << r << ": " << eventKindName(points[r].kind) << " step " << points[r].step << " block "
            << points[r].block << " unit " << points[r].unit << "]";
    const LedgerSnapshot l = run.ledger(0);
    const auto mib = [](int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
    char line[160];
    std::snprintf(line, sizeof line, "; rank 0 holds gathered %.2f MiB, grad_full %.2f MiB, activations %.2f MiB\n",
                  mib(l.current[size_t(Category::Gathered)]), mib(l.current[size_t(Category::GradFull)]),
                  mib(l.current[size_t(Category::Activation)]));
    out << line;
    printed = stop;
    run.gate().resume();
  }
}

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
    if (!config.break_on.empty() || !config.break_units.empty()) {
      run.gate().enable();
      run.gate().setBreakpoints(breakEventKinds(config.break_on),
                                {config.break_units.begin(), config.break_units.end()});
      run.start();
      printBreaks(run, out);
      result = run.wait();
    } else {
      result = run.execute();
    }
  } catch (const RunError& e) {
    err << "error: run stopped: " << e.what() << "\n";
    if (!config.trace_path.empty()) {
      RunTrace trace = run.trace();
      writeChromeTraceFile(trace, config.trace_path);
      err << "trace of the stopped run written to " << config.trace_path << "\n";
    }
    return kExitRunFailed;
  }
  printSummaryText(result, out);
  if (!config.trace_path.empty()) {
    RunTrace trace = run.trace();
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

int runCli(const std::vector<std::string>& cli_args, std::ostream& out, std::ostream& err,
           const CliHooks& hooks) {
  std::vector<std::string> args = cli_args;
  LogFlags log_flags;
  std::string log_error;
  if (!log_flags.take(args, &log_error)) {
    err << "error: " << log_error << "\n";
    return kExitBadInput;
  }
  try {
    log_flags.install(err);
  } catch (const std::exception& e) {
    err << "error: --log-file " << e.what() << "\n";
    return kExitBadInput;
  }
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
    if (args[0] == "analyze") return commandAnalyze(rest, out, err);
    if (args[0] == "inspect") return commandInspect(rest, out, err);
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
  err << "error: unknown command '" << args[0] << "'; commands: run, devices, calc, profiles, analyze, inspect, help\n";
  return kExitBadInput;
}

}  // namespace shardscope
