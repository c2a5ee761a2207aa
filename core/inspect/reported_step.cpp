#include "inspect/reported_step.h"

#include <algorithm>


namespace shardscope {

int reportedStep(const std::vector<std::set<int>>& completed_per_rank, const ImportedSource* imported) {
  std::vector<const std::set<int>*> counted;
  for (size_t r = 0; r < completed_per_rank.size(); ++r)
    if (!imported || imported->hasRank(static_cast<int>(r))) counted.push_back(&completed_per_rank[r]);
  if (counted.empty()) return -1;
  std::vector<int> complete;
  for (int s : *counted.front())
    if (std::all_of(counted.begin(), counted.end(), [s](const std::set<int>* r) { return r->count(s) > 0; }))
      complete.push_back(s);
  if (complete.empty()) return -1;
  const bool drop_last = imported && complete.size() >= 2;
  return complete[complete.size() - (drop_last ? 2 : 1)];
}

ReportedStep reportedStepMetrics(const std::vector<std::vector<Event>>& events_per_rank, const ImportedSource* imported) {
  ReportedStep out;
  const std::vector<StepMetrics> all = computeStepMetrics(events_per_rank, imported);
  std::vector<std::set<int>> completed(events_per_rank.size());
  for (const StepMetrics& m : all)
    if (m.rank >= 0 && static_cast<size_t>(m.rank) < completed.size()) completed[static_cast<size_t>(m.rank)].insert(m.step);
  out.step = reportedStep(completed, imported);
  if (out.step < 0) return out;
  for (const StepMetrics& m : all)
    if (m.step == out.step) out.ranks.push_back(m);
  std::sort(out.ranks.begin(), out.ranks.end(), [](const StepMetrics& a, const StepMetrics& b) { return a.rank < b.rank; });
  return out;
}

}  // namespace shardscope
