#include "kineto/kineto_window_cuts.h"

#include <algorithm>
#include <cstring>

namespace shardscope::kineto::walk {

namespace {

// i at a '"': the index after its closing quote, or npos.
size_t skipJsonString(const char* s, size_t size, size_t i) {
  for (++i; i < size; ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == '"') return i + 1;
  }
  return kNpos;
}

// The '[' of "traceEvents" among the top-level keys (scanned by hand: they
// come before the events, a few KB), or npos when the object is not that
// simple (the whole walk then reads it).
size_t findTraceEventsArray(const char* s, size_t size, size_t top) {
  const size_t limit = std::min(size, size_t(16) << 20);
  size_t i = skipJsonSpace(s, size, top + 1);
  while (i < limit && s[i] == '"') {
    const size_t key_end = skipJsonString(s, size, i);
    if (key_end == kNpos) return kNpos;
    const std::string_view key(s + i + 1, key_end - i - 2);
    i = skipJsonSpace(s, size, key_end);
    if (i >= limit || s[i] != ':') return kNpos;
    i = skipJsonSpace(s, size, i + 1);
    if (key == "traceEvents") return i < limit && s[i] == '[' ? i : kNpos;
    // Skip the value: a string, or brackets counted outside strings, or a scalar.
    int depth = 0;
    while (i < limit) {
      const char c = s[i];
      if (c == '"') {
        i = skipJsonString(s, size, i);
        if (i == kNpos) return i;
        if (depth == 0) break;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      else if (c == '}' || c == ']') {
        if (--depth < 0) return kNpos;
        if (depth == 0) {
          ++i;
          break;
        }
      } else if (depth == 0 && (c == ',' || isJsonSpace(c))) {
        break;
      }
      ++i;
    }
    i = skipJsonSpace(s, size, i);
    if (i >= limit || s[i] != ',') return kNpos;
    i = skipJsonSpace(s, size, i + 1);
  }
  return kNpos;
}

}  // namespace

size_t locateEvents(const char* s, size_t size, bool* bare) {
  const size_t top = skipJsonSpace(s, size, 0);
  if (top >= size) return kNpos;
  size_t open = kNpos;
  *bare = s[top] == '[';
  if (*bare) open = top;
  else if (s[top] == '{') open = findTraceEventsArray(s, size, top);
  if (open == kNpos) return kNpos;
  const size_t first = skipJsonSpace(s, size, open + 1);
  return first < size && s[first] == '{' ? open : kNpos;
}

size_t findEventBoundary(const char* s, size_t from, size_t end, size_t window) {
  if (from >= end || end - from < window) return kNpos;
  for (size_t i = from; i < end;) {
    const void* hit = std::memchr(s + i, ',', end - i);
    if (!hit) return kNpos;
    const size_t c = static_cast<size_t>(static_cast<const char*>(hit) - s);
    size_t before = c;
    while (before > from && isJsonSpace(s[before - 1])) --before;
    const size_t after = skipJsonSpace(s, end, c + 1);
    if (before > from && s[before - 1] == '}' && after < end && s[after] == '{') return c;
    i = c + 1;
  }
  return kNpos;
}

size_t findPartBoundary(const char* s, size_t size, size_t from, size_t window) {
  for (size_t c = findEventBoundary(s, from, size, window); c != kNpos; c = findEventBoundary(s, c + 1, size, window))
    if (isJsonSpace(s[c + 1])) return c;
  return kNpos;
}

size_t eventBoundaryIn(const char* text, size_t n) {
  for (size_t i = 1; i < n; ++i) {
    const void* hit = std::memchr(text + i, ',', n - i);
    if (!hit) return kNpos;
    const size_t c = static_cast<size_t>(static_cast<const char*>(hit) - text);
    size_t before = c;
    while (before > 0 && isJsonSpace(text[before - 1])) --before;
    size_t after = c + 1;
    while (after < n && isJsonSpace(text[after])) ++after;
    if (before > 0 && text[before - 1] == '}' && after < n && text[after] == '{') return c;
    i = c;
  }
  return kNpos;
}

}  // namespace shardscope::kineto::walk
