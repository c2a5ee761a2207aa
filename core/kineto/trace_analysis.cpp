#include "kineto/trace_analysis.h"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "common/units.h"

namespace shardscope::kineto {

JobAnalysis analyzeTraceSet(const TraceSet& set, const HtaOptions& options) {
  JobAnalysis job;
  job.whole_trace = options.whole_trace;
  job.origin_ns = set.origin_ns;
  std::vector<const RankTrace*> all;
  for (const RankTrace& t : set.ranks) all.push_back(&t);
  job.multi_step = hasMultipleProfilerSteps(all);
  job.critical_path =
      computeCriticalPath(set, {options.critical_path_step, options.critical_path_rank, options.whole_trace});
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    const RankTrace& t = set.ranks[r];
    const TraceIndex& idx = set.indexes[r];
    RankAnalysis a;
    a.rank = t.rank;
    a.path = t.path;
    for (const ProfilerStep& s : idx.steps) a.steps.push_back(s.number);
    a.selection = selectHtaKernels(t, job.multi_step, options);
    a.steps_analyzed = static_cast<int64_t>(a.steps.size());
    if (a.selection.last_step_dropped && a.steps_analyzed > 0) --a.steps_analyzed;
    a.hta = computeHtaMetrics(a.selection);
    a.hta_analyses = computeHtaAnalyses(t, a.selection);
    a.comm = summarizeCommunication(t, idx, a.selection);
    a.memory_samples = static_cast<int64_t>(t.memory.size());
    a.memory_baseline = idx.memory_baseline;
    a.peak_allocated = idx.peak_allocated;
    a.peak_reserved = idx.peak_reserved;
    a.out_of_memory = static_cast<int64_t>(t.out_of_memory.size());
    a.big_integers = static_cast<int64_t>(t.big_integers.size());
    a.negative_durations = static_cast<int64_t>(t.negative_durations);
    job.annotations.push_back(computeRankAnnotations(t, a.selection));
    job.ranks.push_back(std::move(a));
  }
  job.skew = computeCollectiveSkew(set);
  job.step_times = computeStepTimes(set);
  return job;
}

namespace {

std::string fmt(const char* f, double v) {
  if (std::isnan(v)) return "n/a";
  char s[64];
  std::snprintf(s, sizeof s, f, v);
  return s;
}

std::string sizeText(int64_t bytes) { return bytes < 0 ? "n/a" : bytesText(double(bytes)); }
double us(int64_t ns) { return double(ns) / 1000.0; }

void jsonString(std::ostream& out, std::string_view s) {
  out << '"';
  for (char c : s) {
    if (c == '"' || c == '\\') out << '\\' << c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char e[8];
      std::snprintf(e, sizeof e, "\\u%04x", c);
      out << e;
    } else out << c;
  }
  out << '"';
}

// HTA rounds its percentages to two decimals; NaN (nothing to divide by) is null.
std::string jsonPct(double v) { return std::isnan(v) ? "null" : fmt("%.2f", v); }
std::string jsonNum(double v) { return std::isnan(v) ? "null" : fmt("%.3f", v); }

}  // namespace

void printAnalysisText(const JobAnalysis& job, const TraceSet& set, std::ostream& out) {
  out << "ranks: " << job.ranks.size() << ", aligned on the earliest timestamp of all ranks (" << job.origin_ns
      << " ns); ranks of one host share a clock\n";
  if (job.whole_trace) out << "whole trace: every step, exact nanosecond timestamps (not HTA's conventions)\n";
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    const RankAnalysis& a = job.ranks[r];
    const RankTrace& t = set.ranks[r];
    out << "\nrank " << a.rank << "  " << a.path << "\n";
    out << "  steps: " << a.steps.size();
    if (!a.steps.empty()) out << " (ProfilerStep#" << a.steps.front() << "..#" << a.steps.back() << ")";
    out << ", " << a.steps_analyzed << " analyzed";
    if (a.selection.last_step_dropped) out << " (HTA leaves the last step out)";
    out << "\n";
    if (a.selection.rounded) out << "  timestamps: floats, rounded to whole microseconds as HTA does\n";
    if (!a.hta.has_kernels) {
      out << "  no GPU kernels in the analyzed window: HTA's GPU metrics do not apply\n";
    } else {
      out << "  kernel time: " << fmt("%.3f", us(a.hta.kernel_time_ns)) << " us   idle " << fmt("%.2f", a.hta.idle_pct)
          << " %   compute " << fmt("%.2f", a.hta.compute_pct) << " %   non-compute "
          << fmt("%.2f", a.hta.non_compute_pct) << " %\n";
      out << "  comm/comp overlap: " << fmt("%.2f", a.hta.overlap_pct) << " %"
          << (std::isnan(a.hta.overlap_pct) ? " (no communication kernels)" : "") << "\n";
      out << "  kernel types:";
      for (const auto& [label, ns] : a.hta.kernel_type_ns) out << "  " << label << " " << fmt("%.3f", us(ns)) << " us;";
      out << "\n";
    }
    if (!a.comm.kinds.empty()) {
      out << "  collectives        count      bytes        time us   algbw GB/s  busbw GB/s  group\n";
      for (const CollectiveKindSummary& k : a.comm.kinds) {
        char line[256];
        std::snprintf(line, sizeof line, "    %-16s %5lld  %12s  %12.3f  %10s  %10s  %5s\n",
                      std::string(collectiveName(k.kind)).c_str(), static_cast<long long>(k.count),
                      k.sized ? sizeText(k.bytes).c_str() : "unknown", us(k.time_ns),
                      k.sized ? fmt("%.3f", k.algbw_gbps).c_str() : "n/a",
                      k.sized ? fmt("%.3f", k.busbw_gbps).c_str() : "n/a",
                      k.group_size > 0 ? std::to_string(k.group_size).c_str() : k.group_size == -2 ? "mixed" : "?");
        out << line;
      }
      int64_t from_dims = 0, unsized = 0, groups = 0, batched = 0;
      for (const CollectiveKindSummary& k : a.comm.kinds) {
        from_dims += k.sized_from_dims;
        unsized += k.count - k.sized;
        groups += k.coalesced_groups;
        batched += k.coalesced_ops;
      }
      if (groups > 0)
        out << "  " << groups << " of them coalesced groups (batch_isend_irecv, nccl:coalesced) of " << batched
            << " point-to-point ops, each counted once with its ops' bytes (sends plus receives)\n";
      if (from_dims > 0)
        out << "  " << from_dims << " collectives sized from their op's Input Dims x Input type (an older trace "
            << "without element counts; an all_gather's output as its input x the group size)\n";
      if (unsized > 0)
        out << "  " << unsized << " collectives of unknown size: the trace gives no element counts, or shapes "
            << "without a known dtype, or a tensor list's shapes\n";
    }
    if (!a.comm.longest_exposed.empty()) {
      out << "  longest exposed communications (exposed us / dur us / kind / name):\n";
      for (const ExposedComm& x : a.comm.longest_exposed)
        out << "    " << fmt("%10.3f", us(x.exposed_ns)) << "  " << fmt("%10.3f", us(x.dur_ns)) << "  "
            << collectiveName(x.kind) << "  " << t.str(t.events[x.event].name).substr(0, 80) << "\n";
    }
    if (a.memory_samples > 0)
      out << "  memory: " << a.memory_samples << " samples, allocated before the window " << sizeText(a.memory_baseline)
          << ", peak allocated " << sizeText(a.peak_allocated) << ", peak reserved " << sizeText(a.peak_reserved) << "\n";
    if (a.out_of_memory > 0) out << "  ERROR: " << a.out_of_memory << " [OutOfMemory] events\n";
    if (a.big_integers > 0) out << "  " << a.big_integers << " integer args beyond int64, kept as text\n";
    if (a.negative_durations > 0)
      out << "  WARNING: " << a.negative_durations << " events with a negative \"dur\", read as events without "
          << "one (left out of HTA's metrics)\n";
    printHtaAnalysesText(a.hta_analyses, out);
  }
  printCriticalPathText(job.critical_path, out);
  printCollectiveSkewText(job.skew, out);
  printStepTimesText(job.step_times, out);
  printAnnotationBreakdownText(job.annotations, out);
}

void writeAnalysisJson(const JobAnalysis& job, const TraceSet& set, std::ostream& out) {
  out << "{\n  \"whole_trace\": " << (job.whole_trace ? "true" : "false") << ",\n  \"origin_ns\": " << job.origin_ns
      << ",\n  \"ranks\": [";
  for (size_t r = 0; r < job.ranks.size(); ++r) {
    const RankAnalysis& a = job.ranks[r];
    const RankTrace& t = set.ranks[r];
    out << (r ? ",\n" : "\n") << "    {\"rank\": " << a.rank << ", \"file\": ";
    jsonString(out, a.path);
    out << ",\n     \"steps\": [";
    for (size_t s = 0; s < a.steps.size(); ++s) out << (s ? ", " : "") << a.steps[s];
    out << "], \"steps_analyzed\": " << a.steps_analyzed
        << ", \"last_step_dropped\": " << (a.selection.last_step_dropped ? "true" : "false")
        << ", \"rounded_to_us\": " << (a.selection.rounded ? "true" : "false") << ",\n     \"kernel_time_us\": "
        << jsonNum(us(a.hta.kernel_time_ns)) << ", \"idle_pct\": " << jsonPct(a.hta.idle_pct)
        << ", \"compute_pct\": " << jsonPct(a.hta.compute_pct) << ", \"non_compute_pct\": "
        << jsonPct(a.hta.non_compute_pct) << ", \"overlap_pct\": " << jsonPct(a.hta.overlap_pct)
        << ",\n     \"idle_us\": " << jsonNum(us(a.hta.idle_ns)) << ", \"compute_us\": " << jsonNum(us(a.hta.compute_ns))
        << ", \"non_compute_us\": " << jsonNum(us(a.hta.non_compute_ns)) << ",\n     \"kernel_types_us\": {";
    for (size_t k = 0; k < a.hta.kernel_type_ns.size(); ++k) {
      out << (k ? ", " : "");
      jsonString(out, a.hta.kernel_type_ns[k].first);
      out << ": " << jsonNum(us(a.hta.kernel_type_ns[k].second));
    }
    out << "},\n     \"collectives\": [";
    for (size_t k = 0; k < a.comm.kinds.size(); ++k) {
      const CollectiveKindSummary& c = a.comm.kinds[k];
      out << (k ? ",\n       " : "\n       ") << "{\"kind\": \"" << collectiveName(c.kind) << "\", \"count\": " << c.count
          << ", \"sized\": " << c.sized << ", \"sized_from_input_dims\": " << c.sized_from_dims
          << ", \"bytes\": " << c.bytes << ", \"time_us\": " << jsonNum(us(c.time_ns))
          << ", \"algbw_gbps\": " << (c.sized ? jsonNum(c.algbw_gbps) : "null")
          << ", \"busbw_gbps\": " << (c.sized ? jsonNum(c.busbw_gbps) : "null") << ", \"group_size\": " << c.group_size
          << ", \"coalesced_groups\": " << c.coalesced_groups << ", \"coalesced_ops\": " << c.coalesced_ops << "}";
    }
    out << "],\n     \"exposed_communications\": [";
    for (size_t k = 0; k < a.comm.longest_exposed.size(); ++k) {
      const ExposedComm& x = a.comm.longest_exposed[k];
      out << (k ? ",\n       " : "\n       ") << "{\"name\": ";
      jsonString(out, t.str(t.events[x.event].name));
      out << ", \"kind\": \"" << collectiveName(x.kind) << "\", \"ts_us\": " << jsonNum(us(x.ts_ns))
          << ", \"dur_us\": " << jsonNum(us(x.dur_ns)) << ", \"exposed_us\": " << jsonNum(us(x.exposed_ns))
          << ", \"bytes\": " << x.bytes << "}";
    }
    out << "],\n     \"memory\": {\"samples\": " << a.memory_samples << ", \"baseline_bytes\": " << a.memory_baseline
        << ", \"peak_allocated_bytes\": " << a.peak_allocated << ", \"peak_reserved_bytes\": " << a.peak_reserved
        << ", \"out_of_memory_events\": " << a.out_of_memory << "},\n     \"negative_durations\": "
        << a.negative_durations << ",\n";
    writeHtaAnalysesJson(a.hta_analyses, out, "     ");
    out << "}";
  }
  out << "\n  ]";
  out << ",\n  \"critical_path\": ";
  writeCriticalPathJson(job.critical_path, out);
  out << ",\n  \"collective_skew\": ";
  writeCollectiveSkewJson(job.skew, out);
  out << ",\n  \"step_times\": ";
  writeStepTimesJson(job.step_times, out);
  out << ",\n  \"annotation_breakdown\": ";
  writeAnnotationBreakdownJson(job.annotations, out);
  out << "\n}\n";
}

}  // namespace shardscope::kineto
