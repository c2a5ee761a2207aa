// The plain data a post-mortem file holds (a PyTorch memory snapshot or a
// flight-recorder dump, pickled or JSON): None, bools, ints, floats, strings,
// bytes, lists, tuples and dicts, and nothing that runs code. Containers live
// in the tree by index, so a pickle's memo may share one (or even nest it in
// itself) without a copy or a leak; readers walk a known schema, never blindly.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <string>
#include <unordered_map>
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

// Where a tree's small containers keep their items: bump-allocated chunks,
// given huge pages where the kernel has them, freed with the tree. A
// snapshot's million small dicts then cost no malloc each and a few page
// faults in all (4 KiB pages made a 1M-entry snapshot spend half its time faulting).
class ValueArena {
 public:
  ValueArena() = default;
  ValueArena(const ValueArena&) = delete;
  ValueArena& operator=(const ValueArena&) = delete;
  ~ValueArena();
  void* allocate(size_t bytes);  // 16-byte aligned
  static constexpr size_t kLargest = 64 * 1024;  // larger blocks come from the heap (and go back to it)

 private:
  std::vector<void*> m_chunks;
  char* m_next = nullptr;
  size_t m_left = 0;
  size_t m_chunkBytes = 256 * 1024;  // doubles up to 32 MiB
};

// Large blocks (2 MiB and more) on huge pages where the kernel has them
// (madvise), others from malloc; both go back with std::free.
void* hugeAwareAllocate(size_t bytes);

// A std::vector allocator for the readers' big arrays (the tree's container
// list, a pickle's memo): hugeAwareAllocate.
template <class T>
struct HugeAllocator {
  using value_type = T;
  HugeAllocator() = default;
  template <class U>
  HugeAllocator(const HugeAllocator<U>&) {}  // NOLINT: rebinding converts
  T* allocate(size_t n) { return static_cast<T*>(hugeAwareAllocate(n * sizeof(T))); }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const HugeAllocator<U>&) const { return true; }
};

// A std::vector allocator over a ValueArena: small blocks are the arena's
// (never freed one by one: a grown vector leaves its old block behind), large
// ones the heap's. Without an arena it is the heap's throughout.
template <class T>
struct ArenaAllocator {
  using value_type = T;
  ValueArena* arena = nullptr;
  ArenaAllocator() = default;
  explicit ArenaAllocator(ValueArena* a) : arena(a) {}
  template <class U>
  ArenaAllocator(const ArenaAllocator<U>& o) : arena(o.arena) {}  // NOLINT: rebinding converts
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (arena != nullptr && bytes <= ValueArena::kLargest) return static_cast<T*>(arena->allocate(bytes));
    return static_cast<T*>(hugeAwareAllocate(bytes));
  }
  void deallocate(T* p, size_t n) {
    if (arena == nullptr || n * sizeof(T) > ValueArena::kLargest) std::free(p);
  }
  template <class U>
  bool operator==(const ArenaAllocator<U>& o) const { return arena == o.arena; }
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
};

using ValueItems = std::vector<Value, ArenaAllocator<Value>>;

struct Container {
  ValueKind kind = ValueKind::List;  // List, Tuple or Dict
  ValueItems items;                  // a Dict's keys and values alternate
};

class ValueTree {
 public:
  Value root;
  // The document's size in bytes (0: built in memory): what a reader may
  // copy out of the tree is bounded relative to it (ExpansionBudget).
  size_t source_bytes = 0;

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
  // Indexes the string keys of every dict of more than kIndexedDictPairs
  // pairs, once, when the tree is complete (the readers call it): a dict
  // with N junk keys that a snapshot's every entry shares would otherwise
  // make each lookup scan N keys, quadratic over the file.
  void indexKeys();
  static constexpr size_t kIndexedDictPairs = 32;
  bool isSeq(const Value& v) const { return v.kind == ValueKind::List || v.kind == ValueKind::Tuple; }

  // The value as JSON for messages, comparisons and tests: depth beyond
  // max_depth, a container inside itself, or any value past the first
  // max_values prints as "..." (the memo can share one container so that a
  // small file unfolds into an exponential tree). Big ints become their digits as a string.
  Json toJson(const Value& v, int max_depth = 64, size_t max_values = 4096) const;

 private:
  std::string m_pool;
  std::unique_ptr<ValueArena> m_arena = std::make_unique<ValueArena>();  // stays put when the tree moves
  std::vector<Container, HugeAllocator<Container>> m_containers;
  // Container index -> key -> the item of its last value (indexKeys).
  std::unordered_map<uint64_t, std::unordered_map<std::string, uint32_t>> m_keyIndex;
};

// A float that is a whole number inside int64 (JSON writers may print 1e3); false otherwise.
bool wholeFloat(double f, int64_t& out);

// "None", "bool", "int", "float", "str", "bytes", "list", "tuple", "dict".
std::string_view valueKindName(ValueKind k);

// A JSON document (as parseJsonTree reads it) as the same tree. Integers that do
// not fit int64 (nlohmann reads them as unsigned or float) stay what JSON gave.
ValueTree valueTreeFromJson(const Json& j);

}  // namespace shardscope::postmortem
