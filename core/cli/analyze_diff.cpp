#include "cli/analyze_diff.h"

#include <algorithm>
#include <new>
#include <ostream>

#include "common/errors.h"
#include "common/exit_codes.h"
#include "common/output_file.h"
#include "kineto/trace_diff.h"

namespace shardscope {

namespace {

// One side's traces; a ConfigError names the side and the path the user gave.
kineto::TraceSet loadDiffSide(const char* side, const std::string& path, const kineto::TraceSetOptions& base) {
  try {
    kineto::TraceSetOptions load = base;
    const std::vector<std::string> files = kineto::expandTraceInputs({path});
    load.rank_of.clear();
    for (const auto& [file, rank] : base.rank_of)
      if (std::find(files.begin(), files.end(), file) != files.end()) load.rank_of[file] = rank;
    return kineto::loadTraceSet({path}, load);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("--diff ") + side + ": " + e.what());
  }
}

}  // namespace

int analyzeDiff(const AnalyzeDiffRequest& r, std::ostream& out, std::ostream& err) {
  try {
    for (const auto& [file, rank] : r.load.rank_of) {
      const auto in = [&](const std::string& side) {
        const std::vector<std::string> files = kineto::expandTraceInputs({side});
        return std::find(files.begin(), files.end(), file) != files.end();
      };
      if (!in(r.control) && !in(r.test))
        throw ConfigError("--rank-of " + file + "=" + std::to_string(rank) + ": that file is in neither CONTROL (" +
                          r.control + ") nor TEST (" + r.test + ")");
    }
    const kineto::TraceSet control = loadDiffSide("CONTROL", r.control, r.load);
    for (const std::string& note : control.notes) err << "CONTROL " << note << "\n";
    const kineto::TraceSet test = loadDiffSide("TEST", r.test, r.load);
    for (const std::string& note : test.notes) err << "TEST " << note << "\n";
    kineto::TraceDiff diff = kineto::computeTraceDiff(control, test);
    diff.control.inputs = {r.control};
    diff.test.inputs = {r.test};
    kineto::printTraceDiffText(diff, out);
    if (!r.json_path.empty()) {
      try {
        writeOutputFile(r.json_path, [&](std::ostream& f) {
          f << "{\n  \"trace_diff\": ";
          kineto::writeTraceDiffJson(diff, f);
          f << "\n}\n";
        });
      } catch (const RunError& e) {
        err << "error: --json " << e.what() << "\n";
        return kExitOutputFailed;
      }
      out << "figures written to " << r.json_path << "\n";
    }
    if (!r.csv_path.empty()) {
      try {
        writeOutputFile(r.csv_path, [&](std::ostream& f) { kineto::writeTraceDiffCsv(diff, f); });
      } catch (const RunError& e) {
        err << "error: --diff-csv " << e.what() << "\n";
        return kExitOutputFailed;
      }
      out << "diff rows written to " << r.csv_path << "\n";
    }
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    err << "error: out of memory reading the traces of --diff: they need more than this process can get; compare "
           "fewer ranks (a folder of fewer files)\n";
    return kExitRunFailed;
  }
  return kExitOk;
}

}  // namespace shardscope
