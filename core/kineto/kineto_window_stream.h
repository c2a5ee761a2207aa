// A document read in pieces through one buffer, for a streamed walk: the
// buffer is filled once, and as windows are walked the bytes before the next
// window are dropped, the rest moved to the front and more read behind it.
// One thread's part of a parallel walk reads through PartStream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kineto/kineto_byte_restorer.h"
#include "kineto/kineto_file_walk.h"
#include "kineto/trace_file.h"

namespace shardscope::kineto::walk {

// Bytes a stream's buffer keeps before the window it walks: room for the
// last window's {"traceEvents": head.
inline constexpr size_t kStreamSlack = 64;

// A stream's buffer of eight windows, `slack` bytes of it (spaces) before
// the first byte read.
PaddedBuffer streamBuffer(const ReadMore& read, size_t slack);

// The first `bytes` of a file (fewer when it is shorter), padded for the
// JSON parser: where a parallel walk looks for the events' start.
PaddedBuffer readHead(const ReadAt& read, size_t bytes);

class WindowStream {
 public:
  WindowStream(const ReadMore& read, PaddedBuffer& buffer) : read_(read), buffer_(buffer) {}

  // Drops the bytes before `start` (walked), moves the rest to kStreamSlack
  // from the front and reads more behind it, growing the buffer when what is
  // left fills it; start and window_offset (the document's offset of the
  // buffer's first byte) follow. False when the stream has ended.
  bool refill(size_t& start, ByteRestorer& edits, uint64_t& window_offset);

 private:
  const ReadMore& read_;
  PaddedBuffer& buffer_;
  bool ended_ = false;
};

// One part of a file, as its walk reads it: '[' for the ',' before the
// part's first event (all but the first part), the file's bytes, and ']' for
// the ',' after its last event (all but the last part).
class PartStream {
 public:
  PartStream(const ReadAt& read, uint64_t from, uint64_t to, char first, char last)
      : read_(read), pos_(from), end_(to), first_(first), last_(last) {}

  size_t read(char* to, size_t max);

 private:
  const ReadAt& read_;
  uint64_t pos_, end_;
  char first_, last_;
};

}  // namespace shardscope::kineto::walk
