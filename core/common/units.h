// Byte and time units, named once: every MiB a view or report prints is
// bytes / kMiB (2^20), every GB/s is 10^9 bytes per second (nccl-tests' unit).
#pragma once

#include <charconv>
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

// The unit a byte text is written in: Auto picks the largest one the value
// reaches (GiB, MiB, KiB, else bytes); the others fix it (a table column).
enum class ByteUnit { Auto, Bytes, KiB, MiB, GiB };

// Auto's pick for `bytes`, for a chart that scales its axis as its labels read.
inline constexpr ByteUnit byteUnitFor(double bytes) {
  const double b = bytes < 0 ? -bytes : bytes;
  return b >= kGiB ? ByteUnit::GiB : b >= kMiB ? ByteUnit::MiB : b >= kKiB ? ByteUnit::KiB : ByteUnit::Bytes;
}
// Bytes in one unit, and its name ("GiB"); Auto counts as bytes.
inline constexpr double byteUnitSize(ByteUnit unit) {
  return unit == ByteUnit::GiB ? kGiB : unit == ByteUnit::MiB ? kMiB : unit == ByteUnit::KiB ? kKiB : 1.0;
}
inline constexpr const char* byteUnitName(ByteUnit unit) {
  return unit == ByteUnit::GiB ? "GiB" : unit == ByteUnit::MiB ? "MiB" : unit == ByteUnit::KiB ? "KiB" : "bytes";
}

// Bytes as text, the one function every report, message and view writes a
// size with: "1.23 GiB", "512.00 MiB", "1.50 KiB", "12 bytes". `decimals`:
// digits after the point (whole bytes have none); a table column and a
// tooltip differ only in this. Locale-free (to_chars), so the GUI, whose
// locale may write "1,23", prints what the CLI prints.
inline std::string bytesText(double bytes, int decimals = 2, ByteUnit unit = ByteUnit::Auto) {
  if (unit == ByteUnit::Auto) unit = byteUnitFor(bytes);
  if (unit == ByteUnit::Bytes) decimals = 0;
  char text[64];
  const auto end = std::to_chars(text, text + sizeof text, bytes / byteUnitSize(unit), std::chars_format::fixed,
                                 decimals < 0 ? 0 : decimals);
  return std::string(text, end.ptr) + " " + byteUnitName(unit);
}
// Whole MiB, rounded up, for a limit a message names ("64 MiB").
inline std::string wholeMiBText(uint64_t bytes) {
  const uint64_t mib = (bytes + uint64_t(kMiBBytes) - 1) / uint64_t(kMiBBytes);
  return bytesText(static_cast<double>(mib) * kMiB, 0, ByteUnit::MiB);
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
