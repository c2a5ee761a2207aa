// Reads a trace file whole into a buffer the JSON parser can use (simdjson
// needs padding after the input): a .json as is, a .json.gz inflated whole by
// libdeflate when built with it (else, and to explain a bad file, by zlib's stream).
// Opened by common/input_file.h's rule: only regular files (a FIFO or
// /dev/zero would never end), at most SHARDSCOPE_MAX_TRACE_MB on disk, and the
// JSON (inflated as it streams, for a .gz) capped the same way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace shardscope::kineto {

// simdjson's On-Demand parser takes documents below 4 GiB.
inline constexpr uint64_t kMaxTraceBytes = (uint64_t(4) << 30) - 4096;

struct PaddedBuffer {
  std::unique_ptr<char[]> data;
  size_t size = 0;      // bytes of JSON
  size_t capacity = 0;  // size plus the zeroed padding
};

// Which inflater reads a .gz: Fastest is libdeflate when built with it (a
// whole member at once), else zlib; Zlib forces zlib's stream (benchmarks
// compare the two in one run).
enum class GzipInflater { Fastest, Zlib };
bool haveLibdeflate();

// Throws ConfigError naming the file: missing, not a regular file,
// unreadable, a truncated or corrupt gzip stream, or more than max_bytes of JSON.
PaddedBuffer readTraceFile(const std::string& path, uint64_t max_bytes = kMaxTraceBytes,
                           GzipInflater inflater = GzipInflater::Fastest);

bool isGzipPath(const std::string& path);

}  // namespace shardscope::kineto
