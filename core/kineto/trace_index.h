// What one rank's trace says beyond its raw events: profiler steps, which
// launch started which GPU event (args.correlation), each collective
// identified from the CPU side (kernel -> correlation -> launch -> the
// enclosing nccl:* / record_param_comms / c10d::* op and its args), and the
// memory series' baseline and peaks. Built once after parsing.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "common/collective.h"
#include "kineto/torch_dtype.h"
#include "kineto/kineto_trace.h"

namespace shardscope::kineto {

struct ProfilerStep {
  int64_t number = 0;  // N of ProfilerStep#N
  uint32_t event = kNone;
};

struct TraceCollective {
  uint32_t kernel = kNone;  // the GPU event (kNone: a host-only collective, e.g. Gloo)
  uint32_t op = kNone;      // the CPU op carrying the args, kNone when none was found
  Collective kind = Collective::Unknown;
  bool from_args = false;   // kind and size from "Collective name" etc., not from names
  bool bytes_from_dims = false;  // sized from "Input Dims" x "Input type" (older traces)
  int64_t bytes = -1;       // elements x dtype size; -1 when the trace does not say
  int32_t group_size = -1;
  uint32_t pg_name = StringTable::kEmpty;
  int64_t seq = -1;         // "Seq" of the op carrying the args: its number in the process group
  int64_t ts_ns = 0, dur_ns = 0;  // of the kernel (or the host op)
  // A coalesced group (batch_isend_irecv, a _coalescing_manager block: nccl:coalesced or a
  // record_param_comms "coalesced" around one ncclDevKernel_SendRecv launch), counted once: its
  // point-to-point ops before it on its thread, and bytes their sum (sends plus receives).
  bool coalesced = false;
  int32_t coalesced_ops = 0;
};

struct TraceIndex {
  std::vector<ProfilerStep> steps;  // by start time
  std::vector<TraceCollective> collectives;  // by start time
  std::unordered_map<int64_t, uint32_t> launch_of_correlation;  // cuda_runtime / cuda_driver event
  std::vector<uint32_t> collective_of_event;  // event -> index into collectives, kNone; GPU events only when sized
  int64_t memory_baseline = 0;  // allocated before the window: first total minus first delta
  int64_t peak_allocated = -1, peak_reserved = -1;
};

TraceIndex buildTraceIndex(const RankTrace& trace);

// ProfilerStep#N -> N (HTA's pattern ^ProfilerStep#(\d+)); -1 for other names,
// kStepNumberTooLarge when N is beyond int64 (buildTraceIndex refuses the trace).
inline constexpr int64_t kStepNumberTooLarge = -2;
int64_t profilerStepNumber(std::string_view name);
bool isCollectiveOpName(std::string_view name);
bool isGpuKind(EventKind kind);

}  // namespace shardscope::kineto
