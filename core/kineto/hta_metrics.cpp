#include "kineto/hta_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>

#include "kineto/decimal_text.h"
#include "kineto/trace_index.h"

namespace shardscope::kineto {

bool hasMultipleProfilerSteps(const std::vector<const RankTrace*>& traces) {
  // HTA counts distinct ProfilerStep#N symbols of its job-wide symbol table.
  std::unordered_set<std::string_view> names;
  for (const RankTrace* t : traces) {
    std::vector<bool> seen(t->strings.size(), false);
    for (const TraceEvent& e : t->events) {
      if (seen[e.name] || !e.has(kHasDur) || !e.has(kHasCat) || e.kind == EventKind::ProfilerTrace) continue;
      seen[e.name] = true;
      if (profilerStepNumber(t->str(e.name)) >= 0) names.insert(t->str(e.name));
    }
  }
  return names.size() >= 2;
}

HtaSelection selectHtaKernels(const RankTrace& t, bool multi_step, const HtaOptions& options) {
  HtaSelection sel;
  sel.rounded = t.any_float_ts && !options.whole_trace;
  sel.truncate_type_segments = !options.whole_trace;
  const bool filter = multi_step && !options.whole_trace;

  // Linear passes over the events with nothing per event kept between them
  // (a row per event was 24 bytes of fresh memory each, most of the
  // selection's time on a large trace); what depends on a name is worked out
  // once per distinct name.
  const auto selected = [](const TraceEvent& e) {
    return e.has(kHasDur) && e.has(kHasCat) && e.kind != EventKind::ProfilerTrace;
  };
  const auto span = [&](const TraceEvent& e) -> Interval {
    if (!sel.rounded) return {e.ts_ns, e.ts_ns + e.dur_ns};
    // As HTA's round_down_time_stamps does it, in the doubles pandas holds:
    // end = ts + dur first, then ceil(ts) and floor(end). At epoch sizes the
    // doubles sit on a quarter-µs grid, so this is not the exact value's rounding.
    const double ts_us = microsAsJsonDouble(e.ts_ns);
    const double end_us = ts_us + microsAsJsonDouble(e.dur_ns);
    return {int64_t(std::ceil(ts_us)) * 1000, int64_t(std::floor(end_us)) * 1000};
  };
  enum NameBits : uint8_t { kSync = 1, kStep = 2, kKnown = 4 };
  std::vector<uint8_t> name_bits(t.strings.size(), 0);
  const auto bits = [&](uint32_t name) {
    uint8_t& b = name_bits[name];
    if (!(b & kKnown)) {
      const std::string_view n = t.str(name);
      b = kKnown | (n == "Event Sync" || n == "Context Sync" ? kSync : 0) | (profilerStepNumber(n) >= 0 ? kStep : 0);
    }
    return b;
  };
  const auto gpuLike = [&](const TraceEvent& e) { return (e.stream >= 0 && e.correlation >= 0) || (bits(e.name) & kSync); };

  bool cut_applies = false;
  int64_t cut = 0;
  std::vector<int64_t> kept_corr;  // correlations of the kept host events, sorted, once each
  if (filter) {
    bool any_cpu = false, any_step = false;
    int64_t last_step_start = std::numeric_limits<int64_t>::min(), min_cpu_ts = std::numeric_limits<int64_t>::max();
    for (const TraceEvent& e : t.events) {
      if (!selected(e) || gpuLike(e)) continue;
      const int64_t ts = span(e).ts;
      any_cpu = true;
      min_cpu_ts = std::min(min_cpu_ts, ts);
      if (bits(e.name) & kStep) {
        any_step = true;
        last_step_start = std::max(last_step_start, ts);
      }
    }
    if (any_cpu) {
      sel.last_step_dropped = true;
      cut_applies = true;
      cut = any_step ? last_step_start : min_cpu_ts;
      int64_t last = std::numeric_limits<int64_t>::min();
      for (const TraceEvent& e : t.events) {
        if (!selected(e) || gpuLike(e) || span(e).ts >= cut) continue;
        if (e.correlation != last) kept_corr.push_back(last = e.correlation);  // runs of one value (-1) stay one entry
      }
      std::sort(kept_corr.begin(), kept_corr.end());
      kept_corr.erase(std::unique(kept_corr.begin(), kept_corr.end()), kept_corr.end());
    }
  }
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    if (!selected(e)) continue;
    const Interval r = span(e);
    if (cut_applies) {
      const bool keep = gpuLike(e) ? std::binary_search(kept_corr.begin(), kept_corr.end(), e.correlation) : r.ts < cut;
      if (!keep) continue;
    }
    if (e.stream == -1) {
      if (e.correlation != -1 || e.kind == EventKind::CudaRuntime || e.kind == EventKind::CudaDriver)
        sel.host_calls.push_back({r.ts, r.end, i});
      continue;
    }
    sel.kernels.push_back({r.ts, r.end, i, htaKernelType(t.str(e.name))});
  }
  return sel;
}

std::vector<Interval> mergeIntervals(std::vector<Interval> v) {
  std::stable_sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.ts < b.ts; });
  std::vector<Interval> out;
  int64_t cummax = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i == 0 || v[i].ts > cummax) {
      out.push_back(v[i]);
    } else {
      out.back().ts = std::min(out.back().ts, v[i].ts);
      out.back().end = std::max(out.back().end, v[i].end);
    }
    cummax = i == 0 ? v[i].end : std::max(cummax, v[i].end);
  }
  return out;
}

std::vector<Interval> mergedOfType(const HtaSelection& s, HtaKernelType type) {
  std::vector<Interval> v;
  for (const HtaKernel& k : s.kernels)
    if (k.type == type) v.push_back({k.ts_ns, k.end_ns});
  return mergeIntervals(std::move(v));
}

namespace {

int64_t runTime(const std::vector<Interval>& merged) {
  int64_t sum = 0;
  for (const Interval& i : merged) sum += i.end - i.ts;
  return sum;
}

// HTA's cumulative-status sweep: each merged interval adds its weight at ts
// and removes it at end; returns the time spent at each running total.
// truncate_us: each segment cut to whole µs first, as HTA's .astype(int) on µs.
std::map<int64_t, int64_t> sweep(const std::vector<std::pair<std::vector<Interval>, int64_t>>& layers,
                                 bool truncate_us = false) {
  std::vector<std::pair<int64_t, int64_t>> status;  // (time, delta)
  for (const auto& [intervals, weight] : layers)
    for (const Interval& i : intervals) {
      status.push_back({i.ts, weight});
      status.push_back({i.end, -weight});
    }
  std::stable_sort(status.begin(), status.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::map<int64_t, int64_t> time_at;
  int64_t running = 0;
  for (size_t k = 0; k + 1 < status.size(); ++k) {
    running += status[k].second;
    const int64_t segment = status[k + 1].first - status[k].first;
    time_at[running] += truncate_us ? segment / 1000 * 1000 : segment;
  }
  return time_at;
}

double pct(int64_t part, int64_t whole) {
  return whole == 0 ? std::numeric_limits<double>::quiet_NaN() : 100.0 * double(part) / double(whole);
}

}  // namespace

HtaRankMetrics computeHtaMetrics(const HtaSelection& s) {
  HtaRankMetrics m;
  m.overlap_pct = std::numeric_limits<double>::quiet_NaN();
  if (s.kernels.empty()) {
    m.idle_pct = m.compute_pct = m.non_compute_pct = std::numeric_limits<double>::quiet_NaN();
    return m;
  }
  m.has_kernels = true;
  std::vector<Interval> all;
  all.reserve(s.kernels.size());
  for (const HtaKernel& k : s.kernels) all.push_back({k.ts_ns, k.end_ns});
  const std::vector<Interval> merged = mergeIntervals(std::move(all));
  m.kernel_time_ns = merged.back().end - merged.front().ts;
  m.idle_ns = m.kernel_time_ns - runTime(merged);
  const std::vector<Interval> comp = mergedOfType(s, HtaKernelType::Computation);
  const std::vector<Interval> comm = mergedOfType(s, HtaKernelType::Communication);
  const std::vector<Interval> mem = mergedOfType(s, HtaKernelType::Memory);
  m.compute_ns = runTime(comp);
  m.non_compute_ns = m.kernel_time_ns - m.compute_ns - m.idle_ns;
  m.idle_pct = pct(m.idle_ns, m.kernel_time_ns);
  m.compute_pct = pct(m.compute_ns, m.kernel_time_ns);
  m.non_compute_pct = pct(m.non_compute_ns, m.kernel_time_ns);

  m.comm_ns = runTime(comm);
  const auto overlap = sweep({{comm, 1}, {comp, 2}});
  const auto it = overlap.find(3);
  m.overlap_ns = it == overlap.end() ? 0 : it->second;
  m.overlap_pct = pct(m.overlap_ns, m.comm_ns);

  // Kernel types as bits in HTA's order: COMPUTATION 1, COMMUNICATION 2, MEMORY 4.
  const std::pair<const char*, int64_t> types[] = {{"COMPUTATION", 1}, {"COMMUNICATION", 2}, {"MEMORY", 4}};
  for (const auto& [running, ns] : sweep({{comp, 1}, {comm, 2}, {mem, 4}}, s.truncate_type_segments)) {
    if (running <= 0) continue;
    std::string label;
    for (const auto& [name, bit] : types)
      if (running & bit) label += (label.empty() ? "" : " overlapping ") + std::string(name);
    if (label.empty()) continue;
    auto found = std::find_if(m.kernel_type_ns.begin(), m.kernel_type_ns.end(),
                              [&](const auto& p) { return p.first == label; });
    if (found == m.kernel_type_ns.end()) m.kernel_type_ns.push_back({label, ns});
    else found->second += ns;
  }
  std::sort(m.kernel_type_ns.begin(), m.kernel_type_ns.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  return m;
}

}  // namespace shardscope::kineto
