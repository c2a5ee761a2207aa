#include "cli/analyze_diff.h"

#include <new>
#include <ostream>

#include "common/errors.h"
#include "common/exit_codes.h"
#include "common/output_file.h"
#include "kineto/trace_diff.h"

namespace shardscope {

int analyzeDiff(const AnalyzeDiffRequest& r, std::ostream& out, std::ostream& err) {
  try {
    std::vector<std::string> notes;
    const kineto::TraceDiff diff = kineto::loadTraceDiff(r.control, r.test, r.load, &notes);
    for (const std::string& note : notes) err << note << "\n";
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
