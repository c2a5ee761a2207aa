// Reads a Kineto / Chrome-trace JSON document into a RankTrace: the reader's
// one entry (parseKinetoTrace and loadKinetoFile, kineto_parser.h, wrap it).
// How it reads is its own business: a large document in windows, on several
// threads, with the build of the field walk the CPU takes; the pieces live
// in kineto_windowed_walk.h, kineto_parallel_walk.h and kineto_field_walk.h,
// their knobs (for tests) in kineto_walk_tuning.h.
#pragma once

#include "kineto/kineto_trace.h"
#include "kineto/trace_file.h"

namespace shardscope::kineto {

// out.path and out.json_bytes are set by the caller. Throws ConfigError
// naming the file, the byte with its line and column, and what was expected.
void readKinetoJson(const PaddedBuffer& json, RankTrace& out);

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

// While one lives on a thread, its walks use that thread only: a loader
// that reads several files at once already keeps the cores busy.
class SerialKinetoWalk {
 public:
  SerialKinetoWalk();
  ~SerialKinetoWalk();
  SerialKinetoWalk(const SerialKinetoWalk&) = delete;
  SerialKinetoWalk& operator=(const SerialKinetoWalk&) = delete;
};

}  // namespace shardscope::kineto
