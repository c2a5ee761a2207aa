// A job's traces: files and folders of per-rank .json / .json.gz files,
// parsed in parallel, each rank from its distributedInfo.rank (file names are
// not reliable) or from an explicit FILE=RANK. Ranks of one host share a
// clock; the set is aligned on the earliest absolute timestamp of all ranks.
// Files that cannot be one job's (oneJobConflicts) are refused, or merged with warnings when asked.
// A lone file without distributedInfo.rank is rank 0 (said in notes); among several, one is refused.
#pragma once

#include <cstdint>
#include <functional>
#include <exception>
#include <map>
#include <string_view>
#include <string>
#include <vector>

#include "kineto/kineto_trace.h"
#include "kineto/trace_file.h"
#include "kineto/trace_index.h"

namespace shardscope::kineto {

struct TraceSetOptions {
  std::map<std::string, int> rank_of;  // file path -> rank, overrides the metadata
  uint64_t max_bytes = kMaxTraceBytes;
  unsigned threads = 0;  // 0: one per core, at most one per file
  std::function<void(const std::string&)> progress;  // a line per file read...
  uint64_t progress_min_bytes = 0;                    // ...of at least this much JSON
  // Polled before each file: true stops the load (a CancelledLoad is thrown).
  std::function<bool()> cancelled;
  // Files that cannot be one job's (oneJobConflicts): merged with warnings instead of refused.
  bool merge_unrelated = false;
};

// Thrown by loadTraceSet when options.cancelled said so.
struct CancelledLoad : std::exception {
  const char* what() const noexcept override { return "the trace load was cancelled"; }
};

struct TraceSet {
  std::vector<RankTrace> ranks;  // by rank
  std::vector<TraceIndex> indexes;
  int64_t origin_ns = 0;  // earliest absolute start of any rank: the common time zero
  // What the load decided that a reader should know, one line each ("warning: ..." for
  // what merge_unrelated let through; a lone rank-less file read as rank 0).
  std::vector<std::string> notes;
};

// Ranks of one job start their profiles within this of each other (ns).
inline constexpr int64_t kOneJobMaxStartSpreadNs = int64_t(3600) * 1'000'000'000;

// Whether rank traces can be one job's: the ranks of one job state one world
// size, give each process group of one name one size (distributedInfo.
// pg_config) and start their windows within an hour of each other. Files of
// two runs merged as one make every cross-rank figure (stragglers, skew)
// fiction. One line per conflict, naming the field, the two files and their
// values; empty when they can be one job. start_ns: each trace's earliest
// absolute timestamp (INT64_MAX when it has none), in the traces' order.
std::vector<std::string> oneJobConflicts(const std::vector<RankTrace>& ranks, const std::vector<int64_t>& start_ns);

// Whether a file's first bytes (inflated, for gzip) are a PyTorch profiler
// trace's rather than a trace ShardScope wrote: the bare-array form, or one
// of Kineto's marks (schemaVersion, distributedInfo, deviceProperties, a
// Kineto category such as "cpu_op" or "kernel"). input/input_detect.cpp asks
// (with the rule that a folder or a .gz name is a profiler job), for every front end.
bool looksLikeKinetoJson(std::string_view head);

// The trace files an input names: the file itself, or a folder's *.json and *.json.gz (sorted).
std::vector<std::string> expandTraceInputs(const std::vector<std::string>& inputs);

// Throws ConfigError naming the file on a bad file, a missing rank (of one of several files),
// two files of one rank, or files that cannot be one job's (unless merge_unrelated).
TraceSet loadTraceSet(const std::vector<std::string>& inputs, const TraceSetOptions& options = {});

}  // namespace shardscope::kineto
