// Byte and time units, named once: every MiB a view or report prints is
// bytes / kMiB (2^20), every GB/s is 10^9 bytes per second (nccl-tests' unit).
#pragma once

#include <cstdint>
#include <string>

namespace shardscope {

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr int64_t kMiBBytes = int64_t{1} << 20;
inline constexpr double kGB = 1e9;  // bandwidths: GB/s = 10^9 bytes/s

// Any count of bytes (int64_t, size_t, double).
template <class Bytes>
constexpr double toMiB(Bytes bytes) { return static_cast<double>(bytes) / kMiB; }
template <class Bytes>
constexpr double toGiB(Bytes bytes) { return static_cast<double>(bytes) / kGiB; }
// Whole MiB, rounded up, for a limit a message names ("64 MiB").
inline std::string wholeMiBText(uint64_t bytes) {
  return std::to_string((bytes + uint64_t(kMiBBytes) - 1) / uint64_t(kMiBBytes)) + " MiB";
}
// A size given in MiB (a --bucket-mb value) in bytes, truncated as the planner uses it.
inline constexpr int64_t mibToBytes(double mib) { return static_cast<int64_t>(mib * kMiB); }

inline constexpr double kNsPerS = 1e9;
inline constexpr double kNsPerMs = 1e6;
inline constexpr double kNsPerUs = 1e3;
template <class Ns>
constexpr double nsToMs(Ns ns) { return static_cast<double>(ns) / kNsPerMs; }
template <class Ns>
constexpr double nsToSeconds(Ns ns) { return static_cast<double>(ns) / kNsPerS; }
inline constexpr double kFlopPerTflop = 1e12;  // TFLOP/s = 10^12 FLOP per second
// Bytes over ns is GB/s (10^9 bytes per second).
inline constexpr double gbPerSecond(double bytes, double ns) { return ns > 0 ? bytes / ns : 0.0; }

}  // namespace shardscope
