// Host memory behind Buffer: aligned, with a small per-thread cache of large
// blocks. A training step allocates and frees the same few large tensors
// (a segment's fp32 weights, activations) over and over; returned to the
// system each time, every one costs an mmap, page faults and a TLB shootdown,
// which under a hypervisor or a sanitizer's allocator dominates a small run.
// The ledger is unaffected: Buffer books every allocation and free as before.
#pragma once

#include <cstddef>

namespace shardscope {

// At least `bytes` (a multiple of 64), 64-byte aligned, not zeroed; nullptr
// when the system has no memory.
void* hostAllocate(size_t bytes);
// `block` came from hostAllocate(bytes) on any thread.
void hostFree(void* block, size_t bytes);

}  // namespace shardscope
