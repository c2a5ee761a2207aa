// `shardscope-cli inspect TRACE.json`: reads a trace written by shardscope into
// the same EventStore and models the GUI's views use, and prints per rank the
// order its gradient buckets fired (BucketActivity), its FSDP units' states
// (UnitStates) and its peak bytes per memory category (MemorySeries).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope {

class EventStore;

// args: the arguments after "inspect". Exit codes: 0 ok, 2 bad input (one line on err).
int commandInspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The report for a store's run, as commandInspect prints it.
void printInspection(const EventStore& store, std::ostream& out);

std::string inspectUsage();

}  // namespace shardscope
