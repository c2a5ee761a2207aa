// The walk of a trace's JSON fields with simdjson's On-Demand API: the keys
// of the document, each event's fields and the args the analyses use, handed
// to a TraceBuilder. simdjson takes its On-Demand kernel from the compile
// flags, so this is the one part of the reader built twice, for AVX2 and for
// any CPU (kineto_field_walk.inc); makeFieldWalk picks by the CPU. Where
// windows and parts are cut, and how they merge, is built once
// (kineto_windowed_walk.h, kineto_parallel_walk.cpp).
#pragma once

#include <cstddef>
#include <memory>

#include "kineto/kineto_trace_builder.h"
#include "kineto/trace_file.h"

namespace shardscope::kineto::walk {

// One walk's parser: the thread's reused one while a ReuseKinetoParser is
// alive (its buffers, already touched, serve the next file), else its own.
class FieldWalk {
 public:
  virtual ~FieldWalk() = default;
  // The whole document as one simdjson document: the reference walk, and
  // the one whose errors users read.
  virtual void whole() = 0;
  // json[from, to) as an array of events (a window) and as a document (keys
  // and events); the buffer's bytes there are edited to read so. Any failure
  // throws ConfigError: the windowed walk stops.
  virtual void events(size_t from, size_t to) = 0;
  virtual void document(size_t from, size_t to) = 0;
};

// What each build of the field walk gives.
struct FieldWalkKernel {
  std::unique_ptr<FieldWalk> (*make)(const PaddedBuffer& json, TraceBuilder& records);
  void (*release)();  // frees the thread's reused parser
};
extern const FieldWalkKernel kFieldWalkAvx2;  // only where SHARDSCOPE_KINETO_AVX2 builds it
extern const FieldWalkKernel kFieldWalkPortable;

// The build this CPU takes (the portable one under setKinetoPortableWalk).
std::unique_ptr<FieldWalk> makeFieldWalk(const PaddedBuffer& json, TraceBuilder& records);
// Frees the thread's reused parsers (ReuseKinetoParser's end).
void releaseFieldWalkParsers();

}  // namespace shardscope::kineto::walk
