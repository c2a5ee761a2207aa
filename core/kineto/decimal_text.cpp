#include "kineto/decimal_text.h"

#include <cmath>

namespace shardscope::kineto {

namespace {

__extension__ typedef __int128 Int128;  // holds 38 digits: wide enough to see overflow
__extension__ typedef unsigned __int128 UInt128;

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The common shape, in 64 bits: [-]digits[.digits] with no more fractional
// digits than the scale and at most 19 digits once scaled (Kineto's "ts" and
// "dur" as the profiler writes them). False leaves the text to the general
// reader below, which gives the same value for any text this accepts.
bool parseShortDecimal(std::string_view s, int scale, DecimalValue& out) {
  const char* p = s.data();
  const char* const end = p + s.size();
  const bool negative = p != end && *p == '-';
  p += negative;
  uint64_t m = 0;
  int digits = 0, fraction = 0;
  for (; p != end && unsigned(*p - '0') < 10; ++p, ++digits) m = m * 10 + unsigned(*p - '0');
  if (digits == 0) return false;
  if (p != end && *p == '.') {
    for (++p; p != end && unsigned(*p - '0') < 10; ++p, ++fraction) m = m * 10 + unsigned(*p - '0');
    if (fraction == 0 || fraction > scale) return false;
    out.float_syntax = true;
  }
  if (p != end || digits + scale > 19) return false;
  for (int k = fraction; k < scale; ++k) m *= 10;
  const uint64_t limit = negative ? uint64_t(INT64_MAX) + 1 : uint64_t(INT64_MAX);
  if (m > limit) return false;
  out.value = negative ? static_cast<int64_t>(0 - m) : static_cast<int64_t>(m);
  out.status = DecimalStatus::Ok;
  return true;
}

}  // namespace

DecimalValue parseDecimal(std::string_view text, int scale) {
  DecimalValue out;
  if (scale >= 0 && parseShortDecimal(text, scale, out)) return out;
  out = DecimalValue{};
  const std::string_view s = trim(text);
  size_t i = 0;
  const bool negative = i < s.size() && s[i] == '-';
  if (negative) ++i;
  // Mantissa digits accumulate in 128 bits; past 38 significant digits the
  // value is out of any int64 range anyway.
  Int128 mantissa = 0;
  int exponent = 0, digits = 0;
  bool overflow = false;
  const auto addDigit = [&](char c) {
    if (mantissa > (Int128(1) << 120)) {
      overflow = true;
      return;
    }
    mantissa = mantissa * 10 + (c - '0');
  };
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    addDigit(s[i++]);
    ++digits;
  }
  if (i < s.size() && s[i] == '.') {
    out.float_syntax = true;
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (!overflow && mantissa <= (Int128(1) << 120)) {
        addDigit(s[i]);
        --exponent;
      }
      ++i;
      ++digits;
    }
  }
  if (digits == 0) return out;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    out.float_syntax = true;
    ++i;
    bool exp_negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) exp_negative = s[i++] == '-';
    int e = 0, exp_digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (e < 100000) e = e * 10 + (s[i] - '0');
      ++i;
      ++exp_digits;
    }
    if (exp_digits == 0) return out;
    exponent += exp_negative ? -e : e;
  }
  if (i != s.size()) return out;
  if (overflow) {
    out.status = DecimalStatus::OutOfRange;
    return out;
  }
  exponent += scale;
  // Scale the mantissa by 10^exponent, rounding half away from zero when digits drop.
  if (exponent >= 0) {
    for (int k = 0; k < exponent; ++k) {
      if (mantissa == 0) break;
      if (mantissa > (Int128(1) << 120)) {
        out.status = DecimalStatus::OutOfRange;
        return out;
      }
      mantissa *= 10;
    }
  } else {
    for (int k = 0; k < -exponent && mantissa != 0; ++k) {
      const bool last = k == -exponent - 1;
      const int digit = static_cast<int>(mantissa % 10);
      mantissa /= 10;
      if (last && digit >= 5) mantissa += 1;
    }
  }
  const Int128 limit = negative ? -Int128(INT64_MIN) : Int128(INT64_MAX);
  if (mantissa > limit) {
    out.status = DecimalStatus::OutOfRange;
    return out;
  }
  out.value = negative ? static_cast<int64_t>(-mantissa) : static_cast<int64_t>(mantissa);
  out.status = DecimalStatus::Ok;
  return out;
}

double microsAsJsonDouble(int64_t ns) {
  // The nearest double to ns / 1000, as CPython's correctly rounded float
  // parser reads the microseconds text. Below 2^53 both operands are exact
  // and IEEE division rounds once: that is it. Above (epoch nanoseconds),
  // (double)ns / 1000 would round twice: the quotient is taken exactly in
  // 128 bits instead, ns * 2^64 / 1000 (at least 54 bits), and rounded to 53
  // bits, half to even, with the remainder as the sticky bit. No text: this
  // runs for every event of a float-timestamp trace (snprintf + from_chars
  // was 12% of `analyze`).
  const bool negative = ns < 0;
  const uint64_t mag = negative ? 0 - uint64_t(ns) : uint64_t(ns);
  if (mag < (uint64_t(1) << 53)) return static_cast<double>(ns) / 1000.0;
  const UInt128 num = static_cast<UInt128>(mag) << 64;
  const UInt128 q = num / 1000;
  const bool sticky = num % 1000 != 0;
  const uint64_t high = static_cast<uint64_t>(q >> 64);  // non-zero: mag >= 2^53
  int shift = 64 + (64 - __builtin_clzll(high)) - 53;
  uint64_t mant = static_cast<uint64_t>(q >> shift);
  const UInt128 rest = q & ((static_cast<UInt128>(1) << shift) - 1);
  const UInt128 half = static_cast<UInt128>(1) << (shift - 1);
  if (rest > half || (rest == half && (sticky || (mant & 1)))) {
    ++mant;
    if (mant == (uint64_t(1) << 53)) {
      mant >>= 1;
      ++shift;
    }
  }
  const double value = std::ldexp(static_cast<double>(mant), shift - 64);
  return negative ? -value : value;
}

}  // namespace shardscope::kineto
