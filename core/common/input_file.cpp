#include "common/input_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/errors.h"
#include "common/units.h"

namespace shardscope {

namespace {

constexpr uint64_t kMiBBytesU = static_cast<uint64_t>(kMiBBytes);  // common/units.h, as the caps count it

// The cap from `env` (whole MiB, 1 to 1048576) or `default_mib`; a bad value is an error naming the variable.
uint64_t capFromEnv(const char* env, uint64_t default_mib) {
  const char* text = std::getenv(env);
  if (text == nullptr || *text == '\0') return default_mib * kMiBBytesU;
  char* end = nullptr;
  errno = 0;
  const unsigned long long mib = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || mib < 1 || mib > 1048576 || text[0] == '-')
    throw ConfigError(std::string(env) + " must be a whole number of MiB from 1 to 1048576, got '" + text + "'");
  return mib * kMiBBytesU;
}

[[noreturn]] void fail(const std::string& path, const InputFileRule& rule, const std::string& reason) {
  throw InputFileError(rule.what, path, reason);
}

[[noreturn]] void overCap(const std::string& path, const InputFileRule& rule, uint64_t size_or_more) {
  std::string hint = rule.cap_hint != nullptr && *rule.cap_hint != '\0' ? std::string(" (") + rule.cap_hint + ")" : "";
  fail(path, rule, "is " + inputSizeText(size_or_more) + ", more than the " + inputSizeText(rule.max_bytes) + " a " +
                       rule.what + " may have" + hint);
}

}  // namespace

InputFileError::InputFileError(const std::string& what, const std::string& path, const std::string& reason)
    : ConfigError(path.empty() ? what + ": " + reason : what + " " + path + ": " + reason), m_path(path), m_reason(reason) {}

std::string inputSizeText(uint64_t bytes) {
  // Whole MiB as whole, a part of one to a tenth; under 1 MiB every byte.
  const int decimals = bytes % kMiBBytesU == 0 ? 0 : 1;
  return bytesText(static_cast<double>(bytes), decimals, bytes >= kMiBBytesU ? ByteUnit::MiB : ByteUnit::Bytes);
}

InputFileRule traceFileRule() {
  return {"trace", capFromEnv("SHARDSCOPE_MAX_TRACE_MB", 4096), "set SHARDSCOPE_MAX_TRACE_MB to allow more"};
}
InputFileRule profileFileRule() {
  return {"profile", capFromEnv("SHARDSCOPE_MAX_PROFILE_MB", 1), "set SHARDSCOPE_MAX_PROFILE_MB to allow more"};
}
InputFileRule presetFileRule() {
  return {"preset", capFromEnv("SHARDSCOPE_MAX_PRESET_MB", 16), "set SHARDSCOPE_MAX_PRESET_MB to allow more"};
}

uint64_t checkInputFile(const std::string& path, const InputFileRule& rule) {
  if (path.empty()) fail("", rule, "the file name is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail(path, rule, std::string("cannot open: ") + (errno == ENOENT ? "no such file" : std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) fail(path, rule, "is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    fail(path, rule, "not a regular file (a FIFO, socket or device such as /dev/zero); only files are read");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > rule.max_bytes) overCap(path, rule, size);
  return size;
}

std::FILE* openInputFile(const std::string& path, const InputFileRule& rule) {
  checkInputFile(path, rule);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail(path, rule, std::string("cannot open: ") + std::strerror(errno));
  // The path may have been swapped for a FIFO between stat and open: check what was opened.
  struct stat st {};
  if (::fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(f);
    fail(path, rule, "not a regular file; only files are read");
  }
  if (static_cast<uint64_t>(st.st_size) > rule.max_bytes) {
    std::fclose(f);
    overCap(path, rule, static_cast<uint64_t>(st.st_size));
  }
  return f;
}

std::string readInputFile(const std::string& path, const InputFileRule& rule) {
  std::FILE* f = openInputFile(path, rule);
  struct File {
    std::FILE* f;
    ~File() { std::fclose(f); }
  } closer{f};
  struct stat st {};
  std::string bytes;
  if (::fstat(fileno(f), &st) == 0) bytes.reserve(static_cast<size_t>(st.st_size));
  // Read in chunks and count: a file that grows while it is read stops at the cap.
  char chunk[1 << 16];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (bytes.size() + n > rule.max_bytes) overCap(path, rule, bytes.size() + n);
    bytes.append(chunk, n);
  }
  if (std::ferror(f) != 0) fail(path, rule, "read error after " + std::to_string(bytes.size()) + " bytes");
  return bytes;
}

}  // namespace shardscope
