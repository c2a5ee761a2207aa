// Interned strings of one trace: event names, categories, pid/tid texts and
// argument strings are stored once and referred to by a 32-bit id, so an event
// record stays small and equal names compare as equal ids.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shardscope::kineto {

class StringTable {
 public:
  static constexpr uint32_t kEmpty = 0;  // id of ""

  StringTable();
  StringTable(StringTable&&) noexcept = default;
  StringTable& operator=(StringTable&&) noexcept = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  uint32_t intern(std::string_view s);
  std::optional<uint32_t> find(std::string_view s) const;
  std::string_view view(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }
  // Heap bytes held: the characters plus the index, for the bytes-per-event figure.
  size_t memoryBytes() const;

 private:
  std::string_view store(std::string_view s);

  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t chunk_used_ = 0, chunk_size_ = 0, allocated_ = 0;
  std::vector<std::string_view> strings_;
  std::unordered_map<std::string_view, uint32_t> index_;
};

}  // namespace shardscope::kineto
