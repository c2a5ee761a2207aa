// `shardscope-cli analyze --diff CONTROL TEST [--diff-csv FILE] [--json FILE]`:
// two PyTorch profiler jobs (each a trace file or a folder of per-rank
// traces) compared op by op and kernel by kernel, per profiled step of one
// rank (kineto/trace_diff.h); the text table to stdout, every row as CSV with
// --diff-csv, and {"trace_diff": ...} with --json.
#pragma once

#include <iosfwd>
#include <string>

#include "kineto/trace_set.h"

namespace shardscope {

struct AnalyzeDiffRequest {
  std::string control, test;  // a trace file or a folder each
  std::string json_path, csv_path;
  kineto::TraceSetOptions load;  // rank_of entries go to the side whose files they name
};

// Exit codes: 0 ok, 2 a bad side (named CONTROL or TEST with its path), 4 an output that cannot be written.
int analyzeDiff(const AnalyzeDiffRequest& request, std::ostream& out, std::ostream& err);

}  // namespace shardscope
