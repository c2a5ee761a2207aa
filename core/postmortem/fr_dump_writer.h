// ShardScope's own flight-recorder dumps: a finished or failed run's
// collectives, per rank, in PyTorch's flight-recorder format (version 2.10,
// one pickle per rank named <prefix><rank>), so a hang ShardScope stopped ends
// in the same diagnosis a real job's dumps get. Derived from the trace's events
// alone: a collective is "completed" when every member of its group entered it
// with the same fingerprint, else "started" (a rank waiting in it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "postmortem/flight_recorder.h"
#include "postmortem/value_tree.h"
#include "trace/run_trace.h"

namespace shardscope::postmortem {

struct FrWriteOptions {
  size_t ring = 2000;              // entries kept per rank (TORCH_FR_BUFFER_SIZE's default)
  std::string prefix = "nccl_trace_rank_";  // TORCH_FR_DUMP_TEMP_FILE's default
  // Wall time of the run's t = 0 (ns since 1970); nullopt: now minus the run's
  // length. 0 keeps the run's own clock (the window's ladder: the same figure every time).
  std::optional<int64_t> epoch_ns;
};

// One dump per rank of the run, as the plain data PyTorch pickles (rank order).
std::vector<ValueTree> flightRecorderTrees(const RunTrace& trace, const FrWriteOptions& options = {});

// The same dumps as the reader gives them (what the window's ladder shows for a run on screen).
std::vector<FrRankDump> flightRecorderDumps(const RunTrace& trace, const FrWriteOptions& options = {});

// Before a run: throws ConfigError when `dir` is a file, or cannot be created.
void checkFlightRecorderDir(const std::string& dir);

// Writes every rank's dump into `dir` (created if missing) and returns the
// paths written. Throws ConfigError naming the file that cannot be written.
std::vector<std::string> writeFlightRecorderDumps(const RunTrace& trace, const std::string& dir,
                                                  const FrWriteOptions& options = {});

}  // namespace shardscope::postmortem
