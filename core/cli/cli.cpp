#include "cli/cli.h"
#include "common/units.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <thread>

#include "analysis/run_memory.h"
#include "analysis/run_summary.h"
#include "attach/run_server.h"
#include "cli/analyze_command.h"
#include "cli/attach_command.h"
#include "cli/calc_command.h"
#include "cli/completion_command.h"
#include "common/exit_codes.h"
#include "cli/inspect_command.h"
#include "cli/profiles_command.h"
#include "cli/validate_command.h"
#include "cli/run_outputs.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/output_file.h"
#include "common/output_names.h"
#include "common/stop_signals.h"
#include "launch/launcher_env.h"
#include "launch/process_launcher.h"
#include "launch/worker.h"
#include "engine/run.h"
#include "postmortem/fr_dump_writer.h"
#include "trace/chrome_trace_writer.h"

namespace shardscope {

namespace {

// runCli's --log-file, for run's check that no two outputs name one file.
std::string g_cliLogFilePath;

const char* const kUsage = R"(usage: shardscope-cli COMMAND [flags]
commands:
  run       run real training steps on CPU ranks and report what they measured
  devices   list visible CUDA devices, their memory and the NCCL version
  calc      model-state memory per rank for each stage, and which stage fits (calc --help)
  profiles  hardware profiles for modeled timelines; --calibrate measures this machine
  analyze   PyTorch profiler traces of a real job: HTA's metrics per rank (analyze --help)
  inspect   per rank of a trace: bucket firing order, FSDP unit states, peak memory (inspect TRACE.json)
  attach    record a run served elsewhere (run --serve ADDR): attach ADDR --trace FILE (attach --help)
  validate  the modeled clock against published training runs: each prediction, its error (validate --help)
  keys      this user's public key for serving and attaching with CURVE; --authorize KEY lets an inspector in
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
  const std::string& file() const { return m_file; }
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
        << " " << eventKindName(p.kind);
    if (p.block >= 0) out << " " << run.spec().segmentName(p.block);
    if (p.unit >= 0) out << " (unit " << p.unit << ")";
    if (!lockstep)
      for (size_t r = 0; r < points.size(); ++r)
        out << " [rank " << r << ": " << eventKindName(points[r].kind) << " step " << points[r].step << " block "
            << points[r].block << " unit " << points[r].unit << "]";
    const LedgerSnapshot l = run.ledger(0);
    const auto held = [&l](Category c) { return bytesText(static_cast<double>(l.current[size_t(c)]), 2, ByteUnit::MiB); };
    out << "; rank 0 holds gathered " << held(Category::Gathered) << ", grad_full " << held(Category::GradFull)
        << ", activations " << held(Category::Activation) << "\n";
    printed = stop;
    run.gate().resume();
  }
}

// --force is the CLI's own switch (not a run setting: never in traces or
// presets): run even when the memory check says the machine is too small.
bool takeForce(std::vector<std::string>& args) {
  bool force = false;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--force") {
      force = true;
      continue;
    }
    rest.push_back(args[i]);
    // Every other run flag takes a value: a value that reads "--force" is left to it.
    if (args[i].rfind("--", 0) == 0 && args[i] != "--help" && i + 1 < args.size()) rest.push_back(args[++i]);
  }
  args = std::move(rest);
  return force;
}

int commandRun(const std::vector<std::string>& cli_args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> args = cli_args;
  const bool force = takeForce(args);
  RunConfig config;
  try {
    bool help = false;
    config = parseRunArgs(args, &help);
    if (help) {
      out << runUsage();
      return kExitOk;
    }
    // Found now, not after the whole run: outputs that cannot be written, a
    // run bigger than the machine.
    // Two outputs naming one file: one would silently replace the other.
    checkDistinctOutputs({{"--trace", config.trace_path, ""},
                          {"--summary", config.summary_path, ""},
                          {"--flight-recorder", config.flight_recorder_dir, postmortem::FrWriteOptions{}.prefix},
                          {"--log-file", g_cliLogFilePath, ""}});
    if (!config.trace_path.empty()) checkOutputFile("--trace", config.trace_path);
    if (!config.summary_path.empty()) checkOutputFile("--summary", config.summary_path);
    if (!config.flight_recorder_dir.empty()) postmortem::checkFlightRecorderDir(config.flight_recorder_dir);
    if (!force) checkRunFitsMachine(config, machineMemory(), "--force tries anyway");
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
  // --launch env: a cluster launcher started this process as one rank; it
  // takes part as a node of one rank, and rank 0 collects the run.
  LaunchOptions launch_options;
  if (config.launch == Launch::Env) {
    try {
      const bool ranks_given = std::find(args.begin(), args.end(), "--ranks") != args.end();
      const bool rdzv_id_given = std::find(args.begin(), args.end(), "--rdzv-id") != args.end();
      const LauncherEnv env = detectLauncherEnv(processEnvironment(),
                                                ranks_given ? std::optional<int>(config.ranks) : std::nullopt);
      placeLauncherRank(config, env, rdzv_id_given);
      validate(config);
      launch_options.local_rank = env.local_rank;
      launch_options.local_size = env.local_world;
      launch_options.node_word = "rank";
      launch_options.brief_stop = true;  // mpirun kills the other ranks soon after its SIGTERM
      out << launcherEnvText(env) << "; run '" << config.rdzv_id << "' meets at " << config.rdzv << "\n"
          << std::flush;
      // Rank 0 writes the run: it runs where the cluster launcher's kill
      // after a stop does not reach it.
      if (env.rank == 0)
        if (const std::optional<int> code = runRankInOwnSession(out, err)) return *code;
    } catch (const ConfigError& e) {
      err << "error: " << e.what() << "\n";
      return kExitBadInput;
    }
  }
  std::unique_ptr<Run> run;
  try {
    // Another node of a multi-node run only starts its ranks: node 0 collects them.
    if (config.launch == Launch::Processes && config.node_rank > 0)
      return runOtherNode(config, out, err, launch_options);
    run = std::make_unique<Run>(config);
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    err << "error: " << failureText(e) << "\n";
    return kExitRunFailed;
  }
  if (config.launch == Launch::Processes) run->setRemoteRanks(processLauncher(launch_options));
  // Node 0 of a --rdzv run: the other nodes leave a failed run only once the
  // outputs below are written; the store is cleaned after.
  JobEnd job_end(config);
  std::unique_ptr<RunServer> server;
  if (!config.serve.empty()) {
    try {
      server = serveRun(*run, out);
    } catch (const std::exception& e) {
      err << "error: " << failureText(e) << "\n";
      return kExitRunFailed;
    }
  }
  // Inspectors get the run's end as this command reports it.
  const auto endServing = [&](const RunResult* result, const std::string& error) {
    if (server) server->finish(result, error);
  };
  // SIGINT, SIGTERM, SIGHUP stop the run as the Stop button does; what ran is
  // written below, marked interrupted.
  const StopSignalScope on_signal([r = run.get()] { r->cancel(); });
  if (server && config.serve_wait_s > 0) {
    out << "waiting up to " << config.serve_wait_s << " s for an inspector before the ranks start\n" << std::flush;
    if (!server->waitForInspector(std::chrono::seconds(config.serve_wait_s)))
      out << "no inspector attached within " << config.serve_wait_s << " s: starting anyway\n" << std::flush;
  }
  RunResult result;
  try {
    if (!config.break_on.empty() || !config.break_units.empty()) {
      run->gate().enable();
      run->gate().setBreakpoints(breakEventKinds(config.break_on),
                                 {config.break_units.begin(), config.break_units.end()});
      run->start();
      printBreaks(*run, out);
      result = run->wait();
    } else {
      result = run->execute();
    }
  } catch (const RunError& e) {
    err << "error: run stopped: " << e.what() << "\n";
    // What completed is kept: the summary of those steps, marked failed.
    const std::optional<RunResult> partial = resultOfFailedRun(*run, e.what());
    writeOutputs(*run, partial ? &*partial : nullptr, config, out, err);
    job_end.written(e.what());
    endServing(nullptr, e.what());
    return kExitRunFailed;
  } catch (const RunAborted&) {
    const int signal = stopSignalReceived();
    if (signal == 0 && server && !server->stoppedBy().empty()) {
      result = run->resultSoFar();
      result.interrupted = RunInterruption{"inspector", static_cast<int>(result.losses.size())};
      err << "error: run stopped by inspector " << server->stoppedBy() << " during step " << result.interrupted->at_step
          << ": writing what the " << result.losses.size() << " completed steps measured\n";
      printSummaryText(result, out);
      writeOutputs(*run, &result, config, out, err);
      endServing(&result, "");
      return kExitRunFailed;
    }
    if (signal == 0) {
      err << "error: run stopped: cancelled\n";
      endServing(nullptr, "cancelled");
      return kExitRunFailed;
    }
    result = run->resultSoFar();
    result.interrupted = RunInterruption{signalName(signal), static_cast<int>(result.losses.size())};
    err << "interrupted by " << result.interrupted->by << " during step " << result.interrupted->at_step
        << ": writing what the " << result.losses.size() << " completed steps measured (again to exit at once)\n";
    printSummaryText(result, out);
    writeOutputs(*run, &result, config, out, err);
    job_end.written("interrupted by " + result.interrupted->by);
    endServing(&result, "");
    return exitCodeForSignal(signal);
  } catch (const ResourceError& e) {  // the run's first thread
    err << "error: " << e.what() << "\n";
    endServing(nullptr, e.what());
    return kExitRunFailed;
  }
  printSummaryText(result, out);
  const bool written = writeOutputs(*run, &result, config, out, err);
  endServing(&result, "");
  return written ? kExitOk : kExitOutputFailed;
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

namespace {
int runCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const CliHooks& hooks);
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
  g_cliLogFilePath = log_flags.file();
  const int code = runCommand(args, out, err, hooks);
  g_cliLogFilePath.clear();
  // The log file's writes are checked as they go; the first failure is the
  // command's too (the log is an output: a command whose log was lost did not succeed).
  flushLog();
  if (const std::string failure = logFileFailure(); !failure.empty()) {
    err << "error: --log-file " << failure << "\n";
    return code == kExitOk ? kExitOutputFailed : code;
  }
  return code;
}

namespace {

int runCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const CliHooks& hooks) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    out << kUsage << exitCodesText();
    return args.empty() ? kExitBadInput : kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (args[0] == "run") return commandRun(rest, out, err);
    if (args[0] == "worker") {  // started by `run --launch processes`, one per rank
      RunConfig config;
      const WorkerArgs worker = parseWorkerArgs(rest, &config);
      return runWorker(config, worker, err);
    }
    if (args[0] == "devices") return commandDevices(rest, out, err, hooks);
    if (args[0] == "calc") return commandCalc(rest, out, err);
    if (args[0] == "profiles") return commandProfiles(rest, out, err);
    if (args[0] == "validate") return commandValidate(rest, out, err);
    if (args[0] == "analyze") return commandAnalyze(rest, out, err);
    if (args[0] == "inspect") return commandInspect(rest, out, err);
    if (args[0] == "attach") return commandAttach(rest, out, err);
    if (args[0] == "keys") return commandKeys(rest, out, err);
    if (args[0] == "completion") return commandCompletion(rest, out, err);  // hidden: the package's build
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
  err << "error: unknown command '" << args[0] << "'; commands: run, devices, calc, profiles, validate, analyze, inspect, attach, keys, help\n";
  return kExitBadInput;
}

}  // namespace

}  // namespace shardscope
