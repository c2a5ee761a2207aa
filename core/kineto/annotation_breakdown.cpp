#include "kineto/annotation_breakdown.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <unordered_map>

#include "kineto/hta_correlation.h"
#include "kineto/hta_launch_stats.h"
#include "kineto/report_format.h"
#include "kineto/span_nesting.h"
#include "kineto/trace_index.h"

namespace shardscope::kineto {

namespace {

bool annIsKernel(EventKind k) { return k == EventKind::Kernel || k == EventKind::GpuMemcpy || k == EventKind::GpuMemset; }

struct AnnKernelAcc {
  int64_t count = 0, ns = 0, delay = 0, max_delay = 0;
};
struct AnnOpAcc {
  int64_t kernels = 0, ns = 0;
  std::unordered_map<uint32_t, AnnKernelAcc> by_kernel;  // kernel name id
};
struct AnnRowAcc {
  AnnotationRow row;
  std::unordered_map<uint32_t, AnnOpAcc> ops;  // op name id
};

// Rows by (side, name id), created on first sight.
struct AnnRows {
  std::vector<AnnRowAcc> rows;
  std::map<std::pair<bool, uint32_t>, size_t> of;
  AnnRowAcc& at(const RankTrace& t, bool gpu, uint32_t name) {
    const auto [it, fresh] = of.emplace(std::pair{gpu, name}, rows.size());
    if (fresh) {
      rows.emplace_back();
      rows.back().row.name = std::string(t.str(name));
      rows.back().row.gpu = gpu;
    }
    return rows[it->second];
  }
};

// Adds a kernel to the innermost span's row (self) and to every row on the way out (inclusive, a name once).
AnnRowAcc* annAttribute(const RankTrace& t, const SpanNesting& nest, uint32_t innermost, bool gpu, int64_t dur,
                        AnnRows& rows) {
  if (innermost == kNone) return nullptr;
  AnnRowAcc& self = rows.at(t, gpu, t.events[nest.event(innermost)].name);
  ++self.row.kernels_self;
  reportAccumulateNs(self.row.kernel_ns_self, dur);
  std::vector<uint32_t> seen;
  for (uint32_t p = innermost; p != kNone; p = nest.parent(p)) {
    const uint32_t name = t.events[nest.event(p)].name;
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    AnnRowAcc& r = rows.at(t, gpu, name);
    ++r.row.kernels_inclusive;
    reportAccumulateNs(r.row.kernel_ns_inclusive, dur);
  }
  return &self;
}

}  // namespace

RankAnnotations computeRankAnnotations(const RankTrace& t, const HtaSelection& analysis_selection) {
  RankAnnotations out;
  out.rank = t.rank;
  HtaSelection own;
  const bool exact = !analysis_selection.rounded && !analysis_selection.last_step_dropped;
  if (!exact) own = selectHtaKernels(t, false, HtaOptions{true});
  const HtaSelection& sel = exact ? analysis_selection : own;
  const HtaCorrelations corr = pairHtaCorrelations(t, sel);

  std::vector<uint32_t> cpu_annotations, gpu_annotations, cpu_ops;
  AnnRows rows;
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    if (!e.has(kHasDur)) continue;
    if (e.kind == EventKind::CpuOp) {
      cpu_ops.push_back(i);
    } else if (e.kind == EventKind::UserAnnotation || e.kind == EventKind::GpuUserAnnotation) {
      const bool gpu = e.kind == EventKind::GpuUserAnnotation;
      if (profilerStepNumber(t.str(e.name)) >= 0) continue;  // a step (the host's or its GPU copy), not an annotation
      (gpu ? gpu_annotations : cpu_annotations).push_back(i);
      AnnRowAcc& r = rows.at(t, gpu, e.name);
      ++r.row.count;
      reportAccumulateNs(r.row.span_ns, e.dur_ns);
    }
  }
  const SpanNesting cpu_nest(t, std::move(cpu_annotations));
  const SpanNesting gpu_nest(t, std::move(gpu_annotations));
  // CPU ops are looked up only for launches inside an annotation: none, no nesting to build.
  const SpanNesting op_nest = cpu_nest.size() ? SpanNesting(t, std::move(cpu_ops)) : SpanNesting();

  // Every kernel: the totals and the GPU annotations around it.
  for (const HtaKernel& k : sel.kernels) {
    const TraceEvent& e = t.events[k.event];
    if (!annIsKernel(e.kind)) continue;
    const int64_t dur = reportSubNs(k.end_ns, k.ts_ns);
    ++out.kernels;
    reportAccumulateNs(out.kernel_ns, dur);
    annAttribute(t, gpu_nest, gpu_nest.innermost(e.track, k.ts_ns), true, dur, rows);
  }
  // Kernels with their launch: the sorted correlation lists walked side by
  // side (no search per kernel), a correlation's first launch call taken, a
  // crowded one (HtaCorrelations::crowded) left out as HTA's pairing leaves it.
  int64_t launched = 0;
  for (size_t g = 0, h = 0; g < corr.gpu.size();) {
    const int64_t id = corr.gpu[g].first;
    size_t g_end = g;
    while (g_end < corr.gpu.size() && corr.gpu[g_end].first == id) ++g_end;
    while (h < corr.host.size() && corr.host[h].first < id) ++h;
    size_t h_end = h;
    while (h_end < corr.host.size() && corr.host[h_end].first == id) ++h_end;
    const HtaHostCall* launch = nullptr;
    if (int64_t(h_end - h) * int64_t(g_end - g) <= kHtaMaxPairsPerCorrelation)
      for (size_t i = h; i < h_end && !launch; ++i)
        if (corr.host_is_launch[corr.host[i].second]) launch = &sel.host_calls[corr.host[i].second];
    for (size_t i = g; launch && i < g_end; ++i) {
      const HtaKernel& k = sel.kernels[corr.gpu[i].second];
      const TraceEvent& e = t.events[k.event];
      if (!annIsKernel(e.kind)) continue;
      ++launched;
      const int64_t dur = reportSubNs(k.end_ns, k.ts_ns);
      const TraceEvent& call = t.events[launch->event];
      AnnRowAcc* self = annAttribute(t, cpu_nest, cpu_nest.innermost(call.track, launch->ts_ns), false, dur, rows);
      if (!self) continue;
      ++out.kernels_annotated;
      reportAccumulateNs(out.kernel_ns_annotated, dur);
      const uint32_t op = op_nest.innermost(call.track, launch->ts_ns);
      AnnOpAcc& o = self->ops[op == kNone ? call.name : t.events[op_nest.event(op)].name];
      ++o.kernels;
      reportAccumulateNs(o.ns, dur);
      AnnKernelAcc& ka = o.by_kernel[e.name];
      const int64_t delay = htaLaunchDelayNs(*launch, k);
      ++ka.count;
      reportAccumulateNs(ka.ns, dur);
      reportAccumulateNs(ka.delay, delay);
      ka.max_delay = std::max(ka.max_delay, delay);
    }
    g = g_end;
    h = h_end;
  }
  out.kernels_without_launch = out.kernels - launched;

  for (AnnRowAcc& acc : rows.rows) {
    AnnotationRow& row = acc.row;
    for (const auto& [name, o] : acc.ops) {
      AnnotationOpRow op{std::string(t.str(name)), o.kernels, o.ns, {}};
      for (const auto& [kname, ka] : o.by_kernel)
        op.by_kernel.push_back({std::string(t.str(kname)), ka.count, ka.ns, ka.delay, ka.max_delay});
      std::sort(op.by_kernel.begin(), op.by_kernel.end(), [](const auto& a, const auto& b) {
        return a.kernel_ns != b.kernel_ns ? a.kernel_ns > b.kernel_ns : a.name < b.name;
      });
      row.ops.push_back(std::move(op));
    }
    std::sort(row.ops.begin(), row.ops.end(), [](const auto& a, const auto& b) {
      return a.kernel_ns != b.kernel_ns ? a.kernel_ns > b.kernel_ns : a.name < b.name;
    });
    if (row.ops.size() > kAnnotationTopOps) {
      row.ops_left_out = static_cast<int64_t>(row.ops.size() - kAnnotationTopOps);
      row.ops.resize(kAnnotationTopOps);
    }
    out.rows.push_back(std::move(row));
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const AnnotationRow& a, const AnnotationRow& b) {
    if (a.gpu != b.gpu) return !a.gpu;
    if (a.kernel_ns_inclusive != b.kernel_ns_inclusive) return a.kernel_ns_inclusive > b.kernel_ns_inclusive;
    if (a.span_ns != b.span_ns) return a.span_ns > b.span_ns;
    return a.name < b.name;
  });
  return out;
}

void printAnnotationBreakdownText(const std::vector<RankAnnotations>& ranks, std::ostream& out) {
  constexpr size_t kRowsShown = 15, kRowsWithOps = 5;
  for (const RankAnnotations& r : ranks) {
    if (r.rows.empty()) continue;
    out << "\nannotation breakdown, rank " << r.rank << " (kernels by their launch's annotation: self = innermost, "
        << "incl = with every enclosing one; every step)\n";
    out << "  " << r.kernels_annotated << " of " << r.kernels << " kernels (" << reportUs(double(r.kernel_ns_annotated), true)
        << " of " << reportUs(double(r.kernel_ns), true) << " us) launched inside an annotation";
    if (r.kernels_without_launch) out << "; " << r.kernels_without_launch << " without their launch in the trace";
    out << "\n  side  count        span us  kernels self/incl    kernel us self       kernel us incl  name\n";
    for (size_t i = 0; i < r.rows.size() && i < kRowsShown; ++i) {
      const AnnotationRow& a = r.rows[i];
      char line[512];
      std::snprintf(line, sizeof line, "  %-4s  %5lld  %13s  %8lld/%-8lld  %15s  %19s  %s\n", a.gpu ? "gpu" : "cpu",
                    static_cast<long long>(a.count), reportUs(double(a.span_ns), true).c_str(),
                    static_cast<long long>(a.kernels_self), static_cast<long long>(a.kernels_inclusive),
                    reportUs(double(a.kernel_ns_self), true).c_str(),
                    reportUs(double(a.kernel_ns_inclusive), true).c_str(), a.name.substr(0, 80).c_str());
      out << line;
      if (i >= kRowsWithOps) continue;
      for (const AnnotationOpRow& op : a.ops) {
        out << "        op " << op.name.substr(0, 60) << ": " << op.kernels << " kernels, " << reportUs(double(op.kernel_ns), true)
            << " us";
        for (const AnnotationKernelRow& k : op.by_kernel)
          out << "; " << k.name.substr(0, 50) << " x" << k.count << " " << reportUs(double(k.kernel_ns), true)
              << " us, launch delay mean " << reportUs(k.meanLaunchDelayNs(), true) << " max "
              << reportUs(double(k.max_launch_delay_ns), true) << " us";
        out << "\n";
      }
      if (a.ops_left_out) out << "        (" << a.ops_left_out << " more ops)\n";
    }
    if (r.rows.size() > kRowsShown) out << "  ... " << r.rows.size() - kRowsShown << " more annotations in --json\n";
  }
}

void writeAnnotationBreakdownJson(const std::vector<RankAnnotations>& ranks, std::ostream& out) {
  out << "{\"attribution\": \"kernel -> launch (correlation) -> innermost user_annotation of its thread (self), "
         "and every enclosing one (inclusive)\", \"launch_delay\": \""
      << kHtaLaunchDelayFormula << "\", \"top_ops\": " << kAnnotationTopOps << ", \"ranks\": [";
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankAnnotations& r = ranks[i];
    out << (i ? ",\n    " : "\n    ") << "{\"rank\": " << r.rank << ", \"kernels\": " << r.kernels
        << ", \"kernel_us\": " << reportUs(double(r.kernel_ns)) << ", \"kernels_annotated\": " << r.kernels_annotated
        << ", \"kernel_us_annotated\": " << reportUs(double(r.kernel_ns_annotated))
        << ", \"kernels_without_launch\": " << r.kernels_without_launch << ", \"annotations\": [";
    for (size_t a = 0; a < r.rows.size(); ++a) {
      const AnnotationRow& row = r.rows[a];
      out << (a ? ",\n      " : "\n      ") << "{\"name\": " << reportJsonString(row.name) << ", \"side\": \""
          << (row.gpu ? "gpu" : "cpu") << "\", \"count\": " << row.count << ", \"span_us\": " << reportUs(double(row.span_ns))
          << ", \"kernels_self\": " << row.kernels_self << ", \"kernel_us_self\": " << reportUs(double(row.kernel_ns_self))
          << ", \"kernels_inclusive\": " << row.kernels_inclusive
          << ", \"kernel_us_inclusive\": " << reportUs(double(row.kernel_ns_inclusive))
          << ", \"ops_left_out\": " << row.ops_left_out << ", \"ops\": [";
      for (size_t o = 0; o < row.ops.size(); ++o) {
        const AnnotationOpRow& op = row.ops[o];
        out << (o ? ", " : "") << "{\"name\": " << reportJsonString(op.name) << ", \"kernels\": " << op.kernels
            << ", \"kernel_us\": " << reportUs(double(op.kernel_ns)) << ", \"by_kernel\": [";
        for (size_t k = 0; k < op.by_kernel.size(); ++k) {
          const AnnotationKernelRow& kr = op.by_kernel[k];
          out << (k ? ", " : "") << "{\"name\": " << reportJsonString(kr.name) << ", \"count\": " << kr.count
              << ", \"kernel_us\": " << reportUs(double(kr.kernel_ns))
              << ", \"launch_delay_mean_us\": " << reportUs(kr.meanLaunchDelayNs())
              << ", \"launch_delay_max_us\": " << reportUs(double(kr.max_launch_delay_ns)) << "}";
        }
        out << "]}";
      }
      out << "]}";
    }
    out << "]}";
  }
  out << "]}";
}

}  // namespace shardscope::kineto
