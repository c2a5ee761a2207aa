// Critical path of one profiled step, per rank, over the cross-rank dependency
// graph (critical_path_graph.h): from the node that bounds the rank's step end,
// back through each node's latest-finishing predecessor to the step's start. The
// path stays on its rank: where a collective's latest predecessor is another
// rank's copy starting, the time before that start is "waiting for rank K".
// Its segments tile the step, so the categories sum to the step time exactly.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "kineto/clock_alignment.h"
#include "kineto/trace_set.h"

namespace shardscope::kineto {

enum class PathCategory : uint8_t { Compute, Communication, LaunchCpu, Idle, WaitingForRank };
inline constexpr size_t kPathCategories = 5;
// "compute", "communication", "launch_cpu", "idle", "waiting_for_rank" (the JSON keys).
std::string_view pathCategoryName(PathCategory c);

struct PathSegment {
  int rank = -1;
  std::string kind;  // "kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "user_annotation", "cuda_runtime", "cuda_driver",
                     // "launch_delay", "sync_wait", "gap"
  std::string name;
  int64_t start_ns = 0, dur_ns = 0;  // common clock, ns since the set's origin
  PathCategory category = PathCategory::Idle;
  int peer_rank = -1;  // waiting_for_rank: the rank whose copy started last
  int64_t event = -1;  // the rank's RankTrace::events index of the op whose time it is; -1 for a gap
};

struct RankCriticalPath {
  int rank = -1;
  int64_t start_ns = 0, end_ns = 0;  // the step's start and the end that bounds it (common clock)
  std::array<int64_t, kPathCategories> by_category{};  // ns; they sum to end_ns - start_ns
  int64_t segment_count = 0;
  std::vector<PathSegment> segments;  // by time; only on the shown rank's path (CriticalPath::shown)
  int64_t totalNs() const { return end_ns - start_ns; }
};

struct CriticalPathOptions {
  int64_t step = -1;  // ProfilerStep number; -1: the last step every rank has analysed (HTA's convention)
  int rank = -1;      // the rank whose path is shown; -1: the rank whose step ends last (ties: the lowest)
  bool whole_trace = false;  // the last step counts too (HTA leaves it out when there are two or more)
};

struct CriticalPath {
  std::string unavailable;  // why there is no path ("" when there is)
  int64_t step = -1;
  bool step_chosen = false, rank_chosen = false;
  std::vector<RankCriticalPath> ranks;  // every rank that has the step, by rank (categories; segments: the shown one)
  size_t shown = 0;                     // index into ranks: the path reported in detail
  int64_t nodes = 0, edges = 0, sync_edges = 0, stream_wait_edges = 0, cross_rank_edges = 0;
  int64_t host_collectives_skipped = 0;
  int64_t stream_waits_from_args = 0, stream_waits_inferred = 0;  // CpGraph's
  const RankCriticalPath* shownPath() const { return ranks.empty() ? nullptr : &ranks[shown]; }
};

// Segments analyze --json lists (the longest, in time order), and the text's top list.
inline constexpr size_t kCriticalPathJsonSegments = 200;
inline constexpr size_t kCriticalPathTextSegments = 10;

// Throws ConfigError when options name a step or rank the traces do not have.
// Hosts' clocks aligned as collective_skew.h does (alignHostClocks).
CriticalPath computeCriticalPath(const TraceSet& set, const CriticalPathOptions& options);

// The ops on the shown rank's path (PathSegment::event, gaps left out), ascending and each once:
// what the timeline highlights (an imported trace's Event::op is the same index).
std::vector<int64_t> criticalPathOps(const CriticalPath& path);

// How the stream waits' awaited GPU events were found: "trace_args" (the cuda_sync events'
// wait_on_stream / wait_on_cuda_event_record_corr_id), "heuristic" (the event last launched onto
// another stream), "trace_args_and_heuristic", or "none" (no stream waits).
std::string_view streamWaitsFrom(const CriticalPath& path);

void printCriticalPathText(const CriticalPath& path, std::ostream& out);
void writeCriticalPathJson(const CriticalPath& path, std::ostream& out);

}  // namespace shardscope::kineto
