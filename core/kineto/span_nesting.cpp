#include "kineto/span_nesting.h"

#include <algorithm>

#include "common/huge_pages.h"

namespace shardscope::kineto {

SpanNesting::SpanNesting(const RankTrace& t, std::vector<uint32_t> events) {
  // Grouped by track with a counting pass (stable: file order within a
  // track), then each track sorted only when the file did not already write it
  // in order: Kineto mostly does, and a sort of every CPU op was a tenth of `analyze`.
  std::vector<uint32_t> first(t.tracks.size() + 1, 0);
  for (uint32_t i : events) ++first[t.events[i].track + 1];
  for (size_t k = 1; k < first.size(); ++k) first[k] += first[k - 1];
  // Every span is written below: its fresh pages mapped in one call, not a fault per 4 KiB.
  m_spans.reserve(events.size());
  populatePages(m_spans.data(), events.size() * sizeof(Span));
  m_spans.resize(events.size());
  std::vector<uint32_t> next(first.begin(), first.end() - 1);
  for (uint32_t i : events) {
    const TraceEvent& e = t.events[i];
    m_spans[next[e.track]++] = {e.track, e.ts_ns, e.endNs(), i, kNone};
  }
  // Outer spans first among equal starts, so a child never sorts before its parent.
  const auto before = [](const Span& a, const Span& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.end != b.end) return a.end > b.end;
    return a.event < b.event;
  };
  for (size_t k = 0; k + 1 < first.size(); ++k) {
    const auto b = m_spans.begin() + first[k], e = m_spans.begin() + first[k + 1];
    if (!std::is_sorted(b, e, before)) std::sort(b, e, before);
  }
  std::vector<uint32_t> open;  // positions of the spans enclosing the current start
  for (uint32_t p = 0; p < m_spans.size(); ++p) {
    Span& s = m_spans[p];
    if (p > 0 && m_spans[p - 1].track != s.track) open.clear();
    while (!open.empty() && m_spans[open.back()].end <= s.ts) open.pop_back();
    s.parent = open.empty() ? kNone : open.back();
    open.push_back(p);
  }
}

uint32_t SpanNesting::innermost(uint32_t track, int64_t t_ns) const {
  // The last span of the track starting at or before t; every span holding t
  // is it or one of its ancestors (a span holding t started before it and had
  // not ended when it started).
  const auto it = std::upper_bound(m_spans.begin(), m_spans.end(), std::pair<uint32_t, int64_t>{track, t_ns},
                                   [](const std::pair<uint32_t, int64_t>& key, const Span& s) {
                                     return key.first != s.track ? key.first < s.track : key.second < s.ts;
                                   });
  if (it == m_spans.begin()) return kNone;
  uint32_t p = static_cast<uint32_t>(it - m_spans.begin() - 1);
  if (m_spans[p].track != track) return kNone;
  while (p != kNone && !(t_ns < m_spans[p].end)) p = m_spans[p].parent;
  return p;
}

}  // namespace shardscope::kineto
