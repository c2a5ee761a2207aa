#include "kineto/kineto_json_reader.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include <simdjson.h>

#include "kineto/kineto_parser.h"

namespace shardscope::kineto {

bool kinetoAvx2WalkUsed() {
#if defined(SHARDSCOPE_KINETO_AVX2)
  static const bool ok = [] {
    const auto* impl = simdjson::get_available_implementations()["haswell"];
    return impl != nullptr && impl->supported_by_runtime_system();
  }();
  return ok;
#else
  return false;
#endif
}

namespace {
int& reuseDepth() {
  thread_local int depth = 0;
  return depth;
}
}  // namespace

ReuseKinetoParser::ReuseKinetoParser() { ++reuseDepth(); }

ReuseKinetoParser::~ReuseKinetoParser() {
  if (--reuseDepth() > 0) return;
#if defined(SHARDSCOPE_KINETO_AVX2)
  releaseKinetoParserAvx2();
#endif
  releaseKinetoParserPortable();
}

bool kinetoParserReuse() { return reuseDepth() > 0; }

namespace {
constexpr size_t kDefaultChunkBytes = size_t(1) << 20;
std::atomic<size_t> g_chunk_bytes{kDefaultChunkBytes};
}  // namespace

size_t kinetoChunkBytes() { return g_chunk_bytes.load(std::memory_order_relaxed); }
void setKinetoChunkBytes(size_t bytes) { g_chunk_bytes = bytes ? bytes : kDefaultChunkBytes; }

namespace {
constexpr size_t kDefaultParallelBytes = size_t(64) << 20;
std::atomic<size_t> g_parallel_bytes{kDefaultParallelBytes};
int& serialDepth() {
  thread_local int depth = 0;
  return depth;
}
}  // namespace

size_t kinetoParallelBytes() { return g_parallel_bytes.load(std::memory_order_relaxed); }
void setKinetoParallelBytes(size_t bytes) { g_parallel_bytes = bytes ? bytes : kDefaultParallelBytes; }

std::atomic<unsigned> g_walk_threads{0};

unsigned kinetoWalkThreads() {
  if (serialDepth() > 0) return 1;
  if (const unsigned given = g_walk_threads.load(std::memory_order_relaxed)) return given;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}

void setKinetoWalkThreads(unsigned threads) { g_walk_threads = threads; }

SerialKinetoWalk::SerialKinetoWalk() { ++serialDepth(); }
SerialKinetoWalk::~SerialKinetoWalk() { --serialDepth(); }

void readKinetoJson(const PaddedBuffer& json, RankTrace& out) {
#if defined(SHARDSCOPE_KINETO_AVX2)
  if (kinetoAvx2WalkUsed()) {
    readKinetoJsonAvx2(json, out);
    return;
  }
#endif
  readKinetoJsonPortable(json, out);
}

}  // namespace shardscope::kineto

namespace shardscope::kineto {

bool readKinetoJsonStream(const ReadMore& read, RankTrace& out) {
#if defined(SHARDSCOPE_KINETO_AVX2)
  if (kinetoAvx2WalkUsed()) return readKinetoJsonStreamAvx2(read, out);
#endif
  return readKinetoJsonStreamPortable(read, out);
}

}  // namespace shardscope::kineto

namespace shardscope::kineto {

bool readKinetoJsonParts(const ReadAt& read, uint64_t size, unsigned parts, RankTrace& out) {
#if defined(SHARDSCOPE_KINETO_AVX2)
  if (kinetoAvx2WalkUsed()) return readKinetoJsonPartsAvx2(read, size, parts, out);
#endif
  return readKinetoJsonPartsPortable(read, size, parts, out);
}

}  // namespace shardscope::kineto
