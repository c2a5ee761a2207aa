// Spans of one thread (or one GPU stream) as a forest: which span is the
// innermost one holding a time, and its enclosing spans. Spans of one track
// nest by start: a span starting inside another is its child (Kineto's spans
// on one thread nest; a partial overlap, which a rounded trace can show, is
// read as nesting too). Used by the annotation breakdown (user annotations
// around launches, CPU ops around launches).
#pragma once

#include <cstdint>
#include <vector>

#include "kineto/kineto_trace.h"

namespace shardscope::kineto {

class SpanNesting {
 public:
  SpanNesting() = default;
  // events: indices into trace.events of spans (with a dur), any tracks, any order.
  SpanNesting(const RankTrace& trace, std::vector<uint32_t> events);

  // The innermost span on `track` with ts <= t_ns < ts + dur; kNone when none.
  // The result is a position: parent() walks outwards, event() names it.
  uint32_t innermost(uint32_t track, int64_t t_ns) const;
  uint32_t parent(uint32_t pos) const { return m_spans[pos].parent; }
  uint32_t event(uint32_t pos) const { return m_spans[pos].event; }
  size_t size() const { return m_spans.size(); }

 private:
  struct Span {
    uint32_t track = 0;
    int64_t ts = 0, end = 0;
    uint32_t event = kNone;
    uint32_t parent = kNone;  // position of the enclosing span, kNone at the top
  };
  std::vector<Span> m_spans;  // by (track, ts, end descending)
};

}  // namespace shardscope::kineto
