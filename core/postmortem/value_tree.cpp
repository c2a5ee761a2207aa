// The value tree's building and reading helpers, and its JSON conversions.
#include "postmortem/value_tree.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>
#include <unordered_set>

namespace shardscope::postmortem {

Value ValueTree::addText(ValueKind kind, std::string_view text) {
  Value v;
  v.kind = kind;
  v.len = static_cast<uint32_t>(text.size());  // readers cap a text below 4 GiB
  v.offset = m_pool.size();
  m_pool.append(text);
  return v;
}

void* hugeAwareAllocate(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;  // a huge page
  void* p = bytes >= kHuge ? std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge) : std::malloc(bytes == 0 ? 1 : bytes);
  if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (bytes >= kHuge) (void)madvise(p, bytes, MADV_HUGEPAGE);  // a hint: 4 KiB pages still work
#endif
  return p;
}

ValueArena::~ValueArena() {
  for (void* chunk : m_chunks) std::free(chunk);
}

void* ValueArena::allocate(size_t bytes) {
  bytes = (bytes + 15) & ~size_t(15);
  if (bytes > m_left) {
    const size_t size = std::max(m_chunkBytes, bytes);
    void* chunk = hugeAwareAllocate(size);
    m_chunks.push_back(chunk);
    m_next = static_cast<char*>(chunk);
    m_left = size;
    m_chunkBytes = std::min(m_chunkBytes * 2, size_t(32) << 20);
  }
  void* p = m_next;
  m_next += bytes;
  m_left -= bytes;
  return p;
}

Value ValueTree::addContainer(ValueKind kind) {
  Value v;
  v.kind = kind;
  v.index = m_containers.size();
  m_containers.push_back(Container{kind, ValueItems(ArenaAllocator<Value>(m_arena.get()))});
  return v;
}

std::string_view ValueTree::text(const Value& v) const {
  if (v.kind != ValueKind::Str && v.kind != ValueKind::Bytes && v.kind != ValueKind::BigInt) return {};
  return std::string_view(m_pool).substr(v.offset, v.len);
}

const Container* ValueTree::container(const Value& v) const {
  if (v.kind != ValueKind::List && v.kind != ValueKind::Tuple && v.kind != ValueKind::Dict) return nullptr;
  return &m_containers[v.index];
}

size_t ValueTree::size(const Value& v) const {
  const Container* c = container(v);
  if (c == nullptr) return 0;
  return v.kind == ValueKind::Dict ? c->items.size() / 2 : c->items.size();
}

Value ValueTree::at(const Value& v, size_t i) const {
  const Container* c = container(v);
  if (c == nullptr || v.kind == ValueKind::Dict || i >= c->items.size()) return Value{};
  return c->items[i];
}

void ValueTree::indexKeys() {
  m_keyIndex.clear();
  for (size_t c = 0; c < m_containers.size(); ++c) {
    const Container& d = m_containers[c];
    if (d.kind != ValueKind::Dict || d.items.size() / 2 <= kIndexedDictPairs) continue;
    std::unordered_map<std::string, uint32_t>& index = m_keyIndex[c];
    for (size_t i = 0; i + 1 < d.items.size(); i += 2)
      if (d.items[i].kind == ValueKind::Str) index[std::string(text(d.items[i]))] = static_cast<uint32_t>(i + 1);
  }
}

const Value* ValueTree::get(const Value& dict, std::string_view key) const {
  if (dict.kind != ValueKind::Dict) return nullptr;
  const ValueItems& items = m_containers[dict.index].items;
  if (items.size() / 2 > kIndexedDictPairs && !m_keyIndex.empty())
    if (auto it = m_keyIndex.find(dict.index); it != m_keyIndex.end()) {
      const auto found = it->second.find(std::string(key));
      return found == it->second.end() ? nullptr : &items[found->second];
    }
  for (size_t i = items.size() / 2; i-- > 0;) {
    const Value& k = items[2 * i];
    if (k.kind == ValueKind::Str && text(k) == key) return &items[2 * i + 1];
  }
  return nullptr;
}

bool wholeFloat(double f, int64_t& out) {
  // 2^63 is exact as a double; anything at or past it (or NaN) does not fit.
  if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0) || f != std::floor(f)) return false;
  out = static_cast<int64_t>(f);
  return true;
}

std::string_view valueKindName(ValueKind k) {
  switch (k) {
    case ValueKind::None: return "None";
    case ValueKind::Bool: return "bool";
    case ValueKind::Int:
    case ValueKind::BigInt: return "int";
    case ValueKind::Float: return "float";
    case ValueKind::Str: return "str";
    case ValueKind::Bytes: return "bytes";
    case ValueKind::List: return "list";
    case ValueKind::Tuple: return "tuple";
    case ValueKind::Dict: return "dict";
  }
  return "?";
}

namespace {

Json valueToJson(const ValueTree& t, const Value& v, int depth, std::unordered_set<uint64_t>& open, size_t& budget) {
  if (budget == 0) return "...";
  --budget;
  switch (v.kind) {
    case ValueKind::None: return nullptr;
    case ValueKind::Bool: return v.i != 0;
    case ValueKind::Int: return v.i;
    case ValueKind::Float: return v.f;
    case ValueKind::BigInt:
    case ValueKind::Str:
    case ValueKind::Bytes: return std::string(t.text(v));
    default: break;
  }
  if (depth <= 0 || open.count(v.index) != 0) return "...";
  open.insert(v.index);
  const Container& c = *t.container(v);
  Json out = v.kind == ValueKind::Dict ? Json::object() : Json::array();
  if (v.kind == ValueKind::Dict) {
    for (size_t i = 0; i + 1 < c.items.size() && budget > 0; i += 2) {
      const Value& k = c.items[i];
      const std::string key = k.kind == ValueKind::Str ? std::string(t.text(k)) : valueToJson(t, k, 1, open, budget).dump(-1, ' ', false, Json::error_handler_t::replace);
      out[key] = valueToJson(t, c.items[i + 1], depth - 1, open, budget);
    }
  } else {
    for (const Value& item : c.items) {
      out.push_back(valueToJson(t, item, depth - 1, open, budget));
      if (budget == 0) break;
    }
  }
  open.erase(v.index);
  return out;
}

Value valueFromJson(ValueTree& t, const Json& j) {
  Value v;
  switch (j.type()) {
    case Json::value_t::null: return v;
    case Json::value_t::boolean:
      v.kind = ValueKind::Bool;
      v.i = j.get<bool>() ? 1 : 0;
      return v;
    case Json::value_t::number_integer:
      v.kind = ValueKind::Int;
      v.i = j.get<int64_t>();
      return v;
    case Json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) {
        v.kind = ValueKind::Int;
        v.i = static_cast<int64_t>(u);
        return v;
      }
      return t.addText(ValueKind::BigInt, std::to_string(u));
    }
    case Json::value_t::number_float:
      v.kind = ValueKind::Float;
      v.f = j.get<double>();
      return v;
    case Json::value_t::string: return t.addText(ValueKind::Str, j.get_ref<const std::string&>());
    case Json::value_t::array: {
      const Value list = t.addContainer(ValueKind::List);
      std::vector<Value> items;
      items.reserve(j.size());
      for (const Json& item : j) items.push_back(valueFromJson(t, item));
      t.container(list).items.assign(items.begin(), items.end());
      return list;
    }
    case Json::value_t::object: {
      const Value dict = t.addContainer(ValueKind::Dict);
      std::vector<Value> items;
      items.reserve(2 * j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        items.push_back(t.addText(ValueKind::Str, it.key()));
        items.push_back(valueFromJson(t, it.value()));
      }
      t.container(dict).items.assign(items.begin(), items.end());
      return dict;
    }
    default: return v;  // binary and discarded: not produced by the JSON parser
  }
}

}  // namespace

Json ValueTree::toJson(const Value& v, int max_depth, size_t max_values) const {
  std::unordered_set<uint64_t> open;
  return valueToJson(*this, v, max_depth, open, max_values);
}

ValueTree valueTreeFromJson(const Json& j) {
  ValueTree t;
  t.root = valueFromJson(t, j);  // the JSON parser's nesting limit bounds the recursion
  t.indexKeys();
  return t;
}

}  // namespace shardscope::postmortem
