// The opaque stream handle of the plain-C++ GPU headers: a pointer to the CUDA
// runtime's own stream struct, so it IS cudaStream_t (no cast, no CUDA header).
// nullptr is the legacy default stream, which serialises with every other stream.
#pragma once

struct CUstream_st;

namespace shardscope::gpu {

using StreamHandle = CUstream_st*;

}  // namespace shardscope::gpu
