// What `run` and `attach` write when a run ends: the trace, the flight-recorder
// dumps and (with a result) the summary that were asked for.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "config/run_config.h"
#include "engine/run.h"

namespace shardscope {

// Writes the trace and (with a result) the summary that were asked for, each
// on its own, so one that fails does not keep the other from being written.
// False when any failed. A result marked failed (resultOfFailedRun) is the
// summary of the steps that completed before the error.
bool writeOutputs(const Run& run, const RunResult* result, const RunConfig& config, std::ostream& out,
                  std::ostream& err);

// What a run that stopped on `error` completed (its losses, ledgers, traffic),
// marked failed with the error; nullopt when even that cannot be gathered.
std::optional<RunResult> resultOfFailedRun(Run& run, const std::string& error);

// --launch env, rank 0: a cluster launcher ends the job's processes soon
// after a stop (mpirun: SIGTERM to each rank's process group, SIGKILL about a
// quarter of a second later), too soon to write a long run. Forks: the child,
// in a session of its own that those signals do not reach, returns nullopt
// and runs the rank; this process stays the one the launcher knows, passes
// it the first stop signal, waits, and returns its exit code. nullopt in this
// process too when no child could be made (it runs the rank itself).
std::optional<int> runRankInOwnSession(std::ostream& out, std::ostream& err);

}  // namespace shardscope
