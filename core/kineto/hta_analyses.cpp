#include "kineto/hta_analyses.h"

#include <cmath>
#include <cstdio>
#include <future>
#include <ostream>
#include <string>
#include <string_view>

#include "common/units.h"

namespace shardscope::kineto {

HtaRankAnalyses computeHtaAnalyses(const RankTrace& trace, const HtaSelection& selection) {
  const HtaCorrelations correlations = pairHtaCorrelations(trace, selection);
  HtaRankAnalyses a;
  // Four passes over const inputs, each writing its own member: two on a
  // second thread (about a tenth of `analyze` on a 200 MB trace, halved).
  auto second = std::async(std::launch::async, [&] {
    a.idle_time = computeHtaIdleTime(trace, selection, correlations);
    a.kernel_breakdown = computeHtaKernelBreakdown(trace, selection);
  });
  a.queue_length = computeHtaQueueLength(trace, selection, correlations);
  a.launch = computeHtaLaunchStats(trace, selection, correlations);
  second.get();
  return a;
}

namespace {

std::string htaNum(const char* f, double v) {
  if (std::isnan(v)) return "n/a";
  char s[64];
  std::snprintf(s, sizeof s, f, v);
  return s;
}
std::string htaJson(const char* f, double v) { return std::isnan(v) ? "null" : htaNum(f, v); }
double htaUs(double ns) { return ns / kNsPerUs; }

void htaJsonString(std::ostream& out, std::string_view s) {
  out << '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char e[8];
      std::snprintf(e, sizeof e, "\\u%04x", c);
      out << e;
    } else {
      out << c;
    }
  }
  out << '"';
}

// scale: 1e-3 for ns -> µs, 1 for counts; f: the decimals.
void htaJsonStats(std::ostream& out, const HtaStats& s, double scale, const char* f) {
  out << "{\"count\": " << s.count << ", \"mean\": " << htaJson(f, s.mean * scale) << ", \"std\": "
      << htaJson(f, s.stddev * scale) << ", \"min\": " << htaJson(f, s.min * scale) << ", \"p25\": " << htaJson(f, s.p25 * scale)
      << ", \"p50\": " << htaJson(f, s.p50 * scale) << ", \"p75\": " << htaJson(f, s.p75 * scale)
      << ", \"max\": " << htaJson(f, s.max * scale) << "}";
}

std::string htaTextStats(const HtaStats& s, double scale, const char* f) {
  char line[256];
  std::snprintf(line, sizeof line, "%6lld  %10s %10s %10s %10s %10s %10s %10s", static_cast<long long>(s.count),
                htaNum(f, s.mean * scale).c_str(), htaNum(f, s.stddev * scale).c_str(), htaNum(f, s.min * scale).c_str(),
                htaNum(f, s.p25 * scale).c_str(), htaNum(f, s.p50 * scale).c_str(), htaNum(f, s.p75 * scale).c_str(),
                htaNum(f, s.max * scale).c_str());
  return line;
}

constexpr const char* kHtaStatsHead = " count        mean        std        min        25%        50%        75%        max";

}  // namespace

void printHtaAnalysesText(const HtaRankAnalyses& a, std::ostream& out) {
  if (!a.idle_time.streams.empty()) {
    out << "  idle time by stream (HTA's breakdown; kernel wait: gaps under "
        << htaNum("%.0f", htaUs(double(a.idle_time.consecutive_kernel_delay_ns))) << " us):\n"
        << "    stream        host wait us (ratio)   kernel wait us (ratio)         other us (ratio)    kernels\n";
    for (const HtaStreamIdleTime& s : a.idle_time.streams) {
      char line[256];
      std::snprintf(line, sizeof line, "    %6d  %14s (%6s)  %14s (%6s)  %14s (%6s)  %9lld\n", s.stream,
                    htaNum("%.3f", htaUs(double(s.host_wait_ns))).c_str(), htaNum("%.4f", s.ratio(s.host_wait_ns)).c_str(),
                    htaNum("%.3f", htaUs(double(s.kernel_wait_ns))).c_str(), htaNum("%.4f", s.ratio(s.kernel_wait_ns)).c_str(),
                    htaNum("%.3f", htaUs(double(s.other_ns))).c_str(), htaNum("%.4f", s.ratio(s.other_ns)).c_str(),
                    static_cast<long long>(s.kernels));
      out << line;
      if (s.without_launch > 0)
        out << "            " << s.without_launch << " gaps before a GPU event whose launch is not in the trace "
            << "(counted as kernel wait or other, never host wait)\n";
    }
  }
  if (!a.queue_length.streams.empty()) {
    out << "  launch queue length by stream (HTA: +1 per launch call, -1 per GPU event start; " << a.queue_length.launches
        << " launches):\n    stream " << kHtaStatsHead << "\n";
    for (const HtaStreamQueueLength& q : a.queue_length.streams)
      out << "    " << htaNum("%6.0f", double(q.stream)) << " " << htaTextStats(q.length, 1.0, "%.4f") << "\n";
  }
  if (!a.kernel_breakdown.types.empty()) {
    out << "  kernel breakdown (HTA: per type the top 10 names within 80 % of the time, the rest as \"others\"; us):\n";
    for (const HtaKernelTypeBreakdown& b : a.kernel_breakdown.types) {
      out << "    " << htaKernelTypeName(b.type)
          << (b.grouped ? " (grouped: a name's max/min/mean are its sum, \"others\" over its names' sums)" : "")
          << "\n      kernels         sum        mean         max         min         std  name\n";
      for (const HtaKernelRow& r : b.rows) {
        char line[256];
        std::snprintf(line, sizeof line, "      %7lld  %10s  %10s  %10s  %10s  %10s  ", static_cast<long long>(r.kernels),
                      htaNum("%.3f", htaUs(r.sum_ns)).c_str(), htaNum("%.3f", htaUs(r.mean_ns)).c_str(),
                      htaNum("%.3f", htaUs(r.max_ns)).c_str(), htaNum("%.3f", htaUs(r.min_ns)).c_str(),
                      htaNum("%.3f", htaUs(r.std_ns)).c_str());
        out << line << r.name.substr(0, 80);
        if (r.names > 1) out << " (" << r.names << " names)";
        out << "\n";
      }
    }
  }
  const HtaLaunchStats& l = a.launch;
  if (l.pairs > 0) {
    out << "  launch statistics (HTA: launch call -> GPU event by correlation; " << l.pairs << " pairs; us):\n"
        << "                   " << kHtaStatsHead << "\n"
        << "    cpu duration   " << htaTextStats(l.cpu_duration, 1e-3, "%.3f") << "\n"
        << "    gpu duration   " << htaTextStats(l.gpu_duration, 1e-3, "%.3f") << "\n"
        << "    launch delay   " << htaTextStats(l.launch_delay, 1e-3, "%.3f") << "   (" << kHtaLaunchDelaySource
        << ": " << kHtaLaunchDelayFormula << ")\n"
        << "    start delay    " << htaTextStats(l.start_delay, 1e-3, "%.3f") << "   (gpu ts - launch end, unclamped)\n"
        << "    outliers: " << l.runtime_outliers << " launches over 50 us, " << l.launch_delay_outliers
        << " launch delays over 100 us, " << l.short_kernels << " GPU events shorter than their launch\n";
  }
  const HtaCorrelationCheck& c = l.check;
  if (c.kernels_without_correlation + c.kernels_without_launch + c.launches_without_correlation +
          c.launches_without_kernel > 0)
    out << "  unpaired: " << c.kernels_without_correlation << " GPU events without a correlation, "
        << c.kernels_without_launch << " whose launch is not in the trace, " << c.launches_without_correlation
        << " launches without a correlation, " << c.launches_without_kernel << " launches without a GPU event\n";
  if (c.crowded_correlations > 0)
    out << "  " << c.crowded_correlations << " correlation ids shared by over " << kHtaMaxPairsPerCorrelation
        << " launch x GPU event pairs: left out of the queue length and launch statistics\n";
}

void writeHtaAnalysesJson(const HtaRankAnalyses& a, std::ostream& out, const char* in) {
  out << in << "\"idle_time_breakdown\": {\"consecutive_kernel_delay_us\": "
      << htaJson("%.3f", htaUs(double(a.idle_time.consecutive_kernel_delay_ns))) << ", \"streams\": [";
  for (size_t i = 0; i < a.idle_time.streams.size(); ++i) {
    const HtaStreamIdleTime& s = a.idle_time.streams[i];
    out << (i ? ",\n" : "\n") << in << "  {\"stream\": " << s.stream << ", \"kernels\": " << s.kernels
        << ", \"idle_us\": " << htaJson("%.3f", htaUs(double(s.idleNs())))
        << ", \"host_wait_us\": " << htaJson("%.3f", htaUs(double(s.host_wait_ns)))
        << ", \"kernel_wait_us\": " << htaJson("%.3f", htaUs(double(s.kernel_wait_ns)))
        << ", \"other_us\": " << htaJson("%.3f", htaUs(double(s.other_ns)))
        << ", \"host_wait_ratio\": " << htaJson("%.4f", s.ratio(s.host_wait_ns))
        << ", \"kernel_wait_ratio\": " << htaJson("%.4f", s.ratio(s.kernel_wait_ns))
        << ", \"other_ratio\": " << htaJson("%.4f", s.ratio(s.other_ns))
        << ", \"gaps_without_launch\": " << s.without_launch << "}";
  }
  out << "]},\n" << in << "\"queue_length\": {\"launches\": " << a.queue_length.launches << ", \"streams\": [";
  for (size_t i = 0; i < a.queue_length.streams.size(); ++i) {
    const HtaStreamQueueLength& q = a.queue_length.streams[i];
    out << (i ? ",\n" : "\n") << in << "  {\"stream\": " << q.stream << ", \"length\": ";
    htaJsonStats(out, q.length, 1.0, "%.4f");
    out << "}";
  }
  out << "]},\n" << in << "\"kernel_breakdown\": [";
  for (size_t t = 0; t < a.kernel_breakdown.types.size(); ++t) {
    const HtaKernelTypeBreakdown& b = a.kernel_breakdown.types[t];
    out << (t ? ",\n" : "\n") << in << "  {\"kernel_type\": \"" << htaKernelTypeName(b.type)
        << "\", \"grouped\": " << (b.grouped ? "true" : "false") << ", \"rows\": [";
    for (size_t r = 0; r < b.rows.size(); ++r) {
      const HtaKernelRow& k = b.rows[r];
      out << (r ? ",\n" : "\n") << in << "    {\"name\": ";
      htaJsonString(out, k.name);
      out << ", \"names\": " << k.names << ", \"kernels\": " << k.kernels << ", \"sum_us\": " << htaJson("%.3f", htaUs(k.sum_ns))
          << ", \"mean_us\": " << htaJson("%.3f", htaUs(k.mean_ns)) << ", \"max_us\": " << htaJson("%.3f", htaUs(k.max_ns))
          << ", \"min_us\": " << htaJson("%.3f", htaUs(k.min_ns)) << ", \"std_us\": " << htaJson("%.3f", htaUs(k.std_ns)) << "}";
    }
    out << "]}";
  }
  const HtaLaunchStats& l = a.launch;
  const HtaCorrelationCheck& c = l.check;
  out << "],\n" << in << "\"launch_delay\": {\"pairs\": " << l.pairs << ", \"formula\": \"" << kHtaLaunchDelayFormula
      << "\", \"definition\": \"" << kHtaLaunchDelaySource << "\",\n" << in << "  \"cpu_duration_us\": ";
  htaJsonStats(out, l.cpu_duration, 1e-3, "%.3f");
  out << ",\n" << in << "  \"gpu_duration_us\": ";
  htaJsonStats(out, l.gpu_duration, 1e-3, "%.3f");
  out << ",\n" << in << "  \"launch_delay_us\": ";
  htaJsonStats(out, l.launch_delay, 1e-3, "%.3f");
  out << ",\n" << in << "  \"start_delay_us\": ";
  htaJsonStats(out, l.start_delay, 1e-3, "%.3f");
  out << ",\n" << in << "  \"runtime_outliers\": " << l.runtime_outliers << ", \"launch_delay_outliers\": "
      << l.launch_delay_outliers << ", \"short_kernels\": " << l.short_kernels << ",\n"
      << in << "  \"unpaired\": {\"gpu_events\": " << c.kernels << ", \"gpu_events_without_correlation\": "
      << c.kernels_without_correlation << ", \"gpu_events_without_launch\": " << c.kernels_without_launch
      << ", \"launches\": " << c.launches << ", \"launches_without_correlation\": " << c.launches_without_correlation
      << ", \"launches_without_gpu_event\": " << c.launches_without_kernel
      << ", \"crowded_correlations\": " << c.crowded_correlations << "}}";
}

}  // namespace shardscope::kineto
