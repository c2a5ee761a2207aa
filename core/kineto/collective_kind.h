// Collective kinds as ShardScope names them, read from a trace's
// "Collective name" arg, an op name (nccl:all_reduce, c10d::allgather_) or a
// kernel name (ncclDevKernel_AllReduce_Sum_f32_RING_LL); element sizes of
// PyTorch dtypes; and nccl-tests' bus-bandwidth factors.
#pragma once

#include <cstdint>
#include <string_view>

namespace shardscope::kineto {

enum class CollectiveKind : uint8_t { AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast, Reduce, SendRecv, Barrier, Unknown };

std::string_view collectiveKindName(CollectiveKind kind);  // "all_reduce", ...
CollectiveKind collectiveKindFromName(std::string_view name);

// Bytes per element of a PyTorch dtype name ("Float", "BFloat16", "c10::Half"); -1 unknown.
int dtypeBytes(std::string_view dtype);

// busbw = algbw * factor (nccl-tests doc/PERFORMANCE.md), n = ranks in the collective's group.
double busBandwidthFactor(CollectiveKind kind, int n);

}  // namespace shardscope::kineto
