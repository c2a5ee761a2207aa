// How a ring collective splits its buffer, shared by the rings over Gloo
// messages and the rings straight on thread ranks' memory: both must cut the
// same chunks and sum in the same order, so their results agree to the bit.
#pragma once

#include <algorithm>
#include <cstddef>

#include "comm/communicator.h"
#include "kernels/cpu_kernels.h"
#include "tensor/bf16.h"

namespace shardscope::ring {

inline int wrap(int a, int n) { return ((a % n) + n) % n; }

struct ElementRange {  // elements
  size_t offset = 0;
  size_t length = 0;
};

// Chunk c of `count` elements split into `parts`; the first count % parts chunks
// hold one element more, so uneven counts still cover every element once.
inline ElementRange chunkRange(size_t count, int parts, int c) {
  const size_t p = static_cast<size_t>(parts);
  const size_t i = static_cast<size_t>(c);
  const size_t base = count / p;
  const size_t extra = count % p;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

// y(n) += x(n) in fp32; bf16 results round to nearest even at every hop, as NCCL does.
inline void reduceInto(void* y, const void* x, size_t n, DType dtype) {
  if (dtype == DType::F32) {
    cpu::addInPlace(static_cast<float*>(y), static_cast<const float*>(x), n);
  } else {
    cpu::addBf16InPlace(static_cast<bf16*>(y), static_cast<const bf16*>(x), n);
  }
}

}  // namespace shardscope::ring
