#include "cli/analyze_command.h"

#include <fstream>
#include <iostream>
#include <new>
#include <ostream>

#include "common/exit_codes.h"
#include "common/errors.h"
#include "cli/analyze_diff.h"
#include "cli/postmortem_analyze.h"
#include "common/output_file.h"
#include "common/units.h"
#include "input/input_detect.h"
#include "kineto/trace_analysis.h"

namespace shardscope {

namespace {

// Reads at least this big say how far along they are.
constexpr uint64_t kProgressMinBytes = 64 * uint64_t(kMiBBytes);

const char* const kAnalyzeUsage = R"(usage: shardscope-cli analyze TRACE|DIR... [--json FILE] [--collectives-csv FILE] [--whole-trace] [--rank-of FILE=R] [--merge-unrelated]
                            [--critical-path-step N] [--critical-path-rank R]
  TRACE         a PyTorch profiler trace (.json or .json.gz), one per rank; DIR: its *.json, *.json.gz
                or a memory snapshot (torch.cuda.memory._dump_snapshot, pickle or JSON), or
                flight-recorder dumps (a DIR of one file per rank, pickle or JSON)
  --json FILE   also write the figures as JSON (stable keys)
  --collectives-csv FILE  also write the collectives matched across ranks as CSV: size, duration,
                algbw, busbw (the group's own size), start spread, last rank, each rank's wait
  --whole-trace every step and exact timestamps, instead of HTA's conventions (last step left
                out when there are two or more; float timestamps rounded to whole microseconds)
  --critical-path-step N  the ProfilerStep#N whose critical path to find (default: the last step
                every rank analysed, HTA's convention)
  --critical-path-rank R  the rank whose path to show in detail (default: the rank whose step ends last)
  --rank-of FILE=R  the rank of a trace without distributedInfo.rank (repeatable)
  --merge-unrelated  merge files that cannot be one job's ranks (different world sizes or
                pg_config group sizes, or profiles started over an hour apart) with a warning
                for each conflict, instead of refusing them
The figures also give step_times (every ProfilerStep#N's duration per rank, the last step
included, with each step's min / median / max across ranks and its slowest rank) and
annotation_breakdown (per user_annotation name: count, CPU time, GPU kernel time of the
kernels launched inside it, innermost = self and with enclosing ones = inclusive).

usage: shardscope-cli analyze --diff CONTROL TEST [--diff-csv FILE] [--json FILE] [--rank-of FILE=R]
  --diff CONTROL TEST  compare two jobs (each a trace file or a folder of per-rank traces) per CPU op
                and per GPU kernel name: count and time on each side and the change, the biggest
                regression (TEST slower) first; ops or kernels on one side only are marked.
                Figures are per profiled step of one rank: each side's totals over its
                ProfilerStep#N spans (an op by its start, a kernel by its launch's start), divided
                by its number of (rank, step) pairs, so a 5-step trace compares fairly with a
                3-step one; a rank without ProfilerStep spans counts whole, as one step
  --diff-csv FILE  also write every row of the diff as CSV (the text shows at most 30 a table)
  --json FILE   with --diff: {"trace_diff": ...}
)";

}  // namespace

int commandAnalyze(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> inputs;
  std::string json_path;
  std::string csv_path;  // --collectives-csv
  kineto::HtaOptions hta;
  kineto::TraceSetOptions load;
  bool diff = false;
  AnalyzeDiffRequest diff_request;  // --diff CONTROL TEST, --diff-csv FILE
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out << kAnalyzeUsage;
      return kExitOk;
    } else if (a == "--json") {
      if (i + 1 >= args.size()) {
        err << "error: --json needs a FILE to write\n";
        return kExitBadInput;
      }
      json_path = args[++i];
    } else if (a == "--collectives-csv") {
      if (i + 1 >= args.size()) {
        err << "error: --collectives-csv needs a FILE to write\n";
        return kExitBadInput;
      }
      csv_path = args[++i];
    } else if (a == "--diff") {
      const auto side = [&](size_t k) { return k < args.size() && !(args[k].size() > 1 && args[k][0] == '-'); };
      if (!side(i + 1) || !side(i + 2)) {
        err << "error: --diff needs CONTROL and TEST, each a trace file or a folder of per-rank traces"
            << (side(i + 1) ? ", got only CONTROL '" + args[i + 1] + "'" : std::string()) << "\n";
        return kExitBadInput;
      }
      diff = true;
      diff_request.control = args[++i];
      diff_request.test = args[++i];
    } else if (a == "--diff-csv") {
      if (i + 1 >= args.size()) {
        err << "error: --diff-csv needs a FILE to write\n";
        return kExitBadInput;
      }
      diff_request.csv_path = args[++i];
    } else if (a == "--whole-trace") {
      hta.whole_trace = true;
    } else if (a == "--critical-path-step" || a == "--critical-path-rank") {
      const std::string v = i + 1 < args.size() ? args[++i] : "";
      const bool digits = !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
      const long long n = digits ? std::stoll(v) : -1;
      if (n < 0 || (a == "--critical-path-rank" && n > 1'000'000'000)) {
        err << "error: " << a << " takes a non-negative integer (" << (a == "--critical-path-step" ? "a ProfilerStep number" : "a rank")
            << "), got '" << v << "'\n";
        return kExitBadInput;
      }
      if (a == "--critical-path-step") hta.critical_path_step = n;
      else hta.critical_path_rank = static_cast<int>(n);
    } else if (a == "--merge-unrelated") {
      load.merge_unrelated = true;
    } else if (a == "--rank-of") {
      const std::string spec = i + 1 < args.size() ? args[++i] : "";
      const size_t eq = spec.rfind('=');
      int rank = -1;
      if (eq != std::string::npos && eq > 0 && eq + 1 < spec.size() &&
          spec.find_first_not_of("0123456789", eq + 1) == std::string::npos && spec.size() - eq - 1 <= 9)
        rank = std::stoi(spec.substr(eq + 1));
      if (rank < 0) {
        err << "error: --rank-of takes FILE=R with R a non-negative integer, got '" << spec << "'\n";
        return kExitBadInput;
      }
      load.rank_of[spec.substr(0, eq)] = rank;
    } else if (a.size() > 1 && a[0] == '-') {
      err << "error: analyze does not know the flag '" << a << "' (see shardscope-cli analyze --help)\n";
      return kExitBadInput;
    } else {
      inputs.push_back(a);
    }
  }
  if (diff) {
    if (!inputs.empty()) {
      err << "error: --diff compares CONTROL with TEST and takes no other trace (got '" << inputs.front()
          << "'); analyze it on its own without --diff\n";
      return kExitBadInput;
    }
    if (!csv_path.empty() || hta.whole_trace) {
      err << "error: " << (hta.whole_trace ? "--whole-trace" : "--collectives-csv")
          << " does not apply to --diff (the diff reads every step at exact timestamps; use --diff-csv FILE for "
             "its rows)\n";
      return kExitBadInput;
    }
    diff_request.json_path = json_path;
    diff_request.load = load;
    diff_request.load.progress = [&err](const std::string& line) { err << line << "\n"; };
    diff_request.load.progress_min_bytes = kProgressMinBytes;
    return analyzeDiff(diff_request, out, err);
  }
  if (!diff_request.csv_path.empty()) {
    err << "error: --diff-csv needs --diff CONTROL TEST\n";
    return kExitBadInput;
  }
  if (inputs.empty()) {
    err << "error: analyze needs at least one trace file or folder (see shardscope-cli analyze --help)\n";
    return kExitBadInput;
  }
  // One door (input/input_detect.h): each input's kind says which reader takes it.
  std::vector<PostmortemFile> postmortem_files;
  size_t traces = 0;
  for (const std::string& in : inputs) {
    const DetectedInput input = detectInput(in);
    switch (input.kind) {
      case InputKind::Unknown:
        err << "error: " << input.reason << "\n";
        return kExitBadInput;
      case InputKind::KinetoTrace:
      case InputKind::KinetoFolder:
      case InputKind::ShardScopeTrace:  // Chrome JSON: the profiler-trace reader names what it lacks
        ++traces;
        break;
      case InputKind::MemorySnapshot:
      case InputKind::MemoryTimeline:
      case InputKind::FlightRecorderDump:
      case InputKind::FlightRecorderFolder:
        postmortem_files.push_back({in, input.kind});
        break;
    }
  }
  if (traces > 0 && !postmortem_files.empty()) {
    err << "error: analyze takes profiler traces or post-mortem files (memory snapshots, flight-recorder dumps), "
           "not both at once\n";
    return kExitBadInput;
  }
  if (!postmortem_files.empty()) {
    if (!csv_path.empty()) {
      err << "error: --collectives-csv takes profiler traces (a job's per-rank .json / .json.gz), not memory "
             "snapshots or flight-recorder dumps\n";
      return kExitBadInput;
    }
    return analyzePostmortem(postmortem_files, json_path, out, err);
  }
  load.progress = [&err](const std::string& line) { err << line << "\n"; };
  load.progress_min_bytes = kProgressMinBytes;
  try {
    const kineto::TraceSet set = kineto::loadTraceSet(inputs, load);
    for (const std::string& note : set.notes) err << note << "\n";
    const kineto::JobAnalysis job = kineto::analyzeTraceSet(set, hta);
    kineto::printAnalysisText(job, set, out);
    if (!json_path.empty()) {
      try {
        writeOutputFile(json_path, [&](std::ostream& f) { kineto::writeAnalysisJson(job, set, f); });
      } catch (const RunError& e) {
        err << "error: --json " << e.what() << "\n";
        return kExitOutputFailed;
      }
      out << "figures written to " << json_path << "\n";
    }
    if (!csv_path.empty()) {
      try {
        writeOutputFile(csv_path, [&](std::ostream& f) { kineto::writeCollectiveSkewCsv(job.skew, f); });
      } catch (const RunError& e) {
        err << "error: --collectives-csv " << e.what() << "\n";
        return kExitOutputFailed;
      }
      out << "collectives written to " << csv_path << "\n";
    }
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {  // the readers name the file and the size where they can
    err << "error: out of memory reading the traces: they need more than this process can get (free memory, or "
           "its limit: ulimit -v); analyze fewer files at once\n";
    return kExitRunFailed;
  }
  return kExitOk;
}

}  // namespace shardscope
