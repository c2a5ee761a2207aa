// `shardscope-cli analyze` on what a broken job leaves behind: a PyTorch
// memory snapshot (pickle or JSON), the profiler's memory timeline export
// (kineto/memory_timeline.h) or a folder / list of flight-recorder dumps.
// analyze_command.cpp hands the inputs here when they are those.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "input/input_detect.h"

namespace shardscope {

// One input and the kind input/input_detect.h found: a memory snapshot, a
// memory timeline, a flight-recorder dump or a folder of them.
struct PostmortemFile {
  std::string path;
  InputKind kind;
};

// Prints the text report; with json_path, writes memory_snapshot /
// memory_timeline / flight_recorder JSON there. Returns the exit code (0, or 2 on bad input).
int analyzePostmortem(const std::vector<PostmortemFile>& inputs, const std::string& json_path, std::ostream& out,
                      std::ostream& err);

}  // namespace shardscope
