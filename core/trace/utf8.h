// UTF-8 validation for the trace writer's JsonWriter (trace/json_writer.cpp).
// It applies RFC 3629 as the reader's parser (nlohmann::json) does, so a string
// the writer emits always reads back unchanged: overlong forms, surrogates
// (U+D800..DFFF) and code points > U+10FFFF are invalid.
#pragma once

#include <cstddef>
#include <string_view>

namespace shardscope {

// Length (2..4) of the valid multi-byte sequence starting at text[pos], or 0.
// text[pos] must be >= 0x80.
inline size_t utf8SequenceLength(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  const size_t left = text.size() - pos;
  const unsigned char lead = byte(0);
  size_t length = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (left < length) return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
  }
  return length;
}

}  // namespace shardscope
