// Everything `shardscope-cli analyze` reports for a job, per rank: steps,
// HTA's metrics, communication by kind, the longest exposed communications
// and the memory series' figures. Qt-free, so views can show the same.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "kineto/annotation_breakdown.h"
#include "kineto/collective_skew.h"
#include "kineto/comm_summary.h"
#include "kineto/critical_path.h"
#include "kineto/hta_analyses.h"
#include "kineto/hta_metrics.h"
#include "kineto/step_times.h"
#include "kineto/trace_set.h"

namespace shardscope::kineto {

struct RankAnalysis {
  int rank = -1;
  std::string path;
  std::vector<int64_t> steps;  // ProfilerStep numbers in the trace, by time
  int64_t steps_analyzed = 0;  // steps left in after HTA's last-step rule
  HtaSelection selection;
  HtaRankMetrics hta;
  HtaRankAnalyses hta_analyses;  // idle time, queue length, kernel breakdown, launch statistics
  CommSummary comm;
  int64_t memory_samples = 0, memory_baseline = 0, peak_allocated = -1, peak_reserved = -1;
  int64_t out_of_memory = 0;
  int64_t big_integers = 0;  // args beyond int64, kept as text
  int64_t negative_durations = 0;  // events whose "dur" was negative, read as having none
};

struct JobAnalysis {
  bool whole_trace = false;
  bool multi_step = false;
  int64_t origin_ns = 0;
  std::vector<RankAnalysis> ranks;
  CriticalPath critical_path;  // one step's critical path per rank, across ranks (critical_path.h)
  CollectiveSkew skew;  // collectives matched across ranks: who arrives last (collective_skew.h)
  StepTimes step_times;  // every ProfilerStep's duration per rank, spread and slowest rank (step_times.h)
  std::vector<RankAnnotations> annotations;  // time by user annotation, per rank (annotation_breakdown.h)
};

JobAnalysis analyzeTraceSet(const TraceSet& set, const HtaOptions& options);

// Text for people; JSON with stable keys for tools.
void printAnalysisText(const JobAnalysis& job, const TraceSet& set, std::ostream& out);
void writeAnalysisJson(const JobAnalysis& job, const TraceSet& set, std::ostream& out);

}  // namespace shardscope::kineto
