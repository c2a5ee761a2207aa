// Bytes of a buffer a windowed walk overwrites (a ',' between two events
// becomes the ']' of one window and the '[' of the next), put back when the
// walk ends however it ends: the buffer reads as it came for any later use.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace shardscope::kineto::walk {

class ByteRestorer {
 public:
  explicit ByteRestorer(char* base) : base_(base) {}
  ~ByteRestorer() { restoreAll(); }
  ByteRestorer(const ByteRestorer&) = delete;
  ByteRestorer& operator=(const ByteRestorer&) = delete;
  void set(size_t at, char c) {
    saved_.emplace_back(at, base_[at]);
    base_[at] = c;
  }
  void restoreAll() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) base_[it->first] = it->second;
    saved_.clear();
  }
  void forget() { saved_.clear(); }         // the edited bytes are dropped (a stream's walked part)
  void rebase(char* base) { base_ = base; }  // the buffer moved

 private:
  char* base_;
  std::vector<std::pair<size_t, char>> saved_;
};

}  // namespace shardscope::kineto::walk
