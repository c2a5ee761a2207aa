// A job's PyTorch profiler traces as a RunTrace, so ShardScope's own views
// (timeline, memory, communication) show a real job: per rank a track per GPU
// stream and CPU thread, kernels coloured by the phase that launched them
// (forward, backward, optimizer) and collectives by kind, with bytes and
// their process group; ProfilerStep spans as steps; launch -> kernel
// correlations as dependencies; [memory] samples as the allocated bytes
// (gathered when allocated under an FSDP all-gather label, otherwise
// unattributed), reserved bytes beside them.
#pragma once

#include <string_view>

#include "kineto/trace_set.h"
#include "trace/run_trace.h"

namespace shardscope::kineto {

// The phase a label opens ("DistributedDataParallel.forward", "## backward ##",
// "FSDP::pre_backward (layers.0)", "Optimizer.step#AdamW.step", an autograd
// engine function); Kernel when it opens none.
shardscope::EventKind phaseOfLabel(std::string_view name);
// The module of an FSDP all-gather label ("FSDP::all_gather (layers.3)" ->
// "layers.3", "" for the root's "FSDP::all_gather ()"), or nullopt when the
// label is not an all-gather.
std::optional<std::string_view> fsdpAllGatherModule(std::string_view name);

// The module any FSDP2 label names ("FSDP::post_backward (layers.1)" ->
// "layers.1"; FSDP1's "FullyShardedDataParallel._unshard" -> ""), nullopt for others.
std::optional<std::string_view> fsdpModule(std::string_view name);

// Consumes the set: its string tables move into the result's event text.
shardscope::RunTrace importedRunTrace(TraceSet set);

}  // namespace shardscope::kineto
