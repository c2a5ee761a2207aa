// Reads a trace file whole into a buffer the JSON parser can use (simdjson
// needs padding after the input): a .json as is, a .json.gz inflated whole by
// libdeflate when built with it (else, and to explain a bad file, by zlib's stream).
// Opened by common/input_file.h's rule: only regular files (a FIFO or
// /dev/zero would never end), at most SHARDSCOPE_MAX_TRACE_MB on disk, and the
// JSON (inflated as it streams, for a .gz) capped the same way.
#pragma once

#include "common/units.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace shardscope::kineto {

// simdjson's On-Demand parser takes documents below 4 GiB.
inline constexpr uint64_t kMaxTraceBytes = (uint64_t(4) << 30) - 4096;

struct PaddedBuffer {
  std::shared_ptr<char[]> data;  // shared: its deleter depends on how it was mapped
  size_t size = 0;      // bytes of JSON
  size_t capacity = 0;  // size plus the zeroed padding
  size_t allocated = 0; // bytes behind data (a buffer given back for reuse keeps them)
};

// Which inflater reads a .gz: Fastest is libdeflate when built with it (a
// whole member at once), else zlib; Zlib forces zlib's stream (benchmarks
// compare the two in one run).
enum class GzipInflater { Fastest, Zlib };
bool haveLibdeflate();

// Throws ConfigError naming the file: missing, not a regular file,
// unreadable, a truncated or corrupt gzip stream, or more than max_bytes of JSON.
// reuse: an earlier file's buffer, filled again where it is large enough, so a
// worker reading several files touches fresh memory once (page faults are
// most of reading into new memory).
PaddedBuffer readTraceFile(const std::string& path, uint64_t max_bytes = kMaxTraceBytes,
                           GzipInflater inflater = GzipInflater::Fastest, PaddedBuffer reuse = {});

bool isGzipPath(const std::string& path);

// What a .gz may inflate to, relative to its size: a gzip bomb (a few MB of
// compressed zeros) is refused as its JSON passes this, while it streams,
// with a message naming the ratio, instead of growing to the 4 GiB trace cap.
// Real traces compress about 10:1; SHARDSCOPE_MAX_GZIP_RATIO (1..1032,
// deflate's own maximum) raises it for data that is more repetitive.
inline constexpr uint64_t kDefaultGzipRatio = 256;
inline constexpr uint64_t kGzipRatioFloor = 64 * uint64_t(kMiBBytes);  // a small .gz may always inflate to 64 MiB
inline constexpr const char* kGzipRatioVariable = "SHARDSCOPE_MAX_GZIP_RATIO";
uint64_t gzipMaxRatio();  // the variable, else kDefaultGzipRatio; ConfigError when it is not 1..1032
// max(kGzipRatioFloor, ratio x compressed_bytes).
uint64_t gzipRatioCap(uint64_t compressed_bytes);

// A trace file opened by the same rule, read in pieces: loadKinetoFile
// streams a plain .json through a buffer of a few MB this way, instead of
// reading it whole into fresh memory as large as the file.
class TraceFileReader {
 public:
  // Throws ConfigError as readTraceFile does (missing, not a regular file,
  // a plain file over the cap); a .gz is opened, gzip() says so.
  explicit TraceFileReader(const std::string& path, uint64_t max_bytes = kMaxTraceBytes);
  ~TraceFileReader();
  TraceFileReader(const TraceFileReader&) = delete;
  TraceFileReader& operator=(const TraceFileReader&) = delete;

  bool gzip() const { return m_gzip; }
  uint64_t size() const { return m_size; }  // bytes on disk
  // Up to `max` next bytes, never past size(); 0 at the end. Throws
  // ConfigError naming the file on a read error.
  size_t read(char* to, size_t max);
  // Up to `max` bytes at `offset` of a plain file (fewer only at its end),
  // by pread: threads may read their parts at once. Throws as read() does.
  size_t readAt(char* to, size_t max, uint64_t offset) const;

 private:
  std::string m_path;
  std::FILE* m_f = nullptr;
  uint64_t m_size = 0, m_read = 0;
  bool m_gzip = false;
};

}  // namespace shardscope::kineto
