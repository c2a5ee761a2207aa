#include "trace/json_writer.h"

#include <charconv>
#include <cmath>
#include <ostream>
#include <stdexcept>
#include <string>

#include "trace/utf8.h"

namespace shardscope {

namespace {

// Bytes that cannot be copied into a JSON string unchecked: control characters,
// quote, backslash, and non-ASCII (validated as UTF-8 on the slow path).
constexpr bool needsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80; }

// Most strings (keys, names) are plain ASCII: detect that once and memcpy them.
constexpr size_t kFastStringBytes = 256;
bool isPlain(std::string_view text) {
  if (text.size() > kFastStringBytes) return false;
  for (const char c : text) {
    if (needsEscape(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

JsonWriter::JsonWriter(std::ostream& out, int indent)
    : m_out(out), m_indent(indent < 0 ? 0 : indent), m_buffer(new char[kBufferBytes]) {
  m_stack.reserve(16);
}

JsonWriter::~JsonWriter() {
  try {
    flush();
  } catch (...) {  // a destructor must not throw; the stream keeps its failbit
  }
}

void JsonWriter::flush() {
  if (m_used == 0) return;
  m_out.write(m_buffer.get(), static_cast<std::streamsize>(m_used));
  m_used = 0;
}

void JsonWriter::put(std::string_view text) {
  if (text.size() > kBufferBytes - m_used) {
    flush();
    if (text.size() > kBufferBytes) {  // too big to buffer: straight to the stream
      m_out.write(text.data(), static_cast<std::streamsize>(text.size()));
      return;
    }
  }
  text.copy(m_buffer.get() + m_used, text.size());
  m_used += text.size();
}

void JsonWriter::newlineIndent(size_t depth) {
  put('\n');
  const size_t spaces = depth * static_cast<size_t>(m_indent);
  for (size_t i = 0; i < spaces; ++i) put(' ');
}

void JsonWriter::beforeValue() {
  if (m_stack.empty()) {
    if (m_wroteRoot) throw std::logic_error("JsonWriter: a second top-level value; JSON allows one");
    m_wroteRoot = true;
    return;
  }
  Frame& frame = m_stack.back();
  if (frame.object) {
    if (!frame.keyPending) throw std::logic_error("JsonWriter: value inside an object needs key() first");
    frame.keyPending = false;
    return;
  }
  if (frame.hasItems) put(',');
  frame.hasItems = true;
  if (m_indent > 0) newlineIndent(m_stack.size());
  else if (frame.lines) put('\n');
}

void JsonWriter::beforeClose() {
  const Frame& frame = m_stack.back();
  if (frame.keyPending) throw std::logic_error("JsonWriter: object closed after a key without a value");
  if (!frame.hasItems) return;
  if (m_indent > 0) newlineIndent(m_stack.size() - 1);
  else if (frame.lines) put('\n');
}

JsonWriter& JsonWriter::beginObject() {
  beforeValue();
  put('{');
  m_stack.push_back(Frame{true});
  return *this;
}

JsonWriter& JsonWriter::endObject() {
  if (m_stack.empty() || !m_stack.back().object) throw std::logic_error("JsonWriter: endObject() without an open object");
  beforeClose();
  m_stack.pop_back();
  put('}');
  return *this;
}

JsonWriter& JsonWriter::beginArray(Wrap wrap) {
  beforeValue();
  put('[');
  m_stack.push_back(Frame{false, wrap == Wrap::Lines});
  return *this;
}

JsonWriter& JsonWriter::endArray() {
  if (m_stack.empty() || m_stack.back().object) throw std::logic_error("JsonWriter: endArray() without an open array");
  beforeClose();
  m_stack.pop_back();
  put(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  if (m_stack.empty() || !m_stack.back().object) throw std::logic_error("JsonWriter: key() outside an object");
  Frame& frame = m_stack.back();
  if (frame.keyPending) throw std::logic_error("JsonWriter: two keys in a row");
  const bool comma = frame.hasItems;
  frame.hasItems = true;
  frame.keyPending = true;
  if (m_indent == 0 && isPlain(name)) {  // fast path: ,"name": in one copy
    char* out = reserve(name.size() + 4);
    char* p = out;
    if (comma) *p++ = ',';
    *p++ = '"';
    p += name.copy(p, name.size());
    *p++ = '"';
    *p++ = ':';
    m_used += static_cast<size_t>(p - out);
    return *this;
  }
  if (comma) put(',');
  if (m_indent > 0) newlineIndent(m_stack.size());
  writeString(name);
  put(':');
  if (m_indent > 0) put(' ');
  return *this;
}

void JsonWriter::writeString(std::string_view text) {
  if (isPlain(text)) {
    char* out = reserve(text.size() + 2);
    out[0] = '"';
    text.copy(out + 1, text.size());
    out[text.size() + 1] = '"';
    m_used += text.size() + 2;
    return;
  }
  put('"');
  size_t run = 0;  // start of the pending run of bytes that need no escaping
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!needsEscape(c)) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const size_t length = utf8SequenceLength(text, i);
      if (length > 0) {  // valid multi-byte character: keep it in the run
        i += length;
        continue;
      }
      put(text.substr(run, i - run));
      put(kReplacementChar);
      run = ++i;
      continue;
    }
    put(text.substr(run, i - run));
    switch (c) {
      case '"': put("\\\""); break;
      case '\\': put("\\\\"); break;
      case '\b': put("\\b"); break;
      case '\f': put("\\f"); break;
      case '\n': put("\\n"); break;
      case '\r': put("\\r"); break;
      case '\t': put("\\t"); break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        const char escaped[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        put(std::string_view(escaped, 6));
      }
    }
    run = ++i;
  }
  put(text.substr(run));
  put('"');
}

JsonWriter& JsonWriter::value(std::string_view text) {
  beforeValue();
  writeString(text);
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  beforeValue();
  put(flag ? std::string_view("true") : std::string_view("false"));
  return *this;
}

JsonWriter& JsonWriter::null() {
  beforeValue();
  put("null");
  return *this;
}

JsonWriter& JsonWriter::writeInt(int64_t number) {
  beforeValue();
  char* out = reserve(24);
  m_used += static_cast<size_t>(std::to_chars(out, out + 24, number).ptr - out);
  return *this;
}

JsonWriter& JsonWriter::writeUint(uint64_t number) {
  beforeValue();
  char* out = reserve(24);
  m_used += static_cast<size_t>(std::to_chars(out, out + 24, number).ptr - out);
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  if (!std::isfinite(number)) return null();
  beforeValue();
  char* out = reserve(32);
  m_used += static_cast<size_t>(std::to_chars(out, out + 32, number).ptr - out);
  return *this;
}

JsonWriter& JsonWriter::fixed(double number, int decimals) {
  if (!std::isfinite(number)) return null();
  if (decimals < 0 || decimals > 17) throw std::invalid_argument("JsonWriter::fixed: decimals must be in [0, 17], got " + std::to_string(decimals));
  beforeValue();
  // Large magnitudes print every integer digit; fall back to a heap buffer for those.
  char local[64];
  auto result = std::to_chars(local, local + sizeof local, number, std::chars_format::fixed, decimals);
  if (result.ec == std::errc()) {
    put(std::string_view(local, static_cast<size_t>(result.ptr - local)));
    return *this;
  }
  std::string big(400, '\0');
  result = std::to_chars(big.data(), big.data() + big.size(), number, std::chars_format::fixed, decimals);
  put(std::string_view(big.data(), static_cast<size_t>(result.ptr - big.data())));
  return *this;
}

JsonWriter& JsonWriter::decimal(int64_t scaled, int decimals) {
  if (decimals < 0 || decimals > 18) throw std::invalid_argument("JsonWriter::decimal: decimals must be in [0, 18], got " + std::to_string(decimals));
  beforeValue();
  uint64_t divisor = 1;
  for (int i = 0; i < decimals; ++i) divisor *= 10;
  // Work on the magnitude in unsigned space so INT64_MIN is safe.
  const bool negative = scaled < 0;
  const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(scaled) : static_cast<uint64_t>(scaled);
  char* out = reserve(48);
  char* p = out;
  if (negative) *p++ = '-';
  p = std::to_chars(p, out + 48, magnitude / divisor).ptr;
  if (decimals > 0) {
    *p++ = '.';
    uint64_t fraction = magnitude % divisor;
    for (int i = decimals - 1; i >= 0; --i) {
      p[i] = static_cast<char>('0' + fraction % 10);
      fraction /= 10;
    }
    p += decimals;
  }
  m_used += static_cast<size_t>(p - out);
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  beforeValue();
  put(json);
  return *this;
}

}  // namespace shardscope
