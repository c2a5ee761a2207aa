#include "inspect/run_comparison.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "analysis/run_summary.h"
#include "engine/run.h"
#include "inspect/event_store.h"
#include "inspect/memory_series.h"
#include "trace/step_metrics.h"

namespace shardscope {

namespace {

// Per (rank, step) timing of the steps every rank completed, from the events.
// A copied rank's steps are its source's (the same events): computed once.
std::vector<StepMetrics> comparedCompletedSteps(const EventStore& store) {
  std::vector<std::vector<Event>> events(static_cast<size_t>(store.rankCount()));
  for (int r = 0; r < store.rankCount(); ++r)
    if (!store.isCopy(r)) events[static_cast<size_t>(r)] = store.events(r);
  std::vector<StepMetrics> own = computeStepMetrics(events);
  if (store.copies().empty()) return own;
  std::map<int, std::vector<StepMetrics>> by_rank;
  for (const StepMetrics& m : own) by_rank[m.rank].push_back(m);
  std::vector<StepMetrics> out;
  for (int r = 0; r < store.rankCount(); ++r) {
    const auto it = by_rank.find(store.sourceOf(r));
    if (it == by_rank.end()) continue;
    for (StepMetrics m : it->second) {
      m.rank = r;
      out.push_back(m);
    }
  }
  return out;
}

std::set<int> comparedStepsOnEveryRank(const std::vector<StepMetrics>& metrics, int ranks) {
  std::map<int, std::set<int>> ranks_of;
  for (const StepMetrics& m : metrics) ranks_of[m.step].insert(m.rank);
  std::set<int> steps;
  for (const auto& [step, seen] : ranks_of)
    if (static_cast<int>(seen.size()) == ranks) steps.insert(step);
  return steps;
}

// Per step: the earliest step_begin over ranks, the longest rank's wall time
// and how many ranks completed it — computeStepMetrics' wall_ns (a rank's last
// step_begin to its last step_end), without copying the run's events.
struct ComparedStepSpan {
  int64_t begin_ns = INT64_MAX;
  int64_t wall_ns = 0;
  int ranks = 0;
};
std::map<int, ComparedStepSpan> comparedStepSpans(const EventStore& store) {
  std::map<int, ComparedStepSpan> spans;
  for (int r = 0; r < store.rankCount(); ++r) {
    std::map<int, std::pair<int64_t, int64_t>> steps;  // step -> (begin, end), -1 unseen
    for (const Event& e : store.events(r)) {
      if (e.step < 0 || (e.kind != EventKind::StepBegin && e.kind != EventKind::StepEnd)) continue;
      auto& be = steps.try_emplace(e.step, -1, -1).first->second;
      if (e.kind == EventKind::StepBegin) be.first = e.begin_ns;
      else be.second = e.end_ns;
    }
    for (const auto& [step, be] : steps) {
      if (be.first < 0 || be.second < 0) continue;
      ComparedStepSpan& s = spans[step];
      s.begin_ns = std::min(s.begin_ns, be.first);
      s.wall_ns = std::max(s.wall_ns, be.second - be.first);
      ++s.ranks;
    }
  }
  return spans;
}

int64_t comparedSentOf(const CommBytes& b) { return b.all_reduce + b.reduce_scatter + b.all_gather; }

}  // namespace

RunFigures runFigures(const ComparedRun& run) {
  RunFigures f;
  const EventStore& store = *run.store;
  f.params = store.meta().params;
  if (const RunResult* r = run.result.get(); r && !r->ranks.empty()) {
    // The summary's own figures (writeSummaryJson).
    f.params = r->params;
    if (!r->last_step.empty()) {
      int64_t step = 0, exposed = 0;
      for (const StepMetrics& m : r->last_step) {
        step = std::max(step, m.wall_ns);
        exposed += m.exposed_comm_ns;
      }
      f.step_ns = step;
      f.exposed_comm_ns = static_cast<int64_t>(static_cast<double>(exposed) / static_cast<double>(r->last_step.size()));
    }
    int64_t sent = 0;
    for (const RankResult& rank : r->ranks)
      sent = std::max(sent, comparedSentOf(rank.comm_bytes) + comparedSentOf(rank.tp_comm_bytes));
    f.total_peak_bytes = largestTotalPeak(*r);
    f.sent_bytes = sent;
    f.model_state_bytes = r->ranks.front().ledger.model_state_peak;
    return f;
  }
  // An opened trace: the same figures from its events.
  const std::vector<StepMetrics> metrics = comparedCompletedSteps(store);
  const std::set<int> steps = comparedStepsOnEveryRank(metrics, store.rankCount());
  if (!steps.empty()) {
    const int last = *steps.rbegin();
    int64_t step = 0, exposed = 0, n = 0;
    for (const StepMetrics& m : metrics) {
      if (m.step != last) continue;
      step = std::max(step, m.wall_ns);
      exposed += m.exposed_comm_ns;
      ++n;
    }
    f.step_ns = step;
    f.exposed_comm_ns = exposed / std::max<int64_t>(n, 1);
    // Bytes sent: each collective's buffer × its ring factor on its group.
    double sent = 0;
    for (int r = 0; r < store.rankCount(); ++r) {
      double rank_sent = 0;
      for (const Event& e : store.events(r))
        if (e.step == last)
          rank_sent += static_cast<double>(e.bytes) * busBandwidthFactor(e.kind, store.meta().groupSize(store.copies().eventFor(r, e)));
      sent = std::max(sent, rank_sent);
    }
    f.sent_bytes = static_cast<int64_t>(sent + 0.5);
  }
  MemorySeries series;
  series.sync(store);
  if (series.rankCount() > 0) {
    int64_t peak = 0;
    for (int r = 0; r < series.rankCount(); ++r)
      if (const MemorySample* s = series.peakTotal(r)) peak = std::max(peak, s->total());
    f.total_peak_bytes = peak;
    if (const MemorySample* s = series.peakModelState(0)) f.model_state_bytes = s->modelState();
  }
  return f;
}

std::vector<FigureRatio> compareFigures(const RunFigures& a, const RunFigures& b) {
  const auto line = [](std::string name, std::optional<int64_t> x, std::optional<int64_t> y, FigureRatio::Unit unit) {
    FigureRatio f;
    f.name = std::move(name);
    f.unit = unit;
    if (x) f.a = static_cast<double>(*x);
    if (y) f.b = static_cast<double>(*y);
    if (x && y && *x != 0) f.ratio = static_cast<double>(*y) / static_cast<double>(*x);
    return f;
  };
  return {line("step time", a.step_ns, b.step_ns, FigureRatio::Unit::Ns),
          line("exposed comm", a.exposed_comm_ns, b.exposed_comm_ns, FigureRatio::Unit::Ns),
          line(kTotalPeakName, a.total_peak_bytes, b.total_peak_bytes, FigureRatio::Unit::Bytes),
          line("bytes sent", a.sent_bytes, b.sent_bytes, FigureRatio::Unit::Bytes)};
}

std::vector<int> commonSteps(const std::vector<ComparedRun>& runs) {
  std::optional<std::set<int>> common;
  for (const ComparedRun& run : runs) {
    std::set<int> steps;
    for (const auto& [step, span] : comparedStepSpans(*run.store))
      if (span.ranks == run.store->rankCount()) steps.insert(step);
    if (!common) {
      common = std::move(steps);
      continue;
    }
    std::set<int> both;
    std::set_intersection(common->begin(), common->end(), steps.begin(), steps.end(), std::inserter(both, both.end()));
    common = std::move(both);
  }
  return common ? std::vector<int>(common->begin(), common->end()) : std::vector<int>{};
}

StepAlignment alignAtStep(const std::vector<ComparedRun>& runs, int step) {
  StepAlignment a;
  const std::vector<int> steps = commonSteps(runs);
  if (steps.empty()) return a;
  a.step = step >= 0 && std::binary_search(steps.begin(), steps.end(), step) ? step : steps.back();
  for (const ComparedRun& run : runs) {
    const std::map<int, ComparedStepSpan> spans = comparedStepSpans(*run.store);
    const ComparedStepSpan& span = spans.at(a.step);
    StepAlignment::Run r;
    r.begin_ns = span.begin_ns;
    r.step_ns = span.wall_ns;
    a.runs.push_back(r);
  }
  const int64_t first = a.runs.front().step_ns;
  for (StepAlignment::Run& r : a.runs) {
    r.diff_ns = r.step_ns - first;
    r.ratio = first > 0 ? static_cast<double>(r.step_ns) / static_cast<double>(first) : 1.0;
  }
  return a;
}

}  // namespace shardscope
