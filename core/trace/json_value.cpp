#include "trace/json_value.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "trace/json_writer.h"
#include "trace/utf8.h"

namespace shardscope {

namespace {

// Integral doubles inside int64 range also get an exact int64 (1.0, 1e3).
bool integralDouble(double number, int64_t& out) {
  // 2^63 is exactly representable; anything >= it (or < -2^63) does not fit.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (!std::isfinite(number) || std::trunc(number) != number) return false;
  if (number < -kTwo63 || number >= kTwo63) return false;
  out = static_cast<int64_t>(number);
  return true;
}

void appendUtf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

std::string hexByte(unsigned char c) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string("0x") + kHex[c >> 4] + kHex[c & 0xF];
}

}  // namespace

// ---- JsonParseError -------------------------------------------------------

JsonParseError::JsonParseError(int line, int column, const std::string& what)
    : std::runtime_error("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what),
      m_line(line),
      m_column(column) {}

// ---- JsonValue -------------------------------------------------------------

JsonValue::JsonValue(double number) {
  Number n{number, 0, false};
  n.integral = integralDouble(number, n.integer);
  m_data = n;
}

JsonValue JsonValue::parse(std::string_view text) {
  JsonParser parser(text);
  JsonValue value = parser.parseValue();
  parser.expectEnd();
  return value;
}

std::string_view JsonValue::typeName(Type type) {
  switch (type) {
    case Type::Null: return "null";
    case Type::Bool: return "bool";
    case Type::Number: return "number";
    case Type::String: return "string";
    case Type::Array: return "array";
    case Type::Object: return "object";
  }
  return "?";
}

namespace {
[[noreturn]] void wrongType(JsonValue::Type want, JsonValue::Type have) {
  throw std::logic_error("JsonValue: asked for " + std::string(JsonValue::typeName(want)) + " but the value is " +
                         std::string(JsonValue::typeName(have)));
}
}  // namespace

bool JsonValue::asBool() const {
  if (!isBool()) wrongType(Type::Bool, type());
  return std::get<bool>(m_data);
}

double JsonValue::asDouble() const {
  if (!isNumber()) wrongType(Type::Number, type());
  return std::get<Number>(m_data).value;
}

int64_t JsonValue::asInt64() const {
  if (!isInteger()) throw std::logic_error("JsonValue: asked for an integer but the value is " + (isNumber() ? std::string("a non-integral number") : std::string(typeName(type()))));
  return std::get<Number>(m_data).integer;
}

const std::string& JsonValue::asString() const {
  if (!isString()) wrongType(Type::String, type());
  return std::get<std::string>(m_data);
}

const JsonValue::Array& JsonValue::asArray() const {
  if (!isArray()) wrongType(Type::Array, type());
  return std::get<Array>(m_data);
}

const JsonValue::Object& JsonValue::asObject() const {
  if (!isObject()) wrongType(Type::Object, type());
  return std::get<Object>(m_data);
}

JsonValue::Array& JsonValue::asArray() {
  if (!isArray()) wrongType(Type::Array, type());
  return std::get<Array>(m_data);
}

JsonValue::Object& JsonValue::asObject() {
  if (!isObject()) wrongType(Type::Object, type());
  return std::get<Object>(m_data);
}

const JsonValue* JsonValue::find(std::string_view key) const {
  if (!isObject()) return nullptr;
  for (const JsonMember& member : std::get<Object>(m_data)) {
    if (member.key == key) return &member.value;
  }
  return nullptr;
}

void JsonValue::write(JsonWriter& out) const {
  switch (type()) {
    case Type::Null: out.null(); break;
    case Type::Bool: out.value(std::get<bool>(m_data)); break;
    case Type::Number: {
      const Number& n = std::get<Number>(m_data);
      if (n.integral) out.value(n.integer);
      else out.value(n.value);
      break;
    }
    case Type::String: out.value(std::string_view(std::get<std::string>(m_data))); break;
    case Type::Array:
      out.beginArray();
      for (const JsonValue& item : std::get<Array>(m_data)) item.write(out);
      out.endArray();
      break;
    case Type::Object:
      out.beginObject();
      for (const JsonMember& member : std::get<Object>(m_data)) {
        out.key(member.key);
        member.value.write(out);
      }
      out.endObject();
      break;
  }
}

std::string JsonValue::dump() const {
  std::ostringstream stream;
  {
    JsonWriter writer(stream);
    write(writer);
  }
  return stream.str();
}

bool operator==(const JsonValue& a, const JsonValue& b) { return a.m_data == b.m_data; }

// ---- JsonParser ------------------------------------------------------------

void JsonParser::failAt(size_t offset, const std::string& what) const {
  int line = 1;
  size_t line_start = 0;
  const size_t end = offset < m_text.size() ? offset : m_text.size();
  for (size_t i = 0; i < end; ++i) {
    if (m_text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  throw JsonParseError(line, static_cast<int>(offset - line_start + 1), what);
}

std::string JsonParser::describeNext() const {
  if (m_pos >= m_text.size()) return "end of input";
  const auto c = static_cast<unsigned char>(m_text[m_pos]);
  if (c >= 0x21 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  return "byte " + hexByte(c);
}

void JsonParser::skipWhitespace() {
  while (m_pos < m_text.size()) {
    const char c = m_text[m_pos];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
    ++m_pos;
  }
}

char JsonParser::peekToken(const char* expected) {
  skipWhitespace();
  if (m_pos >= m_text.size()) fail(std::string("expected ") + expected + ", got end of input");
  return m_text[m_pos];
}

void JsonParser::expectChar(char c, const char* context) {
  if (peekToken(context) != c) fail(std::string("expected ") + context + ", got " + describeNext());
  ++m_pos;
}

void JsonParser::expectEnd() {
  skipWhitespace();
  if (m_pos != m_text.size()) fail("expected end of input after the JSON value, got " + describeNext());
}

void JsonParser::expectLiteral(std::string_view word) {
  if (m_text.substr(m_pos, word.size()) != word) fail("expected a value (true, false, null, number, string, array or object), got " + describeNext());
  m_pos += word.size();
}

JsonValue JsonParser::parseValue() { return parseAt(m_open.size()); }

void JsonParser::skipValue() { (void)parseValue(); }

JsonValue JsonParser::parseAt(size_t depth) {
  if (depth >= kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  const char c = peekToken("a value");
  switch (c) {
    case '{': {
      ++m_pos;
      JsonValue::Object members;
      if (peekToken("a string key or '}'") == '}') {
        ++m_pos;
        return JsonValue(std::move(members));
      }
      members.reserve(8);  // trace events have ~8 members: saves 3 regrowths per event
      while (true) {
        if (peekToken("a string key") != '"') fail("expected a string key, got " + describeNext());
        JsonMember member;
        parseString(member.key);
        expectChar(':', "':' after an object key");
        member.value = parseAt(depth + 1);
        members.push_back(std::move(member));
        const char next = peekToken("',' or '}' after an object member");
        ++m_pos;
        if (next == '}') break;
        if (next != ',') {
          --m_pos;
          fail("expected ',' or '}' after an object member, got " + describeNext());
        }
      }
      return JsonValue(std::move(members));
    }
    case '[': {
      ++m_pos;
      JsonValue::Array items;
      if (peekToken("a value or ']'") == ']') {
        ++m_pos;
        return JsonValue(std::move(items));
      }
      while (true) {
        items.push_back(parseAt(depth + 1));
        const char next = peekToken("',' or ']' after an array element");
        ++m_pos;
        if (next == ']') break;
        if (next != ',') {
          --m_pos;
          fail("expected ',' or ']' after an array element, got " + describeNext());
        }
      }
      return JsonValue(std::move(items));
    }
    case '"': {
      std::string text;
      parseString(text);
      return JsonValue(std::move(text));
    }
    case 't': expectLiteral("true"); return JsonValue(true);
    case 'f': expectLiteral("false"); return JsonValue(false);
    case 'n': expectLiteral("null"); return JsonValue();
    default:
      if (c == '-' || isDigit(c)) return parseNumber();
      fail("expected a value (true, false, null, number, string, array or object), got " + describeNext());
  }
}

void JsonParser::parseString(std::string& out) {
  const size_t start = m_pos;
  ++m_pos;  // opening quote
  out.clear();
  size_t run = m_pos;
  while (true) {
    if (m_pos >= m_text.size()) failAt(start, "unterminated string (input ends before its closing '\"')");
    const auto c = static_cast<unsigned char>(m_text[m_pos]);
    if (c == '"') {
      out.append(m_text, run, m_pos - run);
      ++m_pos;
      return;
    }
    if (c < 0x20) fail("control character " + hexByte(c) + " must be escaped inside a string");
    if (c >= 0x80) {
      const size_t length = utf8SequenceLength(m_text, m_pos);
      if (length == 0) fail("invalid UTF-8 byte " + hexByte(c) + " in a string");
      m_pos += length;
      continue;
    }
    if (c != '\\') {
      ++m_pos;
      continue;
    }
    out.append(m_text, run, m_pos - run);
    const size_t escape_at = m_pos;
    ++m_pos;
    if (m_pos >= m_text.size()) failAt(start, "unterminated string (input ends inside an escape)");
    switch (m_text[m_pos]) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        const auto read_hex4 = [&](size_t at) -> uint32_t {
          uint32_t v = 0;
          for (size_t i = 0; i < 4; ++i) {
            const int d = at + i < m_text.size() ? hexDigit(m_text[at + i]) : -1;
            if (d < 0) failAt(at + i, "expected 4 hex digits after \\u");
            v = v * 16 + static_cast<uint32_t>(d);
          }
          return v;
        };
        uint32_t code_point = read_hex4(m_pos + 1);
        m_pos += 4;
        if (code_point >= 0xDC00 && code_point <= 0xDFFF) failAt(escape_at, "lone low surrogate \\u escape in a string");
        if (code_point >= 0xD800 && code_point <= 0xDBFF) {
          if (m_text.substr(m_pos + 1, 2) != "\\u") failAt(escape_at, "high surrogate \\u escape not followed by a low surrogate");
          const uint32_t low = read_hex4(m_pos + 3);
          if (low < 0xDC00 || low > 0xDFFF) failAt(escape_at, "high surrogate \\u escape not followed by a low surrogate");
          code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
          m_pos += 6;
        }
        appendUtf8(out, code_point);
        break;
      }
      default: fail("invalid escape '\\" + std::string(1, m_text[m_pos]) + "' in a string (allowed: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
    }
    ++m_pos;
    run = m_pos;
  }
}

JsonValue JsonParser::parseNumber() {
  const size_t start = m_pos;
  size_t p = m_pos;
  const auto at = [&](size_t i) { return i < m_text.size() ? m_text[i] : '\0'; };
  if (at(p) == '-') ++p;
  if (at(p) == '0') {
    ++p;
    if (isDigit(at(p))) failAt(p, "leading zeros are not allowed in a number");
  } else if (isDigit(at(p))) {
    while (isDigit(at(p))) ++p;
  } else {
    failAt(p, "expected a digit in a number");
  }
  bool integer_syntax = true;
  if (at(p) == '.') {
    integer_syntax = false;
    ++p;
    if (!isDigit(at(p))) failAt(p, "expected a digit after the decimal point");
    while (isDigit(at(p))) ++p;
  }
  if (at(p) == 'e' || at(p) == 'E') {
    integer_syntax = false;
    ++p;
    if (at(p) == '+' || at(p) == '-') ++p;
    if (!isDigit(at(p))) failAt(p, "expected a digit in the exponent");
    while (isDigit(at(p))) ++p;
  }
  m_pos = p;
  const char* first = m_text.data() + start;
  const char* last = m_text.data() + p;
  if (integer_syntax) {
    int64_t integer = 0;
    const auto result = std::from_chars(first, last, integer);
    if (result.ec == std::errc() && result.ptr == last) return JsonValue(integer);
    // Too big for int64: fall through to double.
  }
  double number = 0;
  const auto result = std::from_chars(first, last, number);
  // Values beyond a double (1e400, 1e-400) are rejected rather than silently clamped.
  if (result.ec == std::errc::result_out_of_range) failAt(start, "number " + std::string(first, last) + " is out of range for a double");
  if (result.ec != std::errc() || result.ptr != last) failAt(start, "malformed number");
  return JsonValue(number);
}

void JsonParser::beginObject() {
  if (m_open.size() >= kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  if (peekToken("an object ('{')") != '{') fail("expected an object ('{'), got " + describeNext());
  ++m_pos;
  m_open.push_back(Open{true, false});
}

void JsonParser::beginArray() {
  if (m_open.size() >= kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  if (peekToken("an array ('[')") != '[') fail("expected an array ('['), got " + describeNext());
  ++m_pos;
  m_open.push_back(Open{false, false});
}

bool JsonParser::nextItem(bool object, char close) {
  if (m_open.empty() || m_open.back().object != object) {
    throw std::logic_error(object ? "JsonParser::nextMember() without beginObject()" : "JsonParser::nextElement() without beginArray()");
  }
  Open& open = m_open.back();
  const char* what = object ? (open.hasItems ? "',' or '}' after an object member" : "a string key or '}'")
                            : (open.hasItems ? "',' or ']' after an array element" : "a value or ']'");
  const char c = peekToken(what);
  if (c == close) {
    ++m_pos;
    m_open.pop_back();
    return false;
  }
  if (open.hasItems) {
    if (c != ',') fail(std::string("expected ") + what + ", got " + describeNext());
    ++m_pos;
  }
  open.hasItems = true;
  return true;
}

bool JsonParser::nextMember(std::string& key) {
  if (!nextItem(true, '}')) return false;
  if (peekToken("a string key") != '"') fail("expected a string key, got " + describeNext());
  parseString(key);
  expectChar(':', "':' after an object key");
  return true;
}

bool JsonParser::nextElement() { return nextItem(false, ']'); }

}  // namespace shardscope
