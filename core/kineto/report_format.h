// Small text helpers the trace reports share (step times, trace diff,
// annotation breakdown): a JSON string literal, a CSV field and fixed-point
// numbers, NaN written as JSON null. Header-only so core's unity batches see
// one definition.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace shardscope::kineto {

inline std::string reportJsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char e[8];
      std::snprintf(e, sizeof e, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += e;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// RFC 4180: quoted when it holds a comma, quote or line break; quotes doubled.
inline std::string reportCsvField(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// a + b, held at INT64_MAX / INT64_MIN instead of overflowing: durations are
// each within int64 nanoseconds, their sums over a crafted file need not be.
inline int64_t reportAddNs(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
  return sum;
}
inline int64_t reportSubNs(int64_t a, int64_t b) {
  int64_t diff = 0;
  if (__builtin_sub_overflow(a, b, &diff)) return b < 0 ? INT64_MAX : INT64_MIN;
  return diff;
}
inline void reportAccumulateNs(int64_t& into, int64_t b) { into = reportAddNs(into, b); }

// v with `decimals` digits after the point; "null" for NaN (JSON), "n/a" with text = true.
inline std::string reportFixed(double v, int decimals = 3, bool text = false) {
  if (std::isnan(v)) return text ? "n/a" : "null";
  char s[64];
  std::snprintf(s, sizeof s, "%.*f", decimals, v + 0.0);  // + 0.0: no "-0.000"
  std::string out = s;
  if (out.find_first_not_of("-0.") == std::string::npos && out[0] == '-') out.erase(0, 1);
  return out;
}

// ns as microseconds, 3 decimals (exact: a ns is 0.001 us).
inline std::string reportUs(double ns, bool text = false) { return reportFixed(ns / 1000.0, 3, text); }

}  // namespace shardscope::kineto
