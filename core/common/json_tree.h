// Builds nlohmann::ordered_json values from nlohmann's SAX events, for readers
// that need what nlohmann's own DOM parser drops: repeated keys (kept once, the
// first, and reported to the caller), a nesting limit (deep input is an error,
// not a deep tree) and the line and column of a syntax error. The trace reader
// uses it for one event at a time, so a 1M-event trace is never one tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardscope {

using Json = nlohmann::ordered_json;

// A syntax error in JSON text: "line 2, column 8: unterminated string (...)";
// line 0 when no position is known (nesting too deep).
class JsonSyntaxError : public std::runtime_error {
 public:
  JsonSyntaxError(int line, int column, const std::string& what);
  int line() const { return m_line; }      // 1-based
  int column() const { return m_column; }  // 1-based, in bytes
 private:
  int m_line;
  int m_column;
};

// Turns nlohmann's parse_error/out_of_range (thrown or passed to a SAX
// handler's parse_error at byte `position`) into a JsonSyntaxError of `text`.
JsonSyntaxError jsonSyntaxError(std::string_view text, size_t position, const std::exception& error);

// Short text of a value for messages: 1.5, "abc" (cut after 48 bytes), an array, an object.
std::string describeJson(const Json& v);
// "null", "bool", "number", "string", "array", "object".
std::string_view jsonTypeName(const Json& v);
// True for integers in int64 and for integral floats inside it (2.0, 1e3): what a
// person means by an integer; sets out.
bool jsonInteger(const Json& v, int64_t& out);

class JsonTreeBuilder {
 public:
  static constexpr size_t kMaxDepth = 256;  // deeper nesting is an error, not a stack of containers

  // The next value goes into `target` (replacing what it held).
  void begin(Json& target);
  bool active() const { return m_target != nullptr; }
  // Containers open inside the value being built.
  size_t depth() const { return m_open.size(); }
  // Keys (and array indices) from the value's root to the member being read,
  // e.g. "device.latency_us", "buckets[3].index".
  std::string path() const;

  // Each returns true when the value begun with begin() is complete.
  bool value(Json scalar);
  bool startObject();  // false: nesting exceeds kMaxDepth (nothing opened)
  bool startArray();
  bool end();  // end_object or end_array
  // False when the open object already has this key: the first one is kept
  // and the value that follows is read and dropped.
  bool key(std::string& name);

 private:
  struct Open {
    Json* container;
    std::string key;                // objects: the member being read
    Json* member = nullptr;         // objects: its value; nullptr when it repeats a key
    std::unique_ptr<Json> dropped;  // objects: the value of a repeated key
  };
  static constexpr size_t kReservedMembers = 12;  // a trace event has 7 to 9, its args up to 12

  Json* slot();  // where the next value goes
  bool place(Json&& v);

  Json* m_target = nullptr;
  std::vector<Open> m_open;
};

// Parses one whole document strictly (no comments, nothing after it). Syntax
// errors and nesting deeper than JsonTreeBuilder::kMaxDepth throw
// JsonSyntaxError; a repeated key calls on_repeat with its path ("device.x"),
// which should throw; without it the first value is kept.
Json parseJsonTree(std::string_view text, const std::function<void(const std::string& path)>& on_repeat = {});

}  // namespace shardscope
