// Parses one Kineto / Chrome-trace JSON document into a RankTrace with
// simdjson's On-Demand API: object form ({"traceEvents": [...], metadata in
// any order}) or bare-array form ([...], the older autograd-profiler export).
// A bad document raises one ConfigError naming the file, the byte offset with
// its line and column, and what was expected there.
#pragma once

#include <string>

#include "kineto/kineto_trace.h"
#include "kineto/trace_file.h"

namespace shardscope::kineto {

RankTrace parseKinetoTrace(const PaddedBuffer& json, const std::string& path);

// A file's trace: a large plain .json streamed through a few MB, on every
// core from kinetoParallelBytes() (readKinetoJsonParts: a part of the file
// each, by pread) else on one (readKinetoJsonStream); else readTraceFile +
// parseKinetoTrace. reuse: a buffer kept from file to file for the last way
// (see readTraceFile).
RankTrace loadKinetoFile(const std::string& path, uint64_t max_bytes = kMaxTraceBytes, PaddedBuffer* reuse = nullptr);

// Whether this CPU takes the AVX2 build of the JSON walk.
bool kinetoAvx2WalkUsed();

// "byte 1234 (line 5, column 17)" for an offset into text.
std::string describeOffset(std::string_view text, size_t offset);

}  // namespace shardscope::kineto
