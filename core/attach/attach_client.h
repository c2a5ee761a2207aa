// Attaching to a served run (`run --serve`): connects, says hello, reads the
// run's description and returns a Run whose ranks are the served run's. Its
// events, losses, results and gate stops arrive from the server (from the
// start of the run: a late inspector catches up), so every query of a Run —
// trace(), losses(), wait(), stepControl() — answers as for a run started
// here. Cancelling the attached Run detaches (the served run goes on);
// RemoteGate::stopRun() stops the served run itself.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "attach/remote_gate.h"
#include "config/serve_address.h"
#include "engine/run.h"

namespace shardscope {

struct AttachOptions {
  ServeAddress address;
  std::string server_key;             // the server's public key (Z85); on 127.0.0.1 "" is this user's own
  std::filesystem::path config_dir;   // this user's CURVE identity (empty: shardscopeConfigDir())
  std::string name;                   // how the served run's log names this inspector
  std::chrono::milliseconds connect_timeout{5000};
};

struct AttachedRun {
  std::unique_ptr<Run> run;  // not started: start() begins receiving
  std::shared_ptr<RemoteGate> gate;
  bool steppable = false;    // the served run can be stepped (threads or processes)
  std::string launch;        // "threads" or "processes"
  std::string endpoint;
};

// Throws RunError naming the address when nothing answers within the
// timeout, the server refuses this inspector's key, or its description is bad.
AttachedRun attachToRun(const AttachOptions& options);

// "user@host (pid N)": the default inspector name.
std::string defaultInspectorName();

}  // namespace shardscope
