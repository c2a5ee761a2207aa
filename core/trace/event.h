// The one record every instrumented op writes: small, fixed-size and trivially
// copyable so recording is a 64-byte store into the thread's own buffer (see EventLog).
// Times are ns since run start on the run's clock; ids are -1 when not relevant.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "common/collective.h"

namespace shardscope {

enum class Lane : uint8_t { Host = 0, Compute = 1, Comm = 2, Gather = 3, Reduce = 4 };
inline constexpr int kLaneCount = 5;

enum class EventKind : uint8_t {
  Forward,        // X: one block/unit forward on the compute lane
  Backward,       // X: one block/unit backward
  Loss,           // X: loss forward and its gradient, where backward starts
  AllReduce,      // X: bytes = buffer size; bucket or unit set
  ReduceScatter,  // X: bytes = full (unsharded) buffer size
  AllGather,      // X: bytes = full (gathered) buffer size
  OptimizerStep,  // X: Adam on this rank's (shard of the) master weights
  BucketReady,    // i: last gradient of a bucket arrived (host lane)
  GradReady,      // i: one gradient ready (host lane), param index in `param`
  Alloc,          // i+C: value = running bytes of `category` on this rank
  Free,           // i+C
  StepBegin,      // i: start of a training step (host lane)
  StepEnd,        // i
  Wait,           // X: a stream blocked on an event from another stream
  Copy,           // X: bucket copy-in/copy-out, casts
  Error,          // i: the rank stopped with an error
  Broadcast,      // X: setup broadcast of the initial weights (comm lane)
  // Kinds only an imported (PyTorch profiler) trace has: the engine never records them.
  Kernel,         // X: a GPU kernel outside any forward/backward/optimizer label
  CpuOp,          // X: a CPU op, runtime call or annotation on a host thread
  AllToAll,       // X: an all-to-all collective
  // Modeled clock: the host launching kernels and running hooks (host lane);
  // value = kernels launched, seq = hooks run.
  Launch,
  // Pipeline stages (comm lane): one microbatch's activations (or, flagged
  // kEventGradient, their gradient) sent to / received from the next stage;
  // bytes = payload, seq = the message's number between the pair, value
  // (recv) = ns spent waiting for the sender.
  Send,
  Recv,
};
inline constexpr int kEventKindCount = 23;

// Memory ledger categories: every allocation is tagged with one, so the
// allocator is the ledger (core/memory/memory_ledger.h).
enum class Category : uint8_t {
  Param, Grad, Master, AdamM, AdamV, Gathered, GradFull, Bucket, Activation, Workspace
};
inline constexpr int kCategoryCount = 10;

// Event::flags: a Forward span that recomputes a block (or its attention core)
// inside backward, under activation checkpointing.
inline constexpr uint8_t kEventRecompute = 1;
// An imported collective whose trace gives no size (bytes is 0, not measured).
inline constexpr uint8_t kEventSizeUnknown = 2;
// Pipeline: a Send/Recv that carries a gradient backward (else activations
// forward), and a Backward/Forward/Loss span of one microbatch.
inline constexpr uint8_t kEventGradient = 4;

struct Event {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;      // == begin_ns for instants
  int64_t bytes = 0;       // payload bytes (collectives, alloc size)
  int64_t value = 0;       // Alloc/Free: running bytes of the category after the op;
                           // collectives: ns of the span spent waiting for peers
  int32_t step = -1;
  int32_t seq = -1;        // collective sequence number within its group
  int32_t op = -1;         // per-rank op id (ids an op for dependency arrows)
  int32_t dep = -1;        // op id this op waited on or was launched by, or -1
  int16_t rank = -1;
  int16_t block = -1;      // model block index (compute) or -1
  int16_t unit = -1;       // FSDP unit index or -1
  int16_t bucket = -1;     // DDP/ZeRO bucket index or -1
  int16_t group = -1;      // communicator group id (0 = world)
  int16_t param = -1;      // parameter index (GradReady); pipelined runs: the microbatch of a
                           // Forward, Backward, Loss, Send or Recv (microbatchOf)
  Lane lane = Lane::Host;
  EventKind kind = EventKind::Forward;
  Category category = Category::Workspace;
  uint8_t flags = 0;       // kEventRecompute, kEventSizeUnknown, kEventGradient
};
static_assert(std::is_trivially_copyable_v<Event>);
static_assert(sizeof(Event) == 64, "Event must stay one cache line");

// The microbatch a pipelined run's compute or point-to-point event belongs to; -1 when none.
constexpr int microbatchOf(const Event& e) {
  switch (e.kind) {
    case EventKind::Forward:
    case EventKind::Backward:
    case EventKind::Loss:
    case EventKind::Send:
    case EventKind::Recv: return e.param;
    default: return -1;
  }
}

std::string_view laneName(Lane lane);
std::string_view eventKindName(EventKind kind);
std::string_view categoryName(Category category);
bool isInstant(EventKind kind);
// The data-parallel collectives (a broadcast only happens in setup).
constexpr bool isCollective(EventKind k) {
  return k == EventKind::AllReduce || k == EventKind::ReduceScatter || k == EventKind::AllGather;
}
// Any collective a trace can hold: the data-parallel ones, broadcast and (imported) all-to-all.
constexpr bool isAnyCollective(EventKind k) {
  return isCollective(k) || k == EventKind::Broadcast || k == EventKind::AllToAll;
}
// The collective an event kind records (its bytes and busbw factor live there); none for other kinds.
constexpr std::optional<Collective> collectiveOf(EventKind k) {
  switch (k) {
    case EventKind::AllReduce: return Collective::AllReduce;
    case EventKind::ReduceScatter: return Collective::ReduceScatter;
    case EventKind::AllGather: return Collective::AllGather;
    case EventKind::Broadcast: return Collective::Broadcast;
    case EventKind::AllToAll: return Collective::AllToAll;
    default: return std::nullopt;
  }
}
// nccl-tests' busbw factor of a collective event on a group of n ranks; 0 for other kinds.
inline double busBandwidthFactor(EventKind k, int n) {
  const std::optional<Collective> c = collectiveOf(k);
  return c ? busBandwidthFactor(*c, n) : 0.0;
}

}  // namespace shardscope
