// `shardscope-cli analyze TRACE|DIR... [--json FILE] [--whole-trace] [--rank-of FILE=R] [--merge-unrelated]`:
// reads PyTorch profiler (Kineto) traces, one per rank, and prints per rank
// the steps, Holistic Trace Analysis' metrics (kernel time, idle / compute /
// non-compute %, comm/comp overlap %, idle time and queue length by stream,
// kernel breakdown, launch statistics), bytes and bus bandwidth per collective
// kind and the ten longest exposed communications; --json writes the same.
// It adds step times across ranks and the annotation breakdown; `--diff
// CONTROL TEST` compares two jobs instead (cli/analyze_diff.h).
// Memory snapshots and flight-recorder dumps go to cli/postmortem_analyze.h.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope {

// args: the words after "analyze". Exit codes: 0 ok, 2 a bad flag or trace.
int commandAnalyze(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace shardscope
