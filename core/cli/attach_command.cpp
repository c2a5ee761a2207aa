#include "cli/attach_command.h"

#include "analysis/run_summary.h"
#include "attach/attach_client.h"
#include "attach/curve_keys.h"
#include "cli/run_outputs.h"
#include "common/errors.h"
#include "common/exit_codes.h"
#include "common/output_file.h"
#include "common/output_names.h"
#include "common/stop_signals.h"
#include "config/serve_address.h"

namespace shardscope {

namespace {
const char* const kAttachUsage = R"(usage: shardscope-cli attach ADDR [--trace FILE] [--summary FILE] [--server-key KEY]
                             [--name NAME] [--timeout S]
Records a run served elsewhere (shardscope-cli run ... --serve ADDR) from the start of
the run, whenever it is attached, until it ends; then writes its trace and summary as
the run itself would. Ctrl-C detaches (the run goes on) and writes what came so far.
  ADDR              PORT, HOST:PORT or tcp://HOST:PORT (a bare port is 127.0.0.1's)
  --trace FILE      write the run's Chrome/Perfetto trace (JSON)
  --summary FILE    write the run's summary (JSON)
  --server-key KEY  the serving user's public key (`shardscope-cli keys` there); needed
                    for any address but 127.0.0.1, where your own key is the default (every
                    address is served with CURVE: another account must be authorized)
  --name NAME       how the serving run's log names this inspector [user@host (pid N)]
  --timeout S       seconds to wait for the run to answer [5]
)";

const char* const kKeysUsage = R"(usage: shardscope-cli keys [--authorize KEY [NAME]] [--list]
This user's CURVE identity (made on first use, readable by you alone), for serving runs (on
every address, 127.0.0.1 too) and for attaching to them:
  (no flag)               print the public key: give it to whoever serves runs you attach to,
                          or pass it as --server-key to attach to runs you serve
  --authorize KEY [NAME]  let the inspector with public key KEY attach to the runs you serve
  --list                  the inspectors' keys authorized so far
)";

std::string takeValue(const std::vector<std::string>& args, size_t& i) {
  if (i + 1 >= args.size()) throw ConfigError(args[i] + " needs a value");
  return args[++i];
}
}  // namespace

std::unique_ptr<RunServer> serveRun(Run& run, std::ostream& out) {
  ServeOptions options;
  options.address = parseServeAddress(run.config().serve, "--serve", true);
  options.config_dir = shardscopeConfigDir();
  auto server = std::make_unique<RunServer>(run, options);
  if (server->steppable()) run.gate().enable();  // Pause must work whenever an inspector asks
  std::string where = server->endpoint();
  if (where.rfind("tcp://", 0) == 0) where = where.substr(6);
  // Every address is served with CURVE; the serving user's own key is authorized.
  out << "serving the run at " << server->endpoint() << " with CURVE keys (yours and " << server->authorizedKeys()
      << " inspector key" << (server->authorizedKeys() == 1 ? "" : "s") << " authorized in "
      << authorizedKeysPath(options.config_dir).string() << ")";
  if (server->secured()) {
    out << ": attach with `shardscope --attach " << where << " --server-key '" << server->publicKey() << "'`\n";
    if (server->authorizedKeys() == 0)
      out << "only your own identity is authorized: authorize another inspector with "
             "`shardscope-cli keys --authorize 'KEY'` (KEY: `shardscope-cli keys` on the inspector's machine; quote it, Z85 has shell characters)\n";
  } else {
    out << ": attach as this user with `shardscope --attach " << where << "` or `shardscope-cli attach " << where
        << " --trace FILE`; other accounts need their key authorized and --server-key '" << server->publicKey()
        << "'\n";
  }
  out << std::flush;
  server->start();
  return server;
}

int commandAttach(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  AttachOptions options;
  RunConfig outputs;
  std::string address;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        out << kAttachUsage;
        return kExitOk;
      }
      if (a == "--trace") {
        outputs.trace_path = takeValue(args, i);
        checkOutputFile("--trace", outputs.trace_path);
      } else if (a == "--summary") {
        outputs.summary_path = takeValue(args, i);
        checkOutputFile("--summary", outputs.summary_path);
      } else if (a == "--server-key") {
        options.server_key = takeValue(args, i);
        if (!isCurveKey(options.server_key))
          throw ConfigError("--server-key must be a public key (40 Z85 characters, as `shardscope-cli keys` prints "
                            "it on the serving machine), got '" + options.server_key + "'");
      } else if (a == "--name") {
        options.name = takeValue(args, i);
        if (options.name.empty() || options.name.size() > 200) throw ConfigError("--name must be 1..200 characters");
      } else if (a == "--timeout") {
        const std::string v = takeValue(args, i);
        size_t used = 0;
        double seconds = 0;
        try {
          seconds = std::stod(v, &used);
        } catch (const std::exception&) {
        }
        if (used != v.size() || !(seconds >= 0.1 && seconds <= 3600))
          throw ConfigError("--timeout must be seconds in 0.1..3600, got '" + v + "'");
        options.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
      } else if (a.rfind("--", 0) == 0) {
        throw ConfigError("unknown attach flag '" + a + "' (attach --help lists them)");
      } else if (address.empty()) {
        address = a;
      } else {
        throw ConfigError("attach takes one address, got '" + address + "' and '" + a + "'");
      }
    }
    if (address.empty()) throw ConfigError("attach needs the address of a served run (attach --help)");
    checkDistinctOutputs({{"--trace", outputs.trace_path, ""}, {"--summary", outputs.summary_path, ""}});
    options.address = parseServeAddress(address, "attach ADDR", false);
    options.config_dir = shardscopeConfigDir();
    if (options.address.secured && options.server_key.empty())
      throw ConfigError("attaching to " + options.address.host +
                        " needs --server-key KEY: the serving machine's public key (`shardscope-cli keys` there)");
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }

  AttachedRun attached;
  try {
    attached = attachToRun(options);
  } catch (const std::exception& e) {
    err << "error: " << failureText(e) << "\n";
    return kExitRunFailed;
  }
  Run& run = *attached.run;
  const RunConfig& config = run.config();
  RunConfig written = config;
  written.trace_path = outputs.trace_path;
  written.summary_path = outputs.summary_path;
  out << "attached to " << attached.endpoint << ": " << strategyName(config.strategy) << ", " << config.ranks
      << " ranks (" << attached.launch << "), " << config.steps << " steps; recording from the start of the run\n"
      << std::flush;
  const StopSignalScope on_signal([r = &run] { r->cancel(); });  // detach: the served run goes on
  RunResult result;
  try {
    result = run.execute();
  } catch (const RunError& e) {
    err << "error: the served run stopped: " << e.what() << "\n";
    const std::optional<RunResult> partial = resultOfFailedRun(run, e.what());
    writeOutputs(run, partial ? &*partial : nullptr, written, out, err);
    return kExitRunFailed;
  } catch (const RunAborted&) {
    result = run.resultSoFar();
    const int signal = stopSignalReceived();
    if (signal != 0) {
      err << "detached (" << signalName(signal) << ") after " << result.losses.size()
          << " completed steps; the served run goes on: writing what came so far\n";
      writeOutputs(run, &result, written, out, err);
      return exitCodeForSignal(signal);
    }
    result.interrupted = RunInterruption{"the served run's stop", static_cast<int>(result.losses.size())};
    err << "the served run stopped before its last step: writing what its " << result.losses.size()
        << " completed steps measured\n";
    printSummaryText(result, out);
    writeOutputs(run, &result, written, out, err);
    return kExitRunFailed;
  }
  printSummaryText(result, out);
  return writeOutputs(run, &result, written, out, err) ? kExitOk : kExitOutputFailed;
}

int commandKeys(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    const auto dir = shardscopeConfigDir();
    if (args.empty()) {
      bool made = false;
      const CurveKeyPair identity = loadOrMakeIdentity(dir, &made);
      if (made) err << "made a new CURVE identity in " << (dir / "curve" / "identity").string() << " (mode 0600)\n";
      out << identity.public_key << "\n";
      if (made) err << "(quote it on a command line: Z85 keys hold characters such as * [ ] < > that a shell expands)\n";
      return kExitOk;
    }
    if (args[0] == "--help" || args[0] == "-h") {
      out << kKeysUsage;
      return kExitOk;
    }
    if (args[0] == "--list" && args.size() == 1) {
      for (const AuthorizedKey& k : loadAuthorizedKeys(dir)) out << k.key << (k.name.empty() ? "" : " " + k.name) << "\n";
      return kExitOk;
    }
    if (args[0] == "--authorize" && (args.size() == 2 || args.size() == 3)) {
      const bool added = authorizeKey(dir, args[1], args.size() == 3 ? args[2] : "");
      out << (added ? "authorized " : "already authorized ") << args[1] << " in " << authorizedKeysPath(dir).string()
          << "\n";
      return kExitOk;
    }
    err << "error: keys takes no flag, --list, or --authorize KEY [NAME]; got '" << args[0] << "'\n" << kKeysUsage;
    return kExitBadInput;
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    err << "error: " << failureText(e) << "\n";
    return kExitRunFailed;
  }
}

}  // namespace shardscope
