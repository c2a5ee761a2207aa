#include "cli/inspect_command.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <ostream>

#include "common/exit_codes.h"
#include "input/input_detect.h"
#include "inspect/bucket_activity.h"
#include "inspect/event_store.h"
#include "inspect/memory_series.h"
#include "inspect/unit_states.h"
#include "trace/chrome_trace_reader.h"

namespace shardscope {

namespace {

constexpr std::array<const char*, kUnitStateCount> kUnitStateNames = {"sharded",   "gathering", "gathered",
                                                                      "computing", "reducing",  "freed"};

// Modeled steps of small models last microseconds: print those as us.
std::string duration(int64_t ns) {
  char text[32];
  if (ns >= 1'000'000 || ns == 0)
    std::snprintf(text, sizeof text, "%.3f ms", static_cast<double>(ns) * 1e-6);
  else
    std::snprintf(text, sizeof text, "%.1f us", static_cast<double>(ns) * 1e-3);
  return text;
}

// Buckets by the time they became ready in one step, the first to fire first.
void printBuckets(const BucketActivity& buckets, int rank, std::ostream& out) {
  out << "rank " << rank << " buckets: ";
  const int step = buckets.defaultStep();
  if (buckets.bucketCount() == 0 || step < 0) {
    out << "none\n";
    return;
  }
  std::vector<std::pair<int64_t, int>> ready;
  for (int b = 0; b < buckets.bucketCount(); ++b)
    if (const BucketSlot& s = buckets.slot(step, rank, b); s.ready()) ready.emplace_back(s.ready_ns, buckets.bucketId(b));
  std::stable_sort(ready.begin(), ready.end());
  out << "step " << buckets.stepId(step) << " fire order";
  for (const auto& [t, b] : ready) out << " " << b;
  if (static_cast<int>(ready.size()) < buckets.bucketCount())
    out << " (" << buckets.bucketCount() - static_cast<int>(ready.size()) << " never ready)";
  out << "\n";
}

// For the last step: time per state summed over units, and how many units
// held their full parameters (gathering, gathered or computing) at once.
// A stopped run's last state lasts "until the step ends", which it never
// did: such spans count up to the trace's end, end_ns.
void printUnits(const UnitStates& units, int rank, int64_t end_ns, std::ostream& out) {
  out << "rank " << rank << " units: ";
  const int step = units.lastStep();
  if (units.unitCount() == 0 || step < 0 || rank >= units.rankCount()) {
    out << "none\n";
    return;
  }
  std::array<int64_t, kUnitStateCount> time{};
  std::vector<std::pair<int64_t, int>> edges;  // (t, +1 / -1) of unsharded spans
  for (int u = 0; u < units.unitCount(); ++u) {
    for (const UnitSpan& s : units.spans(rank, u)) {
      if (s.step != step) continue;
      const int64_t span_end = std::min(s.end_ns, end_ns);
      if (span_end <= s.begin_ns) continue;
      time[static_cast<size_t>(s.state)] += span_end - s.begin_ns;
      const bool unsharded =
          s.state == UnitState::Gathering || s.state == UnitState::Gathered || s.state == UnitState::Computing;
      if (unsharded) {
        edges.emplace_back(s.begin_ns, +1);
        edges.emplace_back(span_end, -1);
      }
    }
  }
  // An end sorts before a begin at the same time, so a unit's adjacent spans
  // (gathering, then gathered) count once.
  std::sort(edges.begin(), edges.end());
  int open = 0, most = 0;
  for (const auto& [t, d] : edges) most = std::max(most, open += d);
  out << units.unitCount() << " units, step " << step << ", at most " << most << " unsharded at once;";
  for (int st = 1; st < kUnitStateCount; ++st)
    out << (st == 1 ? " " : ", ") << kUnitStateNames[static_cast<size_t>(st)] << " " << duration(time[static_cast<size_t>(st)]);
  out << "\n";
}

void printPeaks(const MemorySeries& memory, int rank, std::ostream& out) {
  out << "rank " << rank << " peak bytes:";
  if (rank >= memory.rankCount() || memory.samples(rank).empty()) {
    out << " none\n";
    return;
  }
  std::array<int64_t, kCategoryCount> peak{};
  for (const MemorySample& s : memory.samples(rank))
    for (size_t c = 0; c < peak.size(); ++c) peak[c] = std::max(peak[c], s.bytes[c]);
  for (size_t c = 0; c < peak.size(); ++c)
    if (peak[c] > 0) out << " " << categoryName(static_cast<Category>(c)) << " " << peak[c];
  const MemorySample* state = memory.peakModelState(rank);
  const MemorySample* total = memory.peakTotal(rank);
  out << "; model state " << (state ? state->modelState() : 0) << ", total " << (total ? total->total() : 0) << "\n";
}

}  // namespace

std::string inspectUsage() {
  return "usage: shardscope-cli inspect TRACE.json\n"
         "  reads a trace written by shardscope (run --trace, or the GUI's Export trace) and prints per rank:\n"
         "  the order its gradient buckets became ready (ddp, zero1, zero2), its FSDP units' time in each\n"
         "  state in the last step (zero3, fsdp, hsdp) and its peak bytes per memory category\n";
}

void printInspection(const EventStore& store, std::ostream& out) {
  const RunTrace& meta = store.meta();
  out << "run: " << (meta.strategy.empty() ? "?" : meta.strategy) << ", " << meta.ranks << " ranks, " << meta.params
      << " params, " << store.eventCount() << " events, clock " << (store.modeledClock() ? "modeled" : "measured")
      << ", " << duration(store.endNs() - store.beginNs()) << "\n";
  BucketActivity buckets;
  UnitStates units;
  MemorySeries memory;
  buckets.sync(store);
  units.sync(store);
  memory.sync(store);
  for (int r = 0; r < store.rankCount(); ++r) {
    printBuckets(buckets, r, out);
    printUnits(units, r, store.endNs(), out);
    printPeaks(memory, r, out);
  }
}

int commandInspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    out << inspectUsage();
    return kExitOk;
  }
  if (args.empty()) {
    err << "error: inspect needs a trace file: inspect TRACE.json\n";
    return kExitBadInput;
  }
  for (const std::string& a : args) {
    if (!a.empty() && a[0] == '-') {
      err << "error: inspect takes no flags other than --help, got '" << a << "'\n";
      return kExitBadInput;
    }
  }
  if (args.size() > 1) {
    err << "error: inspect takes one trace file, got a second: '" << args[1] << "'\n";
    return kExitBadInput;
  }
  // One door (input/input_detect.h): inspect reads ShardScope's own traces and
  // names where every other kind opens (a profiler trace fails the trace
  // reader for reasons that would only mislead; a pickle is "not valid JSON").
  const DetectedInput input = detectInput(args[0]);
  switch (input.kind) {
    case InputKind::ShardScopeTrace:
      break;
    case InputKind::Unknown:
      err << "error: " << input.reason << "\n";
      return kExitBadInput;
    case InputKind::KinetoTrace:
    case InputKind::KinetoFolder:
    case InputKind::MemorySnapshot:
    case InputKind::MemoryTimeline:
    case InputKind::FlightRecorderDump:
    case InputKind::FlightRecorderFolder:
      err << "error: " << args[0] << " is " << inputKindText(input.kind)
          << "; inspect reads traces of `shardscope-cli run --trace`: use `shardscope-cli analyze " << args[0]
          << "` or open it in the window (shardscope)\n";
      return kExitBadInput;
  }
  RunTrace trace;
  try {
    trace = readChromeTraceFile(args[0]);
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
  EventStore store;
  store.setFromTrace(std::move(trace));
  printInspection(store, out);
  return kExitOk;
}

}  // namespace shardscope
