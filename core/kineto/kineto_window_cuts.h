// Where a trace's JSON may be cut without parsing it: the '[' of its events,
// and the ',' between two events where one window (or one thread's part)
// ends and the next begins. A plain byte scan, so a match inside a string or
// a nested value is possible: that window's walk then fails and the caller
// walks the document another way, for the same result.
#pragma once

#include <cstddef>
#include <string_view>

namespace shardscope::kineto::walk {

inline constexpr size_t kNpos = std::string_view::npos;

inline bool isJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The first byte at or after i of text[0, size) that is not JSON white space.
inline size_t skipJsonSpace(const char* text, size_t size, size_t i) {
  while (i < size && isJsonSpace(text[i])) ++i;
  return i;
}

// The '[' of the events array of text[0, size) (bare: the document is that
// array), or npos when the document is not one a windowed walk takes: empty,
// odd, its keys before the events not simple (the whole walk says what).
size_t locateEvents(const char* text, size_t size, bool* bare);

// The first ',' at or after `from` with '}' before it and '{' after it
// (spaces aside) and at least `window` bytes of text[from, end) behind
// `from`, or npos.
size_t findEventBoundary(const char* text, size_t from, size_t end, size_t window);

// The ',' for a part boundary at or after `from`: between two events, with
// a space after it (the next part's '['), or npos.
size_t findPartBoundary(const char* text, size_t size, size_t from, size_t window);

// The first ',' of text[0, n) with '}' before it and '{' after it (spaces
// aside, both within the text), or npos: where a part of a file may end.
size_t eventBoundaryIn(const char* text, size_t n);

}  // namespace shardscope::kineto::walk
