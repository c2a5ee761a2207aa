#include "kineto/kineto_walk_tuning.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "kineto/kineto_field_walk.h"
#include "kineto/kineto_json_reader.h"

namespace shardscope::kineto {

namespace {
constexpr size_t kDefaultChunkBytes = size_t(1) << 20;
constexpr size_t kDefaultParallelBytes = size_t(64) << 20;
std::atomic<size_t> g_chunk_bytes{kDefaultChunkBytes};
std::atomic<size_t> g_parallel_bytes{kDefaultParallelBytes};
std::atomic<unsigned> g_walk_threads{0};
std::atomic<bool> g_portable_walk{false};

int& reuseDepth() {
  thread_local int depth = 0;
  return depth;
}
int& serialDepth() {
  thread_local int depth = 0;
  return depth;
}
}  // namespace

size_t kinetoChunkBytes() { return g_chunk_bytes.load(std::memory_order_relaxed); }
void setKinetoChunkBytes(size_t bytes) { g_chunk_bytes = bytes ? bytes : kDefaultChunkBytes; }

size_t kinetoParallelBytes() { return g_parallel_bytes.load(std::memory_order_relaxed); }
void setKinetoParallelBytes(size_t bytes) { g_parallel_bytes = bytes ? bytes : kDefaultParallelBytes; }

unsigned kinetoWalkThreads() {
  if (serialDepth() > 0) return 1;
  if (const unsigned given = g_walk_threads.load(std::memory_order_relaxed)) return given;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}
void setKinetoWalkThreads(unsigned threads) { g_walk_threads = threads; }

void setKinetoPortableWalk(bool portable) { g_portable_walk = portable; }
bool kinetoPortableWalk() { return g_portable_walk.load(std::memory_order_relaxed); }

ReuseKinetoParser::ReuseKinetoParser() { ++reuseDepth(); }
ReuseKinetoParser::~ReuseKinetoParser() {
  if (--reuseDepth() > 0) return;
  walk::releaseFieldWalkParsers();
}
bool kinetoParserReuse() { return reuseDepth() > 0; }

SerialKinetoWalk::SerialKinetoWalk() { ++serialDepth(); }
SerialKinetoWalk::~SerialKinetoWalk() { --serialDepth(); }

}  // namespace shardscope::kineto
