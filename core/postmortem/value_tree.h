// The plain data a post-mortem file holds (a PyTorch memory snapshot or a
// flight-recorder dump, pickled or JSON): None, bools, ints, floats, strings,
// bytes, lists, tuples and dicts, and nothing that runs code. Containers live
// in the tree by index, so a pickle's memo may share one (or even nest it in
// itself) without a copy or a leak; readers walk a known schema, never blindly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_tree.h"

namespace shardscope::postmortem {

enum class ValueKind : uint8_t { None, Bool, Int, BigInt, Float, Str, Bytes, List, Tuple, Dict };

// 16 bytes: scalars inline; text (Str, Bytes, BigInt's decimal digits) as a
// span of the tree's text pool; containers as an index into its containers.
struct Value {
  ValueKind kind = ValueKind::None;
  uint32_t len = 0;  // text: bytes in the pool
  union {
    int64_t i = 0;     // Int, Bool (0/1)
    double f;          // Float
    uint64_t offset;   // text: where in the pool
    uint64_t index;    // containers
  };
};
static_assert(sizeof(Value) == 16, "a Value is two words");

struct Container {
  ValueKind kind = ValueKind::List;  // List, Tuple or Dict
  std::vector<Value> items;          // a Dict's keys and values alternate
};

class ValueTree {
 public:
  Value root;

  // Building (the readers).
  Value addText(ValueKind kind, std::string_view text);
  Value addContainer(ValueKind kind);
  Container& container(const Value& v) { return m_containers[v.index]; }
  void reserveContainers(size_t n) { m_containers.reserve(n); }
  size_t containerCount() const { return m_containers.size(); }

  // Reading. Wrong kinds give empty answers, never a throw: callers name the field.
  std::string_view text(const Value& v) const;  // Str, Bytes, BigInt
  const Container* container(const Value& v) const;
  size_t size(const Value& v) const;              // items of a list or tuple, pairs of a dict
  Value at(const Value& v, size_t i) const;       // list/tuple item i
  // A dict's value for a string key (the last one set wins, as in Python); nullptr when absent.
  const Value* get(const Value& dict, std::string_view key) const;
  bool isSeq(const Value& v) const { return v.kind == ValueKind::List || v.kind == ValueKind::Tuple; }

  // The value as JSON for messages, comparisons and tests: depth beyond
  // max_depth, a container inside itself, or any value past the first
  // max_values prints as "..." (the memo can share one container so that a
  // small file unfolds into an exponential tree). Big ints become their digits as a string.
  Json toJson(const Value& v, int max_depth = 64, size_t max_values = 4096) const;

 private:
  std::string m_pool;
  std::vector<Container> m_containers;
};

// A float that is a whole number inside int64 (JSON writers may print 1e3); false otherwise.
bool wholeFloat(double f, int64_t& out);

// "None", "bool", "int", "float", "str", "bytes", "list", "tuple", "dict".
std::string_view valueKindName(ValueKind k);

// A JSON document (as parseJsonTree reads it) as the same tree. Integers that do
// not fit int64 (nlohmann reads them as unsigned or float) stay what JSON gave.
ValueTree valueTreeFromJson(const Json& j);

}  // namespace shardscope::postmortem
