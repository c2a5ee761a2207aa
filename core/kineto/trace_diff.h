// Two jobs compared op by op and kernel by kernel (`analyze --diff CONTROL
// TEST`), as HTA's TraceDiff and TraceLens' compare do: per CPU op name
// (cat cpu_op) and per GPU kernel name (cat kernel, gpu_memcpy, gpu_memset)
// the count and total duration on each side, per profiled step of one rank:
// a side's totals over its ProfilerStep#N spans divided by its (rank, step)
// pairs, so a 5-step trace compares fairly with a 3-step one and 8 ranks with
// one. An op counts when it starts inside a step span of its rank, a kernel
// when its launch (cuda_runtime / cuda_driver call of its correlation) does,
// or the kernel itself when its launch is not in the trace. A rank without
// ProfilerStep spans counts whole, as one step. Durations are inclusive (a
// nested op counts within its parent's time too). Rows sort by the change in
// time per step, the biggest regression (test slower) first.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "kineto/trace_set.h"

namespace shardscope::kineto {

struct TraceDiffSide {
  std::vector<std::string> inputs;  // what the user named (files, folders)
  std::vector<int> ranks;
  int64_t rank_steps = 0;           // the divisor: (rank, step) pairs, a rank without steps as one
  int64_t ranks_without_steps = 0;  // counted whole
};

enum class TraceDiffPresence : uint8_t { Both, ControlOnly, TestOnly };

struct TraceDiffRow {
  std::string name;
  TraceDiffPresence presence = TraceDiffPresence::Both;
  int64_t control_count = 0, test_count = 0;  // in the steps, all ranks
  int64_t control_ns = 0, test_ns = 0;        // total duration, all ranks
  double control_count_per_step = 0, test_count_per_step = 0;
  double control_ns_per_step = 0, test_ns_per_step = 0;

  double deltaNsPerStep() const { return test_ns_per_step - control_ns_per_step; }
  double deltaCountPerStep() const { return test_count_per_step - control_count_per_step; }
  // (test - control) / control x 100 per step; NaN when the control has none.
  double deltaPct() const;
};

struct TraceDiff {
  TraceDiffSide control, test;
  std::vector<TraceDiffRow> ops, kernels;  // by deltaNsPerStep descending, ties by name
};

// The text's and the help's words for the normalisation.
inline constexpr const char* kTraceDiffPerStep = "per profiled step of one rank";

TraceDiff computeTraceDiff(const TraceSet& control, const TraceSet& test);

// Both sides read (each a trace file or a folder of per-rank traces, as
// loadTraceSet reads them) and compared: the CLI's --diff and the window's
// Compare jobs. options.rank_of entries go to the side whose files they name.
// A ConfigError names the side ("--diff CONTROL: <the reader's error>", with
// `what` in place of "--diff"); notes: the loads' notes, each after its side.
TraceDiff loadTraceDiff(const std::string& control, const std::string& test, const TraceSetOptions& options,
                        std::vector<std::string>* notes = nullptr, const std::string& what = "--diff");

// Text tables: with more than kTraceDiffTextRows rows a table shows the first
// 20 (regressions) and the last 10 (improvements); the CSV has every row.
inline constexpr size_t kTraceDiffTextRows = 30;
void printTraceDiffText(const TraceDiff& d, std::ostream& out);
// The value of the "trace_diff" key.
void writeTraceDiffJson(const TraceDiff& d, std::ostream& out);
// kind,name,presence,... a row per op and kernel (header first).
void writeTraceDiffCsv(const TraceDiff& d, std::ostream& out);

}  // namespace shardscope::kineto
