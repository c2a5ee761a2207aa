// Chrome Trace Event / Perfetto JSON sink: pid = rank, tid = lane (its Lane
// value), ts/dur in microseconds with ns precision. Alloc/Free also emit a
// "memory" counter carrying every category's running bytes, so the counter track
// stacks; readChromeTraceFile() skips those counters (they are derived).
#pragma once

#include <iosfwd>
#include <string>

#include "trace/run_trace.h"

namespace shardscope {

// Throws std::invalid_argument when trace.events has more ranks than trace.ranks.
// The config is written as the summary writes it; groups are not written.
void writeChromeTrace(const RunTrace& trace, std::ostream& out);
// As above; throws std::runtime_error naming the path when it cannot be written.
void writeChromeTraceFile(const RunTrace& trace, const std::string& path);

}  // namespace shardscope
