// A job's traces: files and folders of per-rank .json / .json.gz files,
// parsed in parallel, each rank from its distributedInfo.rank (file names are
// not reliable) or from an explicit FILE=RANK. Ranks of one host share a
// clock; the set is aligned on the earliest absolute timestamp of all ranks.
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
};

// Thrown by loadTraceSet when options.cancelled said so.
struct CancelledLoad : std::exception {
  const char* what() const noexcept override { return "the trace load was cancelled"; }
};

struct TraceSet {
  std::vector<RankTrace> ranks;  // by rank
  std::vector<TraceIndex> indexes;
  int64_t origin_ns = 0;  // earliest absolute start of any rank: the common time zero
};

// Whether a path is a PyTorch profiler job rather than a trace ShardScope
// wrote: a folder or a .json.gz always is; a .json when its first 64 KiB show
// Kineto's marks (bare-array form, schemaVersion, distributedInfo,
// deviceProperties, or a Kineto category such as "cpu_op" or "kernel").
// False for unreadable paths (the ShardScope reader then names the problem).
bool isKinetoTraceInput(const std::string& path);
bool looksLikeKinetoJson(std::string_view head);

// The trace files an input names: the file itself, or a folder's *.json and *.json.gz (sorted).
std::vector<std::string> expandTraceInputs(const std::vector<std::string>& inputs);

// Throws ConfigError naming the file on a bad file, a missing rank, or two files of one rank.
TraceSet loadTraceSet(const std::vector<std::string>& inputs, const TraceSetOptions& options = {});

}  // namespace shardscope::kineto
