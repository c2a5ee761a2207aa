// Opening a file a user named: one rule for every reader (traces, profiles,
// presets, PyTorch traces). Only regular files are read — a FIFO, a device such
// as /dev/zero or a directory is refused before a byte is read — and a file
// larger than the reader's cap is refused with the cap in the message, so no
// file can make a reader grow memory without bound.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/errors.h"

namespace shardscope {

// What the readers throw: the message is "<what> PATH: <reason>"; path() and
// reason() let a reader with its own message format (the trace reader's
// "trace file 'PATH': ...") say the same thing.
class InputFileError : public ConfigError {
 public:
  InputFileError(const std::string& what, const std::string& path, const std::string& reason);
  const std::string& path() const { return m_path; }
  const std::string& reason() const { return m_reason; }

 private:
  std::string m_path;
  std::string m_reason;
};

// What is being read, for messages: "trace", "profile", "preset".
struct InputFileRule {
  const char* what;
  uint64_t max_bytes;     // a larger file is refused
  const char* cap_hint;   // how to raise the cap, e.g. "set SHARDSCOPE_MAX_TRACE_MB"; may be ""
};

// Caps, overridable through the environment variable in each hint (in MiB).
InputFileRule traceFileRule();    // 4096 MiB: SHARDSCOPE_MAX_TRACE_MB
InputFileRule profileFileRule();  // 1 MiB: SHARDSCOPE_MAX_PROFILE_MB
InputFileRule presetFileRule();   // 16 MiB: SHARDSCOPE_MAX_PRESET_MB

// Throws InputFileError "<what> PATH: <reason>" when PATH is empty, missing,
// unreadable, not a regular file (symlinks are followed, then checked) or over
// the cap. Returns the file's size in bytes.
uint64_t checkInputFile(const std::string& path, const InputFileRule& rule);

// checkInputFile, then the whole file as bytes. Throws InputFileError on a read
// error or when the file grew past the cap while being read.
std::string readInputFile(const std::string& path, const InputFileRule& rule);

// checkInputFile, then the open file for streaming readers (caller fcloses).
std::FILE* openInputFile(const std::string& path, const InputFileRule& rule);

// "4096 MiB", "512 bytes": how the messages write a size.
std::string inputSizeText(uint64_t bytes);

}  // namespace shardscope
