// The one vocabulary of collectives: every layer that moves, counts, reads or
// draws a collective (comm/, cuda/, kineto/, trace/, analysis/, the views) names
// it with `Collective` and takes its bytes and bus-bandwidth factor from here.
// Bytes follow the ring algorithms GlooCommunicator runs (and NCCL's ring):
// an all-reduce is a reduce-scatter then an all-gather, each moving (P-1)/P of
// the buffer per rank; busbw factors are nccl-tests' (doc/PERFORMANCE.md).
#pragma once

#include <cstdint>
#include <string_view>

namespace shardscope {

enum class Collective : uint8_t { AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast, Reduce, SendRecv, Barrier, Unknown };
inline constexpr int kCollectiveCount = 9;

// "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast",
// "reduce", "send_recv", "barrier", "unknown": trace args, JSON keys, tables.
std::string_view collectiveName(Collective c);
// Read from any spelling a trace uses: a "Collective name" arg, an op name
// (nccl:all_reduce, c10d::allgather_, _reduce_scatter_base) or a kernel name
// (ncclDevKernel_AllReduce_Sum_f32_RING_LL); Unknown when none matches.
Collective collectiveFromName(std::string_view name);
// "all-reduce", "reduce-scatter", …: labels and legends.
std::string_view collectiveLabel(Collective c);

// Bytes rank `rank` of `size` puts on the wire for one call with the
// Communicator's `count` (all-reduce, broadcast: the buffer's elements;
// reduce-scatter: each rank's output chunk; all-gather: each rank's input
// chunk; all-to-all: one peer's block) of `element_bytes` each. All-reduce
// splits the buffer into P chunks, the first count % P one element longer,
// and sends 2(P-1) of them; broadcast is a chain from the root, the last rank
// of the chain sends nothing. Throws std::invalid_argument for a rank outside
// [0, size).
uint64_t ringBytesSent(Collective c, int rank, int size, uint64_t count, uint64_t element_bytes, int root = 0);

// Bytes each rank sends, on average over the group, for a collective over a
// tensor of `tensor_bytes` (S: the all-reduce's buffer, the reduce-scatter's
// input, the all-gather's output, the all-to-all's send buffer, the
// broadcast's buffer) on `size` ranks: 2(P-1)/P·S for all-reduce, (P-1)/P·S
// for the others (a broadcast chain: P-1 ranks forward S once), S for
// send/recv, 0 for a barrier or a group of one.
double ringBytesPerRank(Collective c, double tensor_bytes, int size);

// busbw = algbw × factor, n = ranks in the collective's group (nccl-tests):
// 2(n-1)/n all-reduce; (n-1)/n reduce-scatter, all-gather, all-to-all;
// 1 broadcast, reduce, send/recv and an unknown kind (bytes taken as moved
// once); 0 a barrier and any group of one (nothing crosses a link).
double busBandwidthFactor(Collective c, int n);

}  // namespace shardscope
