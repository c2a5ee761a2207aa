// The dependency graph of one profiled step of a job: HTA's CriticalPathAnalysis
// model (a start and an end node per CPU op and GPU event; edges for nesting and
// order on a thread, launches, order on a stream, stream waits and CPU-blocking
// syncs) for every rank, plus the edge HTA cannot draw: a matched collective ends
// on no rank before its last copy started (from that copy's start to an "arrived"
// node on every earlier copy). Node times: ns on the common clock since the set's
// origin. Every node but a rank's root (its ProfilerStep's start) has an in-edge.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kineto/clock_alignment.h"
#include "kineto/collective_match.h"
#include "kineto/trace_set.h"

namespace shardscope::kineto {

// What an activity's own time counts as on a path.
enum class CpActivityClass : uint8_t { Cpu, GpuCompute, GpuComm };

enum class CpEdgeKind : uint8_t {
  Body,         // a leaf activity's start -> end
  OpSelf,       // parent start -> first child start, child end -> next child start, last child end -> parent end
  ThreadGap,    // a top-level op's end -> the next top-level op's start on its thread: the thread idle
  Fork,         // the step thread's latest node at or before it -> another thread's first op
  Launch,       // a launch call's start -> its GPU event's start (by correlation)
  StreamOrder,  // a GPU event's end -> the next one's start on its stream
  StreamWait,   // cudaStreamWaitEvent: the other stream's last-launched event's end -> this stream's next start
  SyncWait,     // a GPU event's end -> a blocking sync call's end (cudaDeviceSynchronize, ...)
  Carry,        // the step's start -> a GPU event launched before the step and still queued or running
  Waiting,      // a collective copy's start -> its arrived node: the peers not all there yet
  CrossRank,    // the last copy's start (another rank's node) -> every earlier copy's arrived node
  Transfer,     // arrived -> the copy's end: the collective's own time
};

struct CpActivity {
  uint32_t event = 0;  // index into the rank's RankTrace::events
  uint32_t rank_index = 0;
  uint32_t start = 0, end = 0;  // node ids
  uint32_t launch = UINT32_MAX;  // GPU: the activity that launched it (UINT32_MAX: carried over)
  uint32_t body = UINT32_MAX;    // its Body edge (UINT32_MAX: an op with children)
  CpActivityClass cls = CpActivityClass::Cpu;
  bool carried = false;  // GPU event launched before the step
};

struct CpNode {
  int64_t t_ns = 0;
  uint32_t activity = 0;
  uint32_t rank_index = 0;
};

struct CpEdge {
  uint32_t from = 0, to = 0;
  CpEdgeKind kind = CpEdgeKind::Body;
  uint32_t activity = 0;  // whose time the edge is: the op (Body, OpSelf, SyncWait), the launch call, the collective
  int peer_rank = -1;     // Waiting, CrossRank: the rank whose copy started last
};

// One rank's part: its step's root and the node that bounds its end.
struct CpRankStep {
  uint32_t rank_index = 0;
  uint32_t step_event = 0;  // the ProfilerStep#N op
  uint32_t root = 0;        // node: the step op's start
  uint32_t sink = 0;        // node: the step op's end, or the end of a GPU event launched in the step if later
  int64_t start_ns = 0, end_ns = 0;
};

struct CpGraph {
  int64_t step = -1;
  std::vector<CpNode> nodes;
  std::vector<CpEdge> edges;
  // Each node's in-edges: in_ids[in_offsets[n] .. in_offsets[n + 1]) (edge ids).
  std::vector<uint32_t> in_offsets, in_ids;
  std::vector<CpActivity> activities;
  std::vector<CpRankStep> ranks;  // ranks that have the step, by rank index
  int64_t sync_edges = 0, stream_wait_edges = 0, cross_rank_edges = 0;
  // cudaStreamWaitEvent calls followed by a launch onto the waiting stream: those whose awaited GPU event
  // the trace's cuda_sync args named, and those whose it was inferred (traces without the args).
  int64_t stream_waits_from_args = 0, stream_waits_inferred = 0;
  int64_t host_collectives_skipped = 0;  // matched host-only (Gloo) collectives: no kernel to split
};

// The graph of ProfilerStep#`step` on every rank that has it.
CpGraph buildCriticalPathGraph(const TraceSet& set, const HostClocks& clocks, const CollectiveMatch& match,
                               int64_t step);

}  // namespace shardscope::kineto
