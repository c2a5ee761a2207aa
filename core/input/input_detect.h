// The one door for every file ShardScope opens (Perfetto's GuessTraceType is
// the model): detectInput says what a path holds from its first bytes, and the
// window, `analyze` and `inspect` each route its kind with one switch. A new
// format is its reader plus one row in input_detect.cpp's table (with its
// InputKind value); the compiler's -Wswitch then names each front end's switch
// that must route it.
#pragma once

#include <string>
#include <string_view>

namespace shardscope {

enum class InputKind {
  Unknown,               // nothing ShardScope reads: DetectedInput::reason says what was seen
  KinetoTrace,           // a PyTorch profiler trace (.json, .json.gz)
  KinetoFolder,          // a folder of per-rank profiler traces: one job
  MemorySnapshot,        // torch.cuda.memory._dump_snapshot, pickle or JSON
  MemoryTimeline,        // the profiler's export_memory_timeline (.json, .json.gz)
  FlightRecorderDump,    // one rank's flight-recorder dump, pickle or JSON
  FlightRecorderFolder,  // a folder of per-rank flight-recorder dumps
  ShardScopeTrace,       // a trace ShardScope wrote (run --trace, File > Export trace)
};

struct DetectedInput {
  InputKind kind = InputKind::Unknown;
  bool gzip = false;   // the bytes are gzip (1f 8b), whatever the name says
  std::string reason;  // Unknown only: "PATH: what was seen; ShardScope opens ..." (one line)
};

// Reads at most the first 64 KiB (inflated through zlib's gzread, which reads
// a plain file as it is) and, for a folder, looks at its first file by name.
// Never blocks on a FIFO or a device: only regular files are read. A folder
// of dumps is told by its first regular file; any other folder is a profiler
// job (its reader names what it lacks).
DetectedInput detectInput(const std::string& path);

// "a PyTorch memory snapshot", for messages ("X is a PyTorch memory snapshot").
std::string_view inputKindText(InputKind kind);

// What every "not a file ShardScope reads" message ends with.
std::string_view acceptedInputsText();

}  // namespace shardscope
