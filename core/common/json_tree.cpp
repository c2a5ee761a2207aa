#include "common/json_tree.h"

#include <cctype>
#include <cmath>

namespace shardscope {

JsonSyntaxError::JsonSyntaxError(int line, int column, const std::string& what)
    : std::runtime_error(line > 0 ? "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what : what),
      m_line(line),
      m_column(column) {}

namespace {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 19:
// syntax error while parsing object key - unexpected '}'; expected string literal"
// -> "expected a string key (unexpected '}'; expected string literal)".
std::string plainMessage(std::string_view what) {
  if (const size_t at = what.find("] "); !what.empty() && what[0] == '[' && at != std::string_view::npos) what.remove_prefix(at + 2);
  if (what.rfind("parse error", 0) == 0) {
    if (const size_t at = what.find(": "); at != std::string_view::npos) what.remove_prefix(at + 2);
  }
  const bool object_key = contains(what, "while parsing object key");
  if (what.rfind("syntax error while parsing ", 0) == 0) {
    if (const size_t at = what.find(" - "); at != std::string_view::npos) what.remove_prefix(at + 3);
  }
  std::string phrase;
  if (contains(what, "missing closing quote")) phrase = "unterminated string";
  else if (contains(what, "expected end of input")) phrase = "expected end of input after the top-level value";
  else if (object_key && contains(what, "expected string literal")) phrase = "expected a string key";
  else if (contains(what, "unexpected end of input")) phrase = "unexpected end of input";
  else if (contains(what, "invalid literal")) phrase = "expected a value";
  if (phrase.empty()) return std::string(what);
  return phrase + " (" + std::string(what) + ")";
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

JsonSyntaxError jsonSyntaxError(std::string_view text, size_t position, const std::exception& error) {
  // position counts the bytes read, the offending one included; the lexer may
  // have read whitespace past a token, so step back to the last byte of it.
  size_t at = position > 0 ? position - 1 : 0;
  if (at > text.size()) at = text.size();
  while (at > 0 && at <= text.size() && (at == text.size() || isSpace(text[at]))) --at;
  // A bad literal or number (tru, 01x) is named by where it starts.
  const auto word = [&](size_t i) { return i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '+' || text[i] == '-' || text[i] == '.'); };
  while (at > 0 && word(at) && word(at - 1)) --at;
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return JsonSyntaxError(line, static_cast<int>(at - line_start + 1), plainMessage(error.what()));
}

std::string_view jsonTypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "number";
    case Json::value_t::string: return "string";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    default: return "binary";
  }
}

std::string describeJson(const Json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (v.is_string() && text.size() > 48) text = text.substr(0, 44) + "...\"";
  return text;
}

bool jsonInteger(const Json& v, int64_t& out) {
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    constexpr double kTwo63 = 9223372036854775808.0;  // 2^63: the first double past int64
    if (!std::isfinite(d) || std::trunc(d) != d || d < -kTwo63 || d >= kTwo63) return false;
    out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

void JsonTreeBuilder::begin(Json& target) {
  m_target = &target;
  m_open.clear();
}

std::string JsonTreeBuilder::path() const {
  std::string out;
  for (const Open& o : m_open) {
    if (o.container->is_array()) {  // the element being built is the last one
      out += '[';
      out += std::to_string(o.container->size() - 1);
      out += ']';
      continue;
    }
    if (!out.empty()) out += '.';
    out += o.key;
  }
  return out;
}

Json* JsonTreeBuilder::slot() {
  if (m_open.empty()) return m_target;
  Open& top = m_open.back();
  if (top.container->is_array()) {
    top.container->push_back(nullptr);
    return &top.container->back();
  }
  if (top.member) return top.member;
  if (!top.dropped) top.dropped = std::make_unique<Json>();
  return top.dropped.get();
}

bool JsonTreeBuilder::place(Json&& v) {
  *slot() = std::move(v);
  if (!m_open.empty()) return false;
  m_target = nullptr;
  return true;
}

bool JsonTreeBuilder::value(Json scalar) { return place(std::move(scalar)); }

bool JsonTreeBuilder::startObject() {
  if (m_open.size() >= kMaxDepth) return false;
  Json* s = slot();
  // Reading one small object after another (trace events): reuse the last
  // one's storage, and reserve for a typical object, instead of growing it
  // key by key: a third off the trace reader's time per event.
  if (s->is_object()) {
    s->get_ref<Json::object_t&>().clear();
  } else {
    *s = Json::object();
    s->get_ref<Json::object_t&>().reserve(kReservedMembers);
  }
  m_open.push_back(Open{s, {}, nullptr, nullptr});
  return true;
}

bool JsonTreeBuilder::startArray() {
  if (m_open.size() >= kMaxDepth) return false;
  Json* s = slot();
  *s = Json::array();
  m_open.push_back(Open{s, {}, nullptr, nullptr});
  return true;
}

bool JsonTreeBuilder::end() {
  m_open.pop_back();
  if (!m_open.empty()) return false;
  m_target = nullptr;
  return true;
}

bool JsonTreeBuilder::key(std::string& name) {
  Open& top = m_open.back();
  const auto [it, inserted] = top.container->emplace(name, nullptr);
  top.member = inserted ? &it.value() : nullptr;
  top.key = std::move(name);
  return inserted;
}

namespace {

class TreeSax {
 public:
  TreeSax(std::string_view text, Json& root, const std::function<void(const std::string&)>& on_repeat)
      : m_text(text), m_onRepeat(on_repeat) {
    m_tree.begin(root);
  }

  bool null() { return scalar(nullptr); }
  bool boolean(bool v) { return scalar(v); }
  bool number_integer(Json::number_integer_t v) { return scalar(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return scalar(v); }
  bool number_float(Json::number_float_t v, const std::string&) { return scalar(v); }
  bool string(std::string& v) { return scalar(std::move(v)); }
  bool binary(Json::binary_t&) { return true; }
  bool start_object(std::size_t) {
    if (!m_tree.startObject()) tooDeep();
    return true;
  }
  bool start_array(std::size_t) {
    if (!m_tree.startArray()) tooDeep();
    return true;
  }
  bool end_object() { return m_tree.end() || true; }
  bool end_array() { return m_tree.end() || true; }
  bool key(std::string& name) {
    if (!m_tree.key(name) && m_onRepeat) m_onRepeat(m_tree.path());
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    throw jsonSyntaxError(m_text, position, e);
  }

 private:
  bool scalar(Json v) {
    m_tree.value(std::move(v));
    return true;
  }
  [[noreturn]] void tooDeep() const {
    throw JsonSyntaxError(0, 0, "nesting deeper than " + std::to_string(JsonTreeBuilder::kMaxDepth) + " levels");
  }

  std::string_view m_text;
  const std::function<void(const std::string&)>& m_onRepeat;
  JsonTreeBuilder m_tree;
};

}  // namespace

Json parseJsonTree(std::string_view text, const std::function<void(const std::string& path)>& on_repeat) {
  Json root;
  TreeSax sax(text, root, on_repeat);
  Json::sax_parse(text.begin(), text.end(), &sax, nlohmann::json::input_format_t::json, true, false);
  return root;
}

}  // namespace shardscope
