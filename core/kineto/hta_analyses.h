// The four per-rank analyses of Holistic Trace Analysis that `analyze` adds to
// its temporal breakdown: idle time by stream, launch queue length by stream,
// kernel breakdown and launch statistics (one file each, hta_*.h), computed
// from one HtaSelection, with their text and JSON (keys idle_time_breakdown,
// queue_length, kernel_breakdown, launch_delay). Plain data: views show it as is.
#pragma once

#include <iosfwd>

#include "kineto/hta_idle_time.h"
#include "kineto/hta_kernel_breakdown.h"
#include "kineto/hta_launch_stats.h"
#include "kineto/hta_queue_length.h"

namespace shardscope::kineto {

struct HtaRankAnalyses {
  HtaIdleTimeBreakdown idle_time;
  HtaQueueLength queue_length;
  HtaKernelBreakdown kernel_breakdown;
  HtaLaunchStats launch;
};

HtaRankAnalyses computeHtaAnalyses(const RankTrace& trace, const HtaSelection& selection);

// Indented lines under a rank's heading in `analyze`'s text.
void printHtaAnalysesText(const HtaRankAnalyses& a, std::ostream& out);
// The four keys, each `"key": value` on its own line, comma-separated, with
// no leading or trailing comma: the caller places them inside a rank's object.
void writeHtaAnalysesJson(const HtaRankAnalyses& a, std::ostream& out, const char* indent);

}  // namespace shardscope::kineto
