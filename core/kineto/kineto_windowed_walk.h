// The walk of a trace in windows of about kinetoChunkBytes() of events: the
// traceEvents array is cut at ',' between two events, and each window is
// walked as an array of its own with one reused parser, so simdjson's
// structural index (four bytes per token) stays a window's size, in cache
// and touched once, instead of growing with the file (for a 1 GB trace,
// several hundred MB of fresh pages). The same walk reads a stream (the
// windows refilled from a file) and one part of a parallel walk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "kineto/kineto_byte_restorer.h"
#include "kineto/kineto_field_walk.h"
#include "kineto/kineto_trace_builder.h"
#include "kineto/kineto_window_cuts.h"
#include "kineto/kineto_window_stream.h"

namespace shardscope::kineto::walk {

class WindowedWalk {
 public:
  WindowedWalk(const PaddedBuffer& json, RankTrace& out) : json_(json), records_(json, out) {}

  // The keys before the array are walked as a document cut after
  // "traceEvents": [], the last window with the keys after it as a document
  // that starts {"traceEvents": (written over the window before, already
  // walked). Any surprise (a cut inside a string or a nested value, an error
  // anywhere) returns false with the buffer as it was: the caller then walks
  // the whole document, which gives the same result and the error messages
  // users read.
  bool run();

  // One part of a parallel walk (kineto_parallel_walk.cpp): the events from
  // `from` (a byte the caller made '[') to `to` (a ',' it made ']'), or to
  // the document's end (npos: the last part, which walks the keys after the
  // events too). The first part is set with from = npos (it walks the keys
  // before the events).
  void setPart(size_t from, size_t to, size_t reserve_bytes);

  // A part of a parallel walk of a file, streamed: its reader ends a part
  // but the last with the ']' that replaced the ',' after its last event, and
  // starts a part but the first with the '[' that replaced the ',' before its
  // first one, at buffer offset `from` (kStreamSlack, room for the last
  // part's {"traceEvents": head), which is the file's byte `file_offset`.
  // from = npos: the first part.
  void setStreamedPart(size_t from, bool last, uint64_t file_offset, size_t reserve_bytes);

  // Streams the document: `buffer` (the json this walk was made with) holds
  // its first bytes, and `read` appends the next ones; windows walked are
  // dropped and the rest moved to the front as the walk goes.
  void streamFrom(const ReadMore& read, PaddedBuffer& buffer) { stream_.emplace(read, buffer); }

  TraceBuilder& records() { return records_; }

 private:
  static constexpr size_t kStreamEnd = kNpos - 1;  // part_to_: the part ends where its stream does

  size_t walkWindows(FieldWalk& fields, ByteRestorer& edits, size_t window, size_t& start);
  bool walkPart(FieldWalk& fields, ByteRestorer& edits, size_t window);
  // The last window with the keys after the events: a document that starts
  // {"traceEvents": written over the bytes before `start`.
  void walkLastWithHead(FieldWalk& fields, ByteRestorer& edits, size_t start);
  // The end of a part's last window: after its ']' (part_to_, or the stream's last byte).
  size_t partEnd() const { return part_to_ == kStreamEnd ? json_.size : part_to_ + 1; }
  // Where a window's cut may fall before: the part's ']' or the buffer's end.
  size_t cutEnd() const { return part_to_ != kNpos && part_to_ != kStreamEnd ? part_to_ : json_.size; }

  const PaddedBuffer& json_;
  TraceBuilder records_;
  size_t part_from_ = kNpos, part_to_ = kNpos;
  std::optional<WindowStream> stream_;
};

}  // namespace shardscope::kineto::walk
