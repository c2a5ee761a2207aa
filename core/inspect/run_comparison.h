// Compare mode's model: several runs pinned side by side (a preset's runs,
// rows of the Runs table, opened traces). It aligns their timelines at one
// step's start (each run's offset to it, the step time and its difference to
// the first run's), and puts what each run measured beside the others' for the
// difference readout. The views draw it; nothing here knows Qt.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/kinds.h"

namespace shardscope {

class EventStore;
struct RunResult;

struct ComparedRun {
  std::string label;                        // "zero1", "fsdp · prefetch both"
  std::shared_ptr<const EventStore> store;  // the run's events (never null)
  std::shared_ptr<const RunResult> result;  // what it measured; null for an opened trace
};

// What one run measured, as its summary writes it (analysis/run_summary.h);
// for an opened trace, the same figures read back from its events.
// nullopt: the run does not say.
struct RunFigures {
  std::optional<int64_t> step_ns;            // last step, slowest rank (last_step.step_ns)
  std::optional<int64_t> exposed_comm_ns;    // last step, mean over ranks (last_step.exposed_comm_ns)
  // The most-loaded rank's peak of all ledger categories summed (the largest
  // per_rank total_peak_bytes): not the memory chart's peak, which is one
  // rank's peak of the categories it draws (MemorySeries::peakOf).
  std::optional<int64_t> total_peak_bytes;
  std::optional<int64_t> sent_bytes;         // largest bytes one rank sent in the last step (comm_bytes summed)
  std::optional<int64_t> model_state_bytes;  // rank 0's model_state_peak_bytes
  int64_t params = 0;
};
RunFigures runFigures(const ComparedRun& run);

// One line of the difference readout: A, B and B/A (nullopt where either is unknown or A is 0).
struct FigureRatio {
  std::string name;  // "step time", "exposed comm", kTotalPeakName (analysis/run_summary.h), "bytes sent"
  std::optional<double> a, b, ratio;
  enum class Unit { Ns, Bytes } unit = Unit::Ns;
};
std::vector<FigureRatio> compareFigures(const RunFigures& a, const RunFigures& b);

// The runs' timelines aligned at one step: each run's time axis shifted so
// that step's first step_begin (over all ranks) is at 0.
struct StepAlignment {
  struct Run {
    int64_t begin_ns = 0;  // the step's start in the run's own time (its offset)
    int64_t step_ns = 0;   // the step's wall time, slowest rank
    int64_t diff_ns = 0;   // step_ns minus the first run's
    double ratio = 1;      // step_ns / the first run's (1 when that is 0)
  };
  int step = -1;  // the step aligned, as recorded; -1: no step every run completed
  std::vector<Run> runs;
};
// Steps every run completed on every rank, ascending.
std::vector<int> commonSteps(const std::vector<ComparedRun>& runs);
// step < 0: the last common step (the steady state, as the summaries' last_step).
StepAlignment alignAtStep(const std::vector<ComparedRun>& runs, int step = -1);

}  // namespace shardscope
