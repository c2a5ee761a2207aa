#include "kineto/kineto_windowed_walk.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "common/errors.h"
#include "kineto/kineto_walk_tuning.h"

namespace shardscope::kineto::walk {

void WindowedWalk::setPart(size_t from, size_t to, size_t reserve_bytes) {
  part_from_ = from;
  part_to_ = to;
  records_.setReserveBytes(reserve_bytes);
}

void WindowedWalk::setStreamedPart(size_t from, bool last, uint64_t file_offset, size_t reserve_bytes) {
  setPart(from, last ? kNpos : kStreamEnd, reserve_bytes);
  records_.window_offset = file_offset - (from == kNpos ? 0 : from);
}

bool WindowedWalk::run() {
  RankTrace& out = records_.trace();
  records_.errors().windowed = true;
  ByteRestorer edits(json_.data.get());
  const size_t window = std::max<size_t>(kinetoChunkBytes(), 16);
  try {
    const std::unique_ptr<FieldWalk> fields = makeFieldWalk(json_, records_);
    if (part_from_ != kNpos) return walkPart(*fields, edits, window);
    bool bare = false;
    const size_t top = skipJsonSpace(json_.data.get(), json_.size, 0);
    const size_t open = locateEvents(json_.data.get(), json_.size, &bare);
    if (open == kNpos) return false;
    out.bare_array = bare;
    records_.reserveEvents();
    if (!out.bare_array) {  // the keys before "traceEvents": a document ending [] }
      edits.set(open + 1, ']');
      edits.set(open + 2, '}');
      fields->document(top, open + 3);
      edits.restoreAll();
    }
    size_t start = open;  // json_[start] is '[' (the real one, or a ',' made one)
    const size_t chunks = walkWindows(*fields, edits, window, start);
    if (part_to_ != kNpos) {  // the first part of a parallel walk: up to its end
      fields->events(start, partEnd());
      out.json_windows = static_cast<uint32_t>(chunks + 1);
      return true;
    }
    if (chunks == 0) return false;
    if (out.bare_array) fields->events(start, json_.size);
    else walkLastWithHead(*fields, edits, start);
    out.json_windows = static_cast<uint32_t>(chunks + 1);
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

// Walks windows from `start` (a '[') while a cut leaves a window behind
// it; start ends at the last cut. Returns the windows walked.
size_t WindowedWalk::walkWindows(FieldWalk& fields, ByteRestorer& edits, size_t window, size_t& start) {
  size_t chunks = 0;
  for (;;) {
    const size_t cut = findEventBoundary(json_.data.get(), start + window, cutEnd(), kinetoChunkBytes());
    if (cut == kNpos) {
      if (stream_ && stream_->refill(start, edits, records_.window_offset)) continue;
      return chunks;
    }
    edits.set(cut, ']');
    fields.events(start, cut + 1);
    if (chunks == 0) records_.fitReserveTo(cut + 1 - start);
    edits.set(cut, '[');
    start = cut;
    ++chunks;
  }
}

// A part after the first of a parallel walk (setPart).
bool WindowedWalk::walkPart(FieldWalk& fields, ByteRestorer& edits, size_t window) {
  records_.reserveEvents();
  size_t start = part_from_;
  const size_t chunks = walkWindows(fields, edits, window, start);
  if (part_to_ != kNpos) {
    fields.events(start, partEnd());
  } else if (records_.trace().bare_array) {
    fields.events(start, json_.size);
  } else {
    // The {"traceEvents": head would land in the part before (a streamed
    // part has kStreamSlack bytes of room before its first '[').
    if (chunks == 0 && !stream_) return false;
    walkLastWithHead(fields, edits, start);
  }
  records_.trace().json_windows = static_cast<uint32_t>(chunks + 1);
  return true;
}

void WindowedWalk::walkLastWithHead(FieldWalk& fields, ByteRestorer& edits, size_t start) {
  static constexpr std::string_view kHead = "{\"traceEvents\":";
  const size_t head = start - kHead.size();
  for (size_t i = 0; i < kHead.size(); ++i) edits.set(head + i, kHead[i]);
  fields.document(head, json_.size);
}

}  // namespace shardscope::kineto::walk
