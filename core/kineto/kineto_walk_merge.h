// Merging the parts of a parallel walk: each part reads its events into a
// trace of its own, with its own string, track and category ids; the parts
// are appended in file order to the first part's trace, their ids renumbered
// as a single walk would have given them, so the result is the single walk's.
#pragma once

#include "kineto/kineto_trace.h"
#include "kineto/kineto_trace_builder.h"

namespace shardscope::kineto::walk {

// Appends the trace another part read (the part after the ones already in
// `into`) as if `into`'s walk had read on.
void absorbPart(TraceBuilder& into, const RankTrace& part);

// Top-level keys a later part met that an earlier one met too: the single
// walk refuses such a document (a key twice), so the parts must not merge.
inline bool sharesTopKeys(const TraceBuilder& first, const TraceBuilder& last) {
  return (first.top_keys & last.top_keys) != 0;
}

}  // namespace shardscope::kineto::walk
