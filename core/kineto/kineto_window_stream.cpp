#include "kineto/kineto_window_stream.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include <simdjson.h>

#include "common/huge_pages.h"
#include "kineto/kineto_walk_tuning.h"

namespace shardscope::kineto::walk {

// Eight windows: a cut needs a window of events after it, so up to two
// windows are left unwalked and moved to the front before each read: with
// four windows that moved about 60% of the file's bytes (4.5% of a
// one-thread load), with eight about 25%.
PaddedBuffer streamBuffer(const ReadMore& read, size_t slack) {
  PaddedBuffer buffer;
  buffer.allocated = slack + 8 * kinetoChunkBytes() + simdjson::SIMDJSON_PADDING;
  buffer.data = std::shared_ptr<char[]>(new char[buffer.allocated]);
  populatePages(buffer.data.get(), buffer.allocated);  // filled at once: its pages mapped in one call
  std::memset(buffer.data.get(), ' ', slack);
  buffer.size = slack + read(buffer.data.get() + slack, buffer.allocated - simdjson::SIMDJSON_PADDING - slack);
  std::memset(buffer.data.get() + buffer.size, 0, simdjson::SIMDJSON_PADDING);
  buffer.capacity = buffer.allocated;
  return buffer;
}

PaddedBuffer readHead(const ReadAt& read, size_t bytes) {
  PaddedBuffer head;
  head.allocated = bytes + simdjson::SIMDJSON_PADDING;
  head.data = std::shared_ptr<char[]>(new char[head.allocated]);
  head.size = read(head.data.get(), bytes, 0);
  std::memset(head.data.get() + head.size, 0, simdjson::SIMDJSON_PADDING);
  head.capacity = head.allocated;
  return head;
}

bool WindowStream::refill(size_t& start, ByteRestorer& edits, uint64_t& window_offset) {
  if (ended_) return false;
  PaddedBuffer& b = buffer_;
  edits.forget();  // the bytes before start are dropped; the '[' at start moves with the rest
  const size_t keep = b.size - start;
  const size_t padding = simdjson::SIMDJSON_PADDING;
  const size_t need = kStreamSlack + keep + kinetoChunkBytes() + padding;  // room for a window more
  if (b.allocated < need) {
    const size_t grown = std::max(2 * b.allocated, need);
    std::shared_ptr<char[]> more(new char[grown]);
    std::memcpy(more.get() + kStreamSlack, b.data.get() + start, keep);
    b.data = std::move(more);
    b.allocated = grown;
  } else if (start != kStreamSlack) {
    std::memmove(b.data.get() + kStreamSlack, b.data.get() + start, keep);
  }
  window_offset += start - kStreamSlack;
  start = kStreamSlack;
  b.size = kStreamSlack + keep;
  edits.rebase(b.data.get());
  const size_t n = read_(b.data.get() + b.size, b.allocated - padding - b.size);
  if (n == 0) ended_ = true;
  b.size += n;
  std::memset(b.data.get() + b.size, 0, padding);
  b.capacity = b.allocated;
  return true;
}

size_t PartStream::read(char* to, size_t max) {
  size_t n = 0;
  if (first_ && n < max) {
    to[n++] = first_;
    first_ = 0;
  }
  while (n < max && pos_ < end_) {
    const size_t got = read_(to + n, static_cast<size_t>(std::min<uint64_t>(max - n, end_ - pos_)), pos_);
    if (got == 0) {  // the file shrank: no ']' is added, and the part's walk fails
      end_ = pos_;
      last_ = 0;
      break;
    }
    pos_ += got;
    n += got;
  }
  if (pos_ == end_ && last_ && n < max) {
    to[n++] = last_;
    last_ = 0;
  }
  return n;
}

}  // namespace shardscope::kineto::walk
