#include "input/input_detect.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "kineto/memory_timeline.h"
#include "kineto/trace_file.h"
#include "kineto/trace_set.h"
#include "postmortem/postmortem_report.h"

namespace shardscope {

namespace {

namespace fs = std::filesystem;

// What the sniffs see of one regular file.
struct InputHead {
  const std::string& path;
  std::string_view stored;  // the first 4 KiB as stored (the post-mortem readers do not inflate)
  std::string_view text;    // the first 64 KiB, inflated when gzip
  bool gzip;
};

constexpr size_t kStoredHeadBytes = 4096;
constexpr size_t kTextHeadBytes = 64 * 1024;

bool startsJsonObject(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

struct InputFormat {
  InputKind kind;
  const char* text;  // for messages: "X is <text>"
  bool (*sniff)(const InputHead&);
};

// The formats, first match wins: a dump or a snapshot by its own keys (a
// profiler trace's distributedInfo names pg_config too); the memory timeline
// ("[[") before the profiler's bare-array form ("["); a .gz name is always a
// profiler trace (its reader names what is wrong, "empty after decompression"
// included); any other JSON object is left to ShardScope's own trace reader,
// which names the field it lacks. A new format: its reader, and one row here.
const InputFormat kInputFormats[] = {
    {InputKind::FlightRecorderDump, "a flight-recorder dump",
     [](const InputHead& h) {
       return !h.gzip && postmortem::postmortemKindOfHead(h.stored) == postmortem::PostmortemInput::FlightRecorder;
     }},
    {InputKind::MemorySnapshot, "a PyTorch memory snapshot",
     [](const InputHead& h) {
       return !h.gzip && postmortem::postmortemKindOfHead(h.stored) == postmortem::PostmortemInput::MemorySnapshot;
     }},
    {InputKind::MemoryTimeline, "a PyTorch profiler memory timeline (export_memory_timeline)",
     [](const InputHead& h) { return kineto::looksLikeMemoryTimeline(h.path, h.text); }},
    {InputKind::KinetoTrace, "a PyTorch profiler (Kineto) trace",
     [](const InputHead& h) { return kineto::isGzipPath(h.path) || kineto::looksLikeKinetoJson(h.text); }},
    {InputKind::ShardScopeTrace, "a ShardScope trace",
     [](const InputHead& h) { return !h.gzip && startsJsonObject(h.text); }},
};

DetectedInput unknownInput(const std::string& path, const std::string& seen) {
  DetectedInput d;
  d.reason = path + ": " + seen + "; " + std::string(acceptedInputsText());
  return d;
}

// Why no row matched, from what the head shows.
std::string unmatchedText(const InputHead& h, uintmax_t size) {
  if (size == 0) return "is empty";
  const size_t first = h.text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    return h.text.empty() ? (h.gzip ? "is empty after decompression" : "is empty") : "is empty (only white space)";
  if (h.gzip) return "is gzip data holding no profiler trace (no Kineto marks in its first 64 KiB)";
  const unsigned char c = static_cast<unsigned char>(h.text[first]);
  char shown[64];
  if (c >= 0x20 && c < 0x7f) std::snprintf(shown, sizeof shown, "starts with '%c'", c);
  else std::snprintf(shown, sizeof shown, "starts with byte 0x%02x", c);
  return std::string(shown) + ": neither JSON ('{' or '[') nor a pickle (0x80)";
}

DetectedInput detectFile(const std::string& path, uintmax_t size) {
  std::string stored(kStoredHeadBytes, '\0');
  {
    std::ifstream f(path, std::ios::binary);
    if (!f) return unknownInput(path, std::string("cannot be read: ") + std::strerror(errno));
    f.read(stored.data(), static_cast<std::streamsize>(stored.size()));
    stored.resize(static_cast<size_t>(f.gcount()));
  }
  const bool gzip = stored.size() >= 2 && static_cast<unsigned char>(stored[0]) == 0x1f &&
                    static_cast<unsigned char>(stored[1]) == 0x8b;
  std::string text;
  if (gzip) {
    // zlib's gzread inflates as much as the head needs; a cut or bad stream
    // gives what it could (the reader that is chosen names the damage).
    gzFile f = gzopen(path.c_str(), "rb");
    if (f) {
      text.resize(kTextHeadBytes);
      const int n = gzread(f, text.data(), static_cast<unsigned>(text.size()));
      gzclose(f);
      text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    }
  } else if (size <= kStoredHeadBytes) {
    text = stored;
  } else {
    std::ifstream f(path, std::ios::binary);
    text.resize(kTextHeadBytes);
    f.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(std::max<std::streamsize>(f.gcount(), 0)));
  }
  const InputHead head{path, stored, text, gzip};
  for (const InputFormat& format : kInputFormats) {
    if (format.sniff(head)) {
      DetectedInput d;
      d.kind = format.kind;
      d.gzip = gzip;
      return d;
    }
  }
  DetectedInput d = unknownInput(path, unmatchedText(head, size));
  d.gzip = gzip;
  return d;
}

// A folder of dumps is told by its first regular file (by name; dot files
// skipped); any other folder is a profiler job, whose reader names what it lacks.
DetectedInput detectFolder(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.empty() && name[0] != '.' && e.is_regular_file(ec)) files.push_back(e.path().string());
    if (files.size() > 4096) break;
  }
  DetectedInput d;
  d.kind = InputKind::KinetoFolder;
  if (files.empty()) return d;
  const std::string& first = *std::min_element(files.begin(), files.end());
  switch (detectInput(first).kind) {
    case InputKind::FlightRecorderDump:
      d.kind = InputKind::FlightRecorderFolder;
      return d;
    case InputKind::MemorySnapshot:
      return unknownInput(path, "is a folder of memory snapshots (" + fs::path(first).filename().string() +
                                    "): open the snapshot files themselves, several at once for several ranks");
    default:
      return d;
  }
}

}  // namespace

DetectedInput detectInput(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) return unknownInput(path, "no such file or folder");
  if (fs::is_directory(status)) return detectFolder(path);
  // Opening a FIFO would block; a device such as /dev/zero never ends.
  if (!fs::is_regular_file(status))
    return unknownInput(path, "not a regular file (a FIFO, a device or a socket is never read)");
  const uintmax_t size = fs::file_size(path, ec);
  return detectFile(path, ec ? 0 : size);
}

std::string_view inputKindText(InputKind kind) {
  for (const InputFormat& format : kInputFormats)
    if (format.kind == kind) return format.text;
  switch (kind) {
    case InputKind::KinetoFolder: return "a folder of PyTorch profiler traces";
    case InputKind::FlightRecorderFolder: return "a folder of flight-recorder dumps";
    default: return "a file ShardScope does not read";
  }
}

std::string_view acceptedInputsText() {
  return "ShardScope opens PyTorch profiler traces (.json, .json.gz, or a folder of per-rank ones), memory "
         "snapshots and flight-recorder dumps (pickle or JSON; dumps also as a folder), the profiler's memory "
         "timeline (.json, .json.gz) and its own traces (run --trace, File > Export trace)";
}

}  // namespace shardscope
