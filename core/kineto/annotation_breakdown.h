// Time by user annotation (record_function, FSDP units, modules): `analyze`'s
// annotation_breakdown. Per annotation name on each rank: its spans' count
// and time, and the GPU kernels (cat kernel, gpu_memcpy, gpu_memset) launched
// inside it: a kernel is paired with its launch (cudaLaunchKernel & co.) by
// correlation as HTA pairs them (hta_correlation.h), and the launch's start is
// looked up among the annotations of its thread. `self`: the kernel counts for
// the innermost annotation only; `inclusive`: for it and every enclosing one
// (a name once, however deep it nests in itself). Within an annotation (self),
// the CPU ops (innermost cpu_op around the launch; the launch call's own name
// when none) with the most kernel time, and per op its kernels with HTA's
// launch delay (htaLaunchDelayNs). gpu_user_annotation spans hold the kernels
// of their own stream that start inside them. ProfilerStep#N spans, on the
// host and their GPU copies, are left out (step_times has them). Every event counts: all steps, exact timestamps.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "kineto/hta_metrics.h"
#include "kineto/kineto_trace.h"

namespace shardscope::kineto {

inline constexpr size_t kAnnotationTopOps = 5;  // CPU ops kept per annotation

struct AnnotationKernelRow {
  std::string name;
  int64_t count = 0, kernel_ns = 0;
  int64_t launch_delay_ns = 0, max_launch_delay_ns = 0;  // sum and max of HTA's launch delay
  double meanLaunchDelayNs() const { return count ? double(launch_delay_ns) / double(count) : 0.0; }
};

struct AnnotationOpRow {
  std::string name;
  int64_t kernels = 0, kernel_ns = 0;
  std::vector<AnnotationKernelRow> by_kernel;  // by kernel_ns descending, ties by name
};

struct AnnotationRow {
  std::string name;
  bool gpu = false;  // a gpu_user_annotation span (GPU time), else user_annotation (CPU time)
  int64_t count = 0, span_ns = 0;
  int64_t kernels_self = 0, kernel_ns_self = 0;
  int64_t kernels_inclusive = 0, kernel_ns_inclusive = 0;
  std::vector<AnnotationOpRow> ops;  // the kAnnotationTopOps with most kernel time (self); CPU rows only
  int64_t ops_left_out = 0;
};

struct RankAnnotations {
  int rank = -1;
  std::vector<AnnotationRow> rows;  // CPU rows by inclusive kernel time, span time, name; then GPU rows alike
  int64_t kernels = 0, kernel_ns = 0;                      // every GPU kernel of the rank
  int64_t kernels_annotated = 0, kernel_ns_annotated = 0;  // launched inside a CPU annotation
  int64_t kernels_without_launch = 0;                      // no launch call of their correlation in the trace
};

// analysis_selection: the rank's HTA selection; reused when it already holds
// every event at exact timestamps, else a whole-trace selection is made.
RankAnnotations computeRankAnnotations(const RankTrace& trace, const HtaSelection& analysis_selection);

void printAnnotationBreakdownText(const std::vector<RankAnnotations>& ranks, std::ostream& out);
// The value of the "annotation_breakdown" key.
void writeAnnotationBreakdownJson(const std::vector<RankAnnotations>& ranks, std::ostream& out);

}  // namespace shardscope::kineto
