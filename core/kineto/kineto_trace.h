// One rank's PyTorch profiler (Kineto) trace as read from its file: a compact
// record per event (names interned), the few args the analyses need in side
// tables, and the file's metadata. Times are integer nanoseconds exactly as
// written (relative to base_time_ns when the file has baseTimeNanoseconds).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kineto/string_table.h"

namespace shardscope::kineto {

inline constexpr uint32_t kNone = UINT32_MAX;

// What an event is, from its "cat" (and name, for memory instants and
// metadata). Kernel..CudaSync run on the GPU; the rest on the host.
enum class EventKind : uint8_t {
  Other,
  Kernel,             // cat "kernel"
  GpuMemcpy,          // cat "gpu_memcpy"
  GpuMemset,          // cat "gpu_memset"
  GpuUserAnnotation,  // cat "gpu_user_annotation"
  CudaSync,           // cat "cuda_sync"
  CpuOp,              // cat "cpu_op" (and "Operator" in the older autograd-profiler format)
  UserAnnotation,     // cat "user_annotation"
  CudaRuntime,        // cat "cuda_runtime"
  CudaDriver,         // cat "cuda_driver"
  PythonFunction,     // cat "python_function"
  Flow,               // cat "ac2g" / "async_cpu_to_gpu" (ph s/f), id = correlation
  MemoryInstant,      // name "[memory]"
  OutOfMemory,        // name "[OutOfMemory]"
  ProfilerTrace,      // cat "Trace" (the profiler's own span; HTA drops it)
};

enum EventFlags : uint8_t {
  kHasTs = 1,
  kHasDur = 2,
  kHasCat = 4,
  kTsFloat = 8,  // ts was written as a float ("12.5", "1e3")
};

// 48 bytes: the retained record of every non-metadata event.
struct TraceEvent {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;        // 0 when the event has no dur (see kHasDur)
  int64_t correlation = -1;  // args.correlation; a flow's id; -1 when absent
  uint32_t name = StringTable::kEmpty;
  uint32_t track = 0;      // index into RankTrace::tracks: the (pid, tid) it sits on
  int32_t stream = -1;     // args.stream when an integer (HTA's rule), else -1
  uint32_t extra = kNone;  // index into collective_args (ops, kernels), memory (instants) or sync_args (cuda_sync)
  uint16_t cat = 0;        // index into RankTrace::categories
  char ph = 0;
  EventKind kind = EventKind::Other;
  uint8_t flags = 0;

  bool has(EventFlags f) const { return (flags & f) != 0; }
  int64_t endNs() const { return ts_ns + dur_ns; }
};
static_assert(sizeof(TraceEvent) <= 48, "keep the per-event record within 48 bytes");

// Args of a collective op (nccl:*, record_param_comms, c10d::*) or of a
// kernel that carries them (newer traces copy them onto the kernel).
struct CollectiveArgs {
  uint32_t collective_name = StringTable::kEmpty;  // "Collective name"
  uint32_t dtype = StringTable::kEmpty;
  uint32_t pg_name = StringTable::kEmpty;   // "Process Group Name"
  uint32_t pg_ranks = StringTable::kEmpty;  // "Process Group Ranks", a JSON string "[0, 1]"
  uint32_t input_dims = StringTable::kEmpty;   // "Input Dims" (raw JSON), older traces: [[2049000]]
  uint32_t input_types = StringTable::kEmpty;  // "Input type" (raw JSON): ["float"]
  int64_t in_nelems = -1, out_nelems = -1;
  int64_t seq = -1;  // "Seq": the collective's sequence number in its process group; -1 when absent
  int32_t group_size = -1;
};

// What a cuda_sync event ("Stream Wait Event", "Event Sync") says it waited
// for, in traces of PyTorch >= 2.2 with CUPTI sync activity: the stream the
// awaited CUDA event was recorded on and the correlation of the cudaEventRecord
// call that recorded it (Kineto's wait_on_stream and
// wait_on_cuda_event_record_corr_id; -1 when absent or -1 in the trace).
struct SyncArgs {
  int64_t record_correlation = -1;
  int32_t wait_on_stream = -1;
};

// A "[memory]" or "[OutOfMemory]" instant event's args (its time is the event's).
struct MemorySample {
  int64_t bytes = 0;  // signed: negative on a free
  int64_t total_allocated = -1, total_reserved = -1;
  uint64_t addr = 0;  // 0 when absent or beyond 64 bits (then in big_integers)
  uint32_t event = kNone;  // index into events
  uint32_t tid = StringTable::kEmpty;
  int16_t device_type = -1, device_id = -1;
};

// A (pid, tid) pair as written (their texts interned): a process and thread, or a device and stream.
struct Track {
  uint32_t pid = StringTable::kEmpty;
  uint32_t tid = StringTable::kEmpty;
};

// An integer argument beyond int64 (they occur in real traces): kept as text.
struct BigInteger {
  uint32_t field = StringTable::kEmpty;
  uint32_t text = StringTable::kEmpty;
  uint64_t byte_offset = 0;
};

// One process group of distributedInfo.pg_config: its name (what ops'
// "Process Group Name" says) and how many ranks it has.
struct ProcessGroupConfig {
  std::string name, desc;
  int32_t size = -1;  // pg_size / group_size / size, else the length of ranks; -1 unknown
};

struct RankTrace {
  std::string path;
  int rank = -1;  // distributedInfo.rank, or what --rank-of said
  bool rank_from_metadata = false;
  int world_size = -1;
  std::string hostname;  // distributedInfo.hostname; "" when the trace does not say
  std::vector<ProcessGroupConfig> process_groups;  // distributedInfo.pg_config
  std::optional<int64_t> base_time_ns;  // baseTimeNanoseconds
  bool bare_array = false;              // no traceEvents object (older autograd-profiler format)
  bool any_float_ts = false;            // some ts was a float or missing: HTA's rounding rule applies
  uint64_t negative_durations = 0;      // events whose "dur" was negative: read as having none
  uint64_t json_bytes = 0;
  uint32_t json_windows = 1;            // the events were walked in this many windows (kinetoChunkBytes)
  bool json_streamed = false;           // the file was read through a buffer of a few windows, never whole
  uint32_t json_parts = 1;              // threads the walk ran on, a part of the events each

  StringTable strings;
  std::vector<TraceEvent> events;
  std::vector<Track> tracks;
  std::vector<uint32_t> categories;  // cat index -> string id
  std::vector<CollectiveArgs> collective_args;
  std::vector<SyncArgs> sync_args;  // cuda_sync events that name what they waited for
  std::vector<MemorySample> memory;       // [memory] instants, stably sorted by time
  std::vector<MemorySample> out_of_memory;
  std::vector<BigInteger> big_integers;
  std::map<uint32_t, uint32_t> process_names;                      // pid -> name
  std::map<uint32_t, std::vector<uint32_t>> process_labels;        // pid -> labels
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> thread_names;  // (pid, tid) -> name

  // Absolute time of an event start, for aligning ranks.
  int64_t absoluteNs(int64_t ts_ns) const { return ts_ns + base_time_ns.value_or(0); }
  std::string_view str(uint32_t id) const { return strings.view(id); }
  std::string_view catOf(const TraceEvent& e) const { return strings.view(categories[e.cat]); }
  uint32_t pidOf(const TraceEvent& e) const { return tracks[e.track].pid; }
  uint32_t tidOf(const TraceEvent& e) const { return tracks[e.track].tid; }
  int64_t tsOf(const MemorySample& m) const { return events[m.event].ts_ns; }
  // Heap bytes held by the trace, for the bytes-per-event figure.
  size_t memoryBytes() const;
};

}  // namespace shardscope::kineto
