// HTA's CUDA launch queue length per stream (hta/analyzers/trace_counters.py
// _get_queue_length_time_series_for_rank, get_queue_length_summary): +1 at
// each launch call (htaIsLaunchCall with a GPU event on a stream > 0 of its
// correlation), on the stream of each GPU event of its correlation; -1 at the
// start of each GPU event whose correlation such a launch has. Rows sorted by
// time (a tie keeps launches first), a running sum per stream; the summary is
// pandas' describe() of that running sum's values, one per row.
#pragma once

#include <cstdint>
#include <vector>

#include "kineto/hta_correlation.h"
#include "kineto/hta_describe.h"

namespace shardscope::kineto {

struct HtaStreamQueueLength {
  int32_t stream = -1;
  HtaStats length;  // count = launches + GPU events counted on the stream
};

struct HtaQueueLength {
  std::vector<HtaStreamQueueLength> streams;  // by stream number
  int64_t launches = 0;  // launch calls counted (each once, whatever its GPU events)
};

HtaQueueLength computeHtaQueueLength(const RankTrace& trace, const HtaSelection& selection,
                                     const HtaCorrelations& correlations);

}  // namespace shardscope::kineto
