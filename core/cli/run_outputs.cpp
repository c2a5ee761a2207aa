#include "cli/run_outputs.h"

#include "analysis/run_summary.h"
#include "common/errors.h"
#include "trace/chrome_trace_writer.h"

namespace shardscope {

bool writeOutputs(const Run& run, const RunResult* result, const RunConfig& config, std::ostream& out,
                  std::ostream& err) {
  bool ok = true;
  if (!config.trace_path.empty()) {
    try {
      RunTrace trace = run.trace();
      if (result && result->interrupted) {
        trace.interrupted_by = result->interrupted->by;
        trace.interrupted_at_step = result->interrupted->at_step;
      }
      writeChromeTraceFile(trace, config.trace_path);
      if (result) out << "trace written to " << config.trace_path << " (open in ui.perfetto.dev or shardscope)\n";
      else err << "trace of the stopped run written to " << config.trace_path << "\n";
    } catch (const std::exception& e) {
      err << "error: --trace " << failureText(e) << "\n";  // "PATH: what failed"
      ok = false;
    }
  }
  if (result && !config.summary_path.empty()) {
    try {
      writeSummaryFile(*result, config.summary_path);
      out << "summary written to " << config.summary_path << "\n";
    } catch (const std::exception& e) {
      err << "error: --summary " << failureText(e) << "\n";
      ok = false;
    }
  }
  return ok;
}

}  // namespace shardscope
