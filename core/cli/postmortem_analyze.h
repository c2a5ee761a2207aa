// `shardscope-cli analyze` on what a broken job leaves behind: a PyTorch
// memory snapshot (pickle or JSON), the profiler's memory timeline export
// (kineto/memory_timeline.h) or a folder / list of flight-recorder dumps.
// analyze_command.cpp hands the inputs here when they are those.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope {

// True when every input is a memory snapshot, a memory timeline or a
// flight-recorder dump (or a folder of dumps); false when none is. Mixed inputs: sets `mixed`.
bool postmortemInputs(const std::vector<std::string>& inputs, bool& mixed);

// Prints the text report; with json_path, writes memory_snapshot /
// memory_timeline / flight_recorder JSON there. Returns the exit code (0, or 2 on bad input).
int analyzePostmortem(const std::vector<std::string>& inputs, const std::string& json_path, std::ostream& out,
                      std::ostream& err);

}  // namespace shardscope
