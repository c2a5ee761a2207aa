// What a tensor-parallel slice of a model needs from its TP group, on the
// compute stream, in the middle of a segment's forward or backward (Megatron-LM):
//  - g: the forward all-reduce that sums a row-parallel layer's partial outputs;
//  - f: the backward all-reduce that sums the partial input gradients of a
//    column-parallel layer (the gradient of an input every TP rank shares);
//  - the vocab-parallel cross-entropy's per-token statistics;
//  - with sequence parallelism, g and f's reduce-scatter / all-gather pairs and
//    the sum of the replicated parameters' gradients (fp32, allReduceF32).
// The model says how many FLOPs of the segment it has done before each call,
// so the modeled clock places the collective inside the op, not after it.
// Activations cross the wire in bf16 (as Megatron's are); the sum lands in
// fp32 on every rank, bit-identical across the group.
#pragma once

#include <cstddef>

namespace shardscope {

class TensorParallelComm {
 public:
  virtual ~TensorParallelComm() = default;
  virtual int size() const = 0;  // T
  virtual int rank() const = 0;  // this rank's place in its TP group
  // In place: data(n) := sum over the TP group, through bf16. flops_done: the
  // segment's FLOPs (this rank) before this point of its forward or backward.
  virtual void allReduceActivation(float* data, size_t n, int segment, bool backward, double flops_done) = 0;
  // Sequence parallelism (Korthikanti et al. 2022): g becomes a reduce-scatter
  // of the (tokens, D) row-parallel output over the sequence, ḡ an all-gather
  // of the sequence-sharded input of a column-parallel layer; through bf16 as
  // the all-reduce. n: elements of the whole (tokens, D) tensor on this rank's
  // microbatch; chunk r (n/T elements, contiguous rows) is TP rank r's.
  // Reduce-scatter: full(n) partial sums -> chunk(n/T) of the sum; all-gather:
  // chunk(n/T) -> full(n). Null pointers (meta models): the event only.
  virtual void reduceScatterActivation(const float* full, float* chunk, size_t n, int segment, bool backward,
                                       double flops_done) = 0;
  virtual void allGatherActivation(const float* chunk, float* full, size_t n, int segment, bool backward,
                                   double flops_done) = 0;
  // In place, fp32 on the wire: small per-token statistics (the loss's sums).
  virtual void allReduceF32(float* data, size_t n, int segment) = 0;
  // in(n) -> out(n * T), chunk r = TP rank r's in; fp32.
  virtual void allGatherF32(const float* in, float* out, size_t n, int segment) = 0;
};

}  // namespace shardscope
