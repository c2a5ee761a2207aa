// What `run` and `attach` write when a run ends: the trace and (with a
// result) the summary that were asked for.
#pragma once

#include <ostream>

#include "config/run_config.h"
#include "engine/run.h"

namespace shardscope {

// Writes the trace and (with a result) the summary that were asked for, each
// on its own, so one that fails does not keep the other from being written.
// False when any failed.
bool writeOutputs(const Run& run, const RunResult* result, const RunConfig& config, std::ostream& out,
                  std::ostream& err);

}  // namespace shardscope
