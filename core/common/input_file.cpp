#include "common/input_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "common/errors.h"

namespace shardscope {

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// The cap from `env` (whole MiB, 1 to 1048576) or `default_mib`; a bad value is an error naming the variable.
uint64_t capFromEnv(const char* env, uint64_t default_mib) {
  const char* text = std::getenv(env);
  if (text == nullptr || *text == '\0') return default_mib * kMiB;
  char* end = nullptr;
  errno = 0;
  const unsigned long long mib = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || mib < 1 || mib > 1048576 || text[0] == '-')
    throw ConfigError(std::string(env) + " must be a whole number of MiB from 1 to 1048576, got '" + text + "'");
  return mib * kMiB;
}

std::string fail(const std::string& path, const InputFileRule& rule, const std::string& reason) {
  return std::string(rule.what) + " " + path + ": " + reason;
}

std::string sizeText(uint64_t bytes) {
  if (bytes >= kMiB) return std::to_string(bytes / kMiB) + " MiB";
  return std::to_string(bytes) + " bytes";
}

std::string overCap(const std::string& path, const InputFileRule& rule, uint64_t size_or_more) {
  std::string hint = rule.cap_hint != nullptr && *rule.cap_hint != '\0' ? std::string(" (") + rule.cap_hint + ")" : "";
  return fail(path, rule, "is " + sizeText(size_or_more) + ", more than the " + sizeText(rule.max_bytes) +
                              " a " + rule.what + " may have" + hint);
}

}  // namespace

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
  if (path.empty()) throw ConfigError(std::string(rule.what) + ": the file name is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw ConfigError(fail(path, rule, errno == ENOENT ? "no such file" : std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw ConfigError(fail(path, rule, "is a directory, not a file"));
  if (!S_ISREG(st.st_mode))
    throw ConfigError(fail(path, rule,
                           "is not a regular file (a FIFO, socket or device such as /dev/zero); only files are read"));
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > rule.max_bytes) throw ConfigError(overCap(path, rule, size));
  return size;
}

std::FILE* openInputFile(const std::string& path, const InputFileRule& rule) {
  checkInputFile(path, rule);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw ConfigError(fail(path, rule, std::string("cannot be opened: ") + std::strerror(errno)));
  // The path may have been swapped for a FIFO between stat and open: check what was opened.
  struct stat st {};
  if (::fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(f);
    throw ConfigError(fail(path, rule, "is not a regular file; only files are read"));
  }
  return f;
}

std::string readInputFile(const std::string& path, const InputFileRule& rule) {
  const uint64_t size = checkInputFile(path, rule);
  std::FILE* f = openInputFile(path, rule);
  std::string bytes;
  bytes.reserve(static_cast<size_t>(size));
  char chunk[1 << 16];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (bytes.size() + n > rule.max_bytes) {
      std::fclose(f);
      throw ConfigError(overCap(path, rule, bytes.size() + n));
    }
    bytes.append(chunk, n);
  }
  const bool error = std::ferror(f) != 0;
  std::fclose(f);
  if (error) throw ConfigError(fail(path, rule, "read error"));
  return bytes;
}

}  // namespace shardscope
