// ringBytesSent: the byte formulas of MetaCommunicator, per collective.
#include <stdexcept>
#include <string>

#include "cuda/gpu_communicator.h"

namespace shardscope::gpu {

const char* collectiveName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce: return "allReduce";
    case CollectiveOp::ReduceScatter: return "reduceScatter";
    case CollectiveOp::AllGather: return "allGather";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::Barrier: return "barrier";
  }
  return "collective?";
}

uint64_t ringBytesSent(CollectiveOp op, int rank, int size, size_t count, DType dtype, int root) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw std::invalid_argument("ringBytesSent: rank " + std::to_string(rank) +
                                " must be in [0, size = " + std::to_string(size) + ")");
  }
  if (size == 1) return 0;
  const uint64_t e = dtypeSize(dtype);
  const uint64_t P = static_cast<uint64_t>(size);
  auto wrap = [&](int a) { return static_cast<size_t>(((a % size) + size) % size); };
  switch (op) {
    case CollectiveOp::AllReduce: {
      const size_t base = count / P, extra = count % P;
      auto chunk = [&](size_t c) { return base + (c < extra ? 1 : 0); };
      uint64_t elems = 0;
      // Reduce-scatter half sends chunks r, r-1, ..., r-P+2; all-gather half r+1, ..., r-P+3.
      for (int j = 0; j < size - 1; ++j) elems += chunk(wrap(rank - j));
      for (int j = 0; j < size - 1; ++j) elems += chunk(wrap(rank + 1 - j));
      return elems * e;
    }
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
      return (P - 1) * count * e;
    case CollectiveOp::Broadcast:
      return static_cast<size_t>(rank) == wrap(root - 1) ? 0 : count * e;
    case CollectiveOp::Barrier:
      return 0;
  }
  return 0;
}

}  // namespace shardscope::gpu
