#include "kineto/step_times.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <utility>

#include "kineto/report_format.h"

namespace shardscope::kineto {

StepTimes computeStepTimes(const TraceSet& set) {
  StepTimes out;
  std::map<int64_t, std::vector<std::pair<int64_t, size_t>>> by_number;  // N -> (dur, position in out.ranks)
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    const RankTrace& t = set.ranks[r];
    RankStepTimes rank;
    rank.rank = t.rank;
    for (const ProfilerStep& s : set.indexes[r].steps) {
      const TraceEvent& e = t.events[s.event];
      if (!e.has(kHasDur)) continue;  // a step without a dur has no duration to show
      rank.steps.push_back({s.number, e.dur_ns});
      auto& of_step = by_number[s.number];
      // A step number twice on one rank (not Kineto's doing): its first span.
      if (std::none_of(of_step.begin(), of_step.end(), [&](const auto& p) { return p.second == r; }))
        of_step.push_back({e.dur_ns, r});
    }
    out.ranks.push_back(std::move(rank));
  }
  for (auto& [number, durs] : by_number) {
    StepSpread s;
    s.number = number;
    s.ranks = static_cast<int>(durs.size());
    std::vector<int64_t> sorted;
    for (const auto& d : durs) sorted.push_back(d.first);
    std::sort(sorted.begin(), sorted.end());
    s.min_ns = sorted.front();
    s.max_ns = sorted.back();
    const size_t n = sorted.size();
    s.median_ns = n % 2 ? double(sorted[n / 2]) : (double(sorted[n / 2 - 1]) + double(sorted[n / 2])) / 2.0;
    if (n >= 2) {
      size_t slowest = durs.front().second;
      int64_t longest = durs.front().first;
      for (const auto& [dur, r] : durs)  // positions follow rank order: the first longest is the lowest rank
        if (dur > longest) longest = dur, slowest = r;
      s.slowest_rank = out.ranks[slowest].rank;
      ++out.ranks[slowest].slowest_steps;
    }
    out.steps.push_back(s);
  }
  return out;
}

void printStepTimesText(const StepTimes& s, std::ostream& out) {
  if (s.steps.empty()) return;
  out << "\nstep times (every ProfilerStep#N span, the last one included; us)\n";
  out << "  step    ranks        min us        median us          max us   slowest rank\n";
  for (const StepSpread& p : s.steps) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-6lld  %5d  %14s  %14s  %14s   %s\n", static_cast<long long>(p.number), p.ranks,
                  reportUs(double(p.min_ns), true).c_str(), reportUs(p.median_ns, true).c_str(),
                  reportUs(double(p.max_ns), true).c_str(),
                  p.slowest_rank >= 0 ? std::to_string(p.slowest_rank).c_str() : "- (one rank)");
    out << line;
  }
  out << "  slowest-step count per rank:";
  for (const RankStepTimes& r : s.ranks) out << "  rank " << r.rank << ": " << r.slowest_steps;
  out << "\n";
}

void writeStepTimesJson(const StepTimes& s, std::ostream& out) {
  out << "{\"all_steps\": true, \"ranks\": [";
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    const RankStepTimes& r = s.ranks[i];
    out << (i ? ",\n    " : "\n    ") << "{\"rank\": " << r.rank << ", \"slowest_steps\": " << r.slowest_steps
        << ", \"steps\": [";
    for (size_t k = 0; k < r.steps.size(); ++k)
      out << (k ? ", " : "") << "{\"step\": " << r.steps[k].number << ", \"dur_us\": " << reportUs(double(r.steps[k].dur_ns))
          << "}";
    out << "]}";
  }
  out << "],\n   \"steps\": [";
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const StepSpread& p = s.steps[i];
    out << (i ? ",\n    " : "\n    ") << "{\"step\": " << p.number << ", \"ranks\": " << p.ranks
        << ", \"min_us\": " << reportUs(double(p.min_ns)) << ", \"median_us\": " << reportUs(p.median_ns)
        << ", \"max_us\": " << reportUs(double(p.max_ns)) << ", \"spread_us\": " << reportUs(double(p.max_ns) - double(p.min_ns))
        << ", \"slowest_rank\": " << (p.slowest_rank >= 0 ? std::to_string(p.slowest_rank) : "null") << "}";
  }
  out << "]}";
}

}  // namespace shardscope::kineto
