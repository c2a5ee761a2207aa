// shardscope-cli's exit codes, one list for every command (docs/reliability.md;
// `--help` prints them). A signal that stops a run exits 128 + the signal.
#pragma once

namespace shardscope {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;       // a flag, file or config refused; nothing ran
inline constexpr int kExitRunFailed = 3;      // the engine stopped the run (hang, mismatch, dead rank)
inline constexpr int kExitOutputFailed = 4;   // the run finished, an output could not be written

}  // namespace shardscope
