// The trace walk's tuning knobs, for its own files and for the tests and
// benchmarks that cut small fixtures into many windows, force a thread count
// or compare the two builds of the field walk. Not the reader's interface
// (kineto_json_reader.h): a caller reading a trace never sets these.
#pragma once

#include <cstddef>

namespace shardscope::kineto {

// Documents of at least twice this many bytes have their events walked in
// windows of about this size (kineto_windowed_walk.h says why); tests make
// it small to cut their fixtures into many windows. 0 restores the default.
size_t kinetoChunkBytes();
void setKinetoChunkBytes(size_t bytes);

// Documents of at least this many bytes are walked on kinetoWalkThreads()
// threads, a part of the events each (0 restores the default, 64 MiB).
size_t kinetoParallelBytes();
void setKinetoParallelBytes(size_t bytes);
// The CPU's threads (at most 8), or 1 on a thread inside a SerialKinetoWalk.
unsigned kinetoWalkThreads();
void setKinetoWalkThreads(unsigned threads);  // tests: this many (0: the CPU's)

// A ReuseKinetoParser is alive on this thread.
bool kinetoParserReuse();

// Tests: walk with the portable build of the field walk even on a CPU that
// takes the AVX2 one (kinetoAvx2WalkUsed), to compare the two.
void setKinetoPortableWalk(bool portable);
bool kinetoPortableWalk();

}  // namespace shardscope::kineto
