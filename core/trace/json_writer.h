// Streaming JSON writer for the Chrome trace sink (trace/chrome_trace_writer.cpp)
// only; everything else writes JSON with nlohmann::json. It stays because it is
// measurably faster on the one large document ShardScope writes: 1M events in
// 0.23 s CPU (4.4 M events/s, 850 MB/s) against 10 s (0.1 M events/s, 19 MB/s)
// for the same document built as an nlohmann::ordered_json and dumped; memcpy
// of the bytes takes 0.02 s (tests/bench/bench_event_record, docs/performance.md).
// It buffers output in a fixed block and inserts commas, colons and (optional)
// indentation itself, so callers only say what comes next. Output is always
// valid UTF-8 JSON: invalid UTF-8 in strings becomes U+FFFD and non-finite
// doubles become null.
#pragma once

#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

namespace shardscope {

class JsonWriter {
 public:
  // indent = 0 writes compact JSON; > 0 puts each member/element on its own line.
  explicit JsonWriter(std::ostream& out, int indent = 0);
  ~JsonWriter();  // flushes what is buffered (never throws)
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  // Lines puts each element of this array on its own line even in compact mode
  // (one trace event per line keeps huge files greppable and errors locatable).
  enum class Wrap { Auto, Lines };

  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray(Wrap wrap = Wrap::Auto);
  JsonWriter& endArray();
  JsonWriter& key(std::string_view name);  // only inside an object, before each value

  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(bool flag);
  JsonWriter& value(double number);  // shortest text that reads back to the same double
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  JsonWriter& value(T number) {
    if constexpr (std::is_signed_v<T>) return writeInt(static_cast<int64_t>(number));
    else return writeUint(static_cast<uint64_t>(number));
  }
  JsonWriter& null();
  // number with exactly `decimals` digits after the point (rounded).
  JsonWriter& fixed(double number, int decimals);
  // The exact decimal scaled / 10^decimals, e.g. decimal(12345, 3) -> 12.345 (ns -> us).
  JsonWriter& decimal(int64_t scaled, int decimals);
  // A complete JSON value the caller has already serialized; written as is.
  JsonWriter& raw(std::string_view json);

  template <typename T>
  JsonWriter& member(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  // Pushes buffered bytes to the stream (also done when the buffer fills).
  void flush();
  // True once exactly one top-level value has been written and closed.
  bool complete() const { return m_stack.empty() && m_wroteRoot; }

 private:
  struct Frame {
    bool object;
    bool lines = false;       // array: one element per line
    bool hasItems = false;
    bool keyPending = false;  // object: a key was written, its value is due
  };
  static constexpr size_t kBufferBytes = 1 << 16;

  void beforeValue();
  void beforeClose();
  void newlineIndent(size_t depth);
  JsonWriter& writeInt(int64_t number);
  JsonWriter& writeUint(uint64_t number);
  void writeString(std::string_view text);
  char* reserve(size_t bytes) {  // room for `bytes` contiguous chars (bytes <= kBufferBytes)
    if (kBufferBytes - m_used < bytes) flush();
    return m_buffer.get() + m_used;
  }
  void put(char c) { *reserve(1) = c; ++m_used; }
  void put(std::string_view text);

  std::ostream& m_out;
  int m_indent;
  std::unique_ptr<char[]> m_buffer;
  size_t m_used = 0;
  std::vector<Frame> m_stack;
  bool m_wroteRoot = false;
};

}  // namespace shardscope
