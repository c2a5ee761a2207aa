// Arithmetic on numbers that come from outside (a file, a flag, a profile):
// overflow is an answer the caller handles, never undefined behaviour.
#pragma once

#include <cstdint>
#include <limits>

namespace shardscope {

// Times in ns since a run's start stay within ±kMaxTimeNs (1e18 ns, about 31.7
// years): the trace reader refuses more and the modeled clock stops a run that
// would pass it, so a time plus a duration, or the difference of two times,
// always fits int64.
inline constexpr int64_t kMaxTimeNs = 1'000'000'000'000'000'000;

// ceil(a / b) for a >= 0, b > 0 (sizes into chunks).
inline constexpr int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// a + b into out; false (out untouched) when the sum does not fit int64.
inline bool checkedAdd(int64_t a, int64_t b, int64_t& out) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return false;
  out = sum;
  return true;
}

// a + b, clamped to int64's range.
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// a - b, clamped to int64's range.
inline int64_t saturatingSub(int64_t a, int64_t b) {
  int64_t diff = 0;
  if (!__builtin_sub_overflow(a, b, &diff)) return diff;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

}  // namespace shardscope
