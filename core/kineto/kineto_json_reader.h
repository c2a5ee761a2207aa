// The simdjson On-Demand walk over a trace document. simdjson picks its
// On-Demand kernel at compile time, so the walk is built twice (AVX2 and
// portable) and readKinetoJson picks by the CPU; parseKinetoTrace wraps it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "kineto/kineto_trace.h"
#include "kineto/trace_file.h"

namespace shardscope::kineto {

void readKinetoJson(const PaddedBuffer& json, RankTrace& out);
void readKinetoJsonAvx2(const PaddedBuffer& json, RankTrace& out);
void readKinetoJsonPortable(const PaddedBuffer& json, RankTrace& out);

// Appends up to `max` more bytes of a document at `to`; 0 at its end.
using ReadMore = std::function<size_t(char* to, size_t max)>;
// The walk of a document read in pieces through one buffer of a few windows
// (kinetoChunkBytes), so a large file never sits in memory whole. out.path
// and out.json_bytes are set by the caller. False when the document did not
// walk in windows (any error included): the caller then reads it whole and
// walks that, for the same result or the error with its line and column.
bool readKinetoJsonStream(const ReadMore& read, RankTrace& out);
bool readKinetoJsonStreamAvx2(const ReadMore& read, RankTrace& out);
bool readKinetoJsonStreamPortable(const ReadMore& read, RankTrace& out);

// Reads up to `max` bytes of a document at `offset` (fewer only at its end);
// called from several threads at once.
using ReadAt = std::function<size_t(char* to, size_t max, uint64_t offset)>;
// The streamed walk on `parts` threads, for a plain file: its events are cut
// into parts at event boundaries, each thread reads its part through its own
// buffer of a few windows (never the whole file) and walks it with its own
// parser, and the parts are merged in file order into the single walk's
// result (ids included). out.path and out.json_bytes are set by the caller.
// False when the document does not split so or a part did not walk (any
// error included): the caller then reads it another way, for the same
// result or the error with its line and column.
bool readKinetoJsonParts(const ReadAt& read, uint64_t size, unsigned parts, RankTrace& out);
bool readKinetoJsonPartsAvx2(const ReadAt& read, uint64_t size, unsigned parts, RankTrace& out);
bool readKinetoJsonPartsPortable(const ReadAt& read, uint64_t size, unsigned parts, RankTrace& out);

// While one is alive on a thread, that thread's reads share one JSON parser:
// its buffers (a structural index and string space, sized to the largest
// document so far, several times the JSON) are touched once for all of a
// worker's files instead of fresh for each (first touches are much of a
// parse). Freed when the last one on the thread ends, so a load keeps nothing.
class ReuseKinetoParser {
 public:
  ReuseKinetoParser();
  ~ReuseKinetoParser();
  ReuseKinetoParser(const ReuseKinetoParser&) = delete;
  ReuseKinetoParser& operator=(const ReuseKinetoParser&) = delete;
};
bool kinetoParserReuse();  // one is alive on this thread

// Documents of at least twice this many bytes have their events walked in
// windows of about this size (kineto_json_walk.inc says why); tests make it
// small to cut their fixtures into many windows. 0 restores the default.
size_t kinetoChunkBytes();
void setKinetoChunkBytes(size_t bytes);

// Documents of at least this many bytes are walked on kinetoWalkThreads()
// threads, a part of the events each (0 restores the default, 64 MiB).
size_t kinetoParallelBytes();
void setKinetoParallelBytes(size_t bytes);
// The CPU's threads (at most 8), or 1 on a thread inside a SerialKinetoWalk.
unsigned kinetoWalkThreads();
void setKinetoWalkThreads(unsigned threads);  // tests: this many (0: the CPU's)
// While one lives on a thread, its walks use that thread only: a loader
// that reads several files at once already keeps the cores busy.
class SerialKinetoWalk {
 public:
  SerialKinetoWalk();
  ~SerialKinetoWalk();
  SerialKinetoWalk(const SerialKinetoWalk&) = delete;
  SerialKinetoWalk& operator=(const SerialKinetoWalk&) = delete;
};
void releaseKinetoParserAvx2();
void releaseKinetoParserPortable();

}  // namespace shardscope::kineto
