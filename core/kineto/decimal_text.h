// Decimal numbers of a trace, parsed from their JSON text into integers with
// no double in between: Kineto writes ts/dur as microseconds with up to three
// fractional (nanosecond) digits, and epoch microseconds times 1000 need all
// 63 bits, which a double (53-bit mantissa) cannot hold to the nanosecond.
#pragma once

#include <cstdint>
#include <string_view>

namespace shardscope::kineto {

enum class DecimalStatus { Ok, NotANumber, OutOfRange };

struct DecimalValue {
  int64_t value = 0;
  bool float_syntax = false;  // the text had a '.', 'e' or 'E' (JSON reads it as a float)
  DecimalStatus status = DecimalStatus::NotANumber;
};

// Parses a JSON number's text (surrounding whitespace allowed) and returns it
// times 10^scale, rounded half away from zero to an integer: scale 3 turns
// microseconds into nanoseconds, scale 0 reads a plain integer.
DecimalValue parseDecimal(std::string_view text, int scale);

// Whole microseconds of a nanosecond time, rounded up / down (exact for negatives).
inline int64_t ceilToMicros(int64_t ns) {
  const int64_t q = ns / 1000, r = ns % 1000;
  return (r > 0 ? q + 1 : q) * 1000;
}
inline int64_t floorToMicros(int64_t ns) {
  const int64_t q = ns / 1000, r = ns % 1000;
  return (r < 0 ? q - 1 : q) * 1000;
}

// The double Python's json module (and so HTA's pandas frame) holds for the
// microseconds text of `ns`: the nearest double to ns / 1000. Equal to what
// json read from the file whenever its text had at most three fractional digits
// (Kineto writes three), which is when parseDecimal kept it exactly.
double microsAsJsonDouble(int64_t ns);

}  // namespace shardscope::kineto
