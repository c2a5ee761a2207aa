// Per-thread position on the run's timelines. Every stream worker and rank
// host thread owns a cursor: its modeled time (advanced by op costs and by
// waits on other streams, used when the run's clock is modeled) and its op-id
// counter. Op ids are (thread slot << 24) + a per-thread count, so they do not
// depend on how threads interleave — a modeled trace is the same every run.
#pragma once

#include <algorithm>
#include <cstdint>

namespace shardscope {

struct TimelineCursor {
  int64_t now = 0;      // modeled ns
  int32_t op_base = -1; // slot << 24, or -1 when the thread has no cursor slot
  int32_t op_next = 0;
};

TimelineCursor* currentCursor();
void setCurrentCursor(TimelineCursor* cursor);

// The calling thread's modeled time (0 without a cursor).
inline int64_t cursorNow() {
  const TimelineCursor* c = currentCursor();
  return c ? c->now : 0;
}
// Moves the calling thread's modeled time forward to at least t.
inline void cursorAdvanceTo(int64_t t) {
  if (TimelineCursor* c = currentCursor()) c->now = std::max(c->now, t);
}

}  // namespace shardscope
