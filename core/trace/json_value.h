// A small strict JSON document type and parser (RFC 8259: no comments, no
// trailing commas, no NaN, valid UTF-8 only). Objects keep their key order.
// JsonParser can also walk a huge top-level container one element at a time,
// so a 1M-event trace is never held as one tree. Errors carry line:column.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace shardscope {

class JsonWriter;
struct JsonMember;

class JsonParseError : public std::runtime_error {
 public:
  JsonParseError(int line, int column, const std::string& what);
  int line() const { return m_line; }      // 1-based
  int column() const { return m_column; }  // 1-based, in bytes
 private:
  int m_line;
  int m_column;
};

class JsonValue {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<JsonValue>;
  using Object = std::vector<JsonMember>;

  JsonValue() = default;  // null
  JsonValue(std::nullptr_t) {}
  JsonValue(bool flag) : m_data(flag) {}
  JsonValue(double number);
  JsonValue(int64_t number) : m_data(Number{static_cast<double>(number), number, true}) {}
  JsonValue(int number) : JsonValue(static_cast<int64_t>(number)) {}
  JsonValue(std::string text) : m_data(std::move(text)) {}
  JsonValue(const char* text) : m_data(std::string(text)) {}
  JsonValue(Array items) : m_data(std::move(items)) {}
  JsonValue(Object members) : m_data(std::move(members)) {}

  // Parses exactly one value; anything but whitespace after it is an error.
  static JsonValue parse(std::string_view text);

  Type type() const { return static_cast<Type>(m_data.index()); }
  bool isNull() const { return type() == Type::Null; }
  bool isBool() const { return type() == Type::Bool; }
  bool isNumber() const { return type() == Type::Number; }
  // A number with no fractional part that fits int64 (1, -3, 2.0, 1e3).
  bool isInteger() const { return isNumber() && std::get<Number>(m_data).integral; }
  bool isString() const { return type() == Type::String; }
  bool isArray() const { return type() == Type::Array; }
  bool isObject() const { return type() == Type::Object; }

  // Accessors throw std::logic_error when the type is wrong (check first).
  bool asBool() const;
  double asDouble() const;
  int64_t asInt64() const;  // requires isInteger()
  const std::string& asString() const;
  const Array& asArray() const;
  const Object& asObject() const;
  Array& asArray();
  Object& asObject();

  // Object member lookup (first match); nullptr when absent or not an object.
  const JsonValue* find(std::string_view key) const;

  // Compact serialization; integers print exactly, other numbers shortest round-trip.
  std::string dump() const;
  void write(JsonWriter& out) const;

  static std::string_view typeName(Type type);  // "null", "bool", "number", ...

  friend bool operator==(const JsonValue&, const JsonValue&);

 private:
  struct Number {
    double value = 0;
    int64_t integer = 0;  // valid when integral
    bool integral = false;
    friend bool operator==(const Number& a, const Number& b) {
      return a.integral == b.integral && (a.integral ? a.integer == b.integer : a.value == b.value);
    }
  };
  std::variant<std::nullptr_t, bool, Number, std::string, Array, Object> m_data;
};

struct JsonMember {
  std::string key;
  JsonValue value;
  friend bool operator==(const JsonMember&, const JsonMember&) = default;
};

// Pull parser over an in-memory text. parseValue() reads one whole value;
// beginObject()/nextMember() and beginArray()/nextElement() step through a
// container without building it, so large arrays can be processed in place.
class JsonParser {
 public:
  static constexpr size_t kMaxDepth = 256;  // deeper nesting is an error, not a stack overflow

  explicit JsonParser(std::string_view text) : m_text(text) {}

  JsonValue parseValue();
  void beginObject();
  // Reads the next member's key (and its ':'); false once the object closed.
  bool nextMember(std::string& key);
  void beginArray();
  // True when another element follows (its value is next); false once the array closed.
  bool nextElement();
  // Skips one value without building it.
  void skipValue();
  // Requires that only whitespace remains.
  void expectEnd();

  size_t offset() const { return m_pos; }
  [[noreturn]] void fail(const std::string& what) const { failAt(m_pos, what); }
  [[noreturn]] void failAt(size_t offset, const std::string& what) const;

 private:
  struct Open {
    bool object;
    bool hasItems;
  };
  JsonValue parseAt(size_t depth);
  bool nextItem(bool object, char close);
  void skipWhitespace();
  char peekToken(const char* expected);  // skips whitespace; fails at end of input
  void expectChar(char c, const char* context);
  void parseString(std::string& out);
  JsonValue parseNumber();
  void expectLiteral(std::string_view word);
  std::string describeNext() const;

  std::string_view m_text;
  size_t m_pos = 0;
  std::vector<Open> m_open;  // containers opened by beginObject()/beginArray()
};

}  // namespace shardscope
