#include "kineto/decimal_text.h"

#include <charconv>
#include <cstdio>

namespace shardscope::kineto {

namespace {

__extension__ typedef __int128 Int128;  // holds 38 digits: wide enough to see overflow

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
  // Written back as the decimal text and read with a correctly rounded
  // conversion, as CPython's float parser reads it; (double)ns / 1000 would
  // round twice once ns passes 2^53 (epoch nanoseconds do).
  const uint64_t mag = ns < 0 ? 0 - uint64_t(ns) : uint64_t(ns);
  char text[32];
  const int n = std::snprintf(text, sizeof text, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(mag / 1000),
                              (unsigned long long)(mag % 1000));
  double value = 0;
  std::from_chars(text, text + n, value);
  return value;
}

}  // namespace shardscope::kineto
