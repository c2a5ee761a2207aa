#include "kineto/string_table.h"

#include <algorithm>
#include <cstring>

namespace shardscope::kineto {

namespace {
// Chunks double from 64 KiB (a small trace's names) up to 1 MiB.
constexpr size_t kFirstChunkBytes = 64 << 10, kChunkBytes = 1 << 20;
}

StringTable::StringTable() {
  strings_.emplace_back();
  index_.emplace(std::string_view(), kEmpty);
}

std::string_view StringTable::store(std::string_view s) {
  if (s.size() > chunk_size_ - chunk_used_) {
    chunk_size_ = std::max(std::clamp(allocated_, kFirstChunkBytes, kChunkBytes), s.size());
    chunks_.push_back(std::make_unique_for_overwrite<char[]>(chunk_size_));  // only stored bytes are read
    allocated_ += chunk_size_;
    chunk_used_ = 0;
  }
  char* at = chunks_.back().get() + chunk_used_;
  if (!s.empty()) std::memcpy(at, s.data(), s.size());  // an empty view may have a null data()
  chunk_used_ += s.size();
  return {at, s.size()};
}

uint32_t StringTable::intern(std::string_view s) {
  const auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  const std::string_view kept = store(s);
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.push_back(kept);
  index_.emplace(kept, id);
  return id;
}

std::optional<uint32_t> StringTable::find(std::string_view s) const {
  const auto it = index_.find(s);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

size_t StringTable::memoryBytes() const {
  // A node of the unordered_map holds a string_view, an id and a next pointer.
  return allocated_ + strings_.capacity() * sizeof(std::string_view) +
         index_.size() * (sizeof(std::string_view) + 16) + index_.bucket_count() * sizeof(void*);
}

}  // namespace shardscope::kineto
