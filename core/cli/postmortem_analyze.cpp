// analyze for post-mortem files: every snapshot (and every profiler memory
// timeline) gets its own report; all flight-recorder dumps given are one job,
// diagnosed together.
#include "cli/postmortem_analyze.h"

#include <ostream>

#include "common/errors.h"
#include "common/exit_codes.h"
#include "common/output_file.h"
#include "kineto/memory_timeline.h"
#include "postmortem/postmortem_report.h"

namespace shardscope {

int analyzePostmortem(const std::vector<PostmortemFile>& inputs, const std::string& json_path, std::ostream& out,
                      std::ostream& err) {
  using namespace postmortem;
  Json report = Json::object();
  try {
    std::vector<std::string> dumps;
    Json snapshots = Json::array(), timelines = Json::array();
    for (const PostmortemFile& in : inputs) {
      switch (in.kind) {
        case InputKind::MemoryTimeline: {  // the profiler's export_memory_timeline
          const kineto::MemoryTimeline t = kineto::readMemoryTimeline(in.path);
          kineto::printMemoryTimelineText(t, in.path, out);
          timelines.push_back(kineto::memoryTimelineJson(t, in.path));
          break;
        }
        case InputKind::FlightRecorderDump:
        case InputKind::FlightRecorderFolder:
          dumps.push_back(in.path);
          break;
        case InputKind::MemorySnapshot: {
          const MemorySnapshot s = readMemorySnapshotFile(in.path);
          printMemorySnapshotText(s, in.path, out);
          snapshots.push_back(memorySnapshotJson(s, in.path));
          break;
        }
        case InputKind::Unknown:  // analyze_command.cpp hands none of these here
        case InputKind::KinetoTrace:
        case InputKind::KinetoFolder:
        case InputKind::ShardScopeTrace:
          break;
      }
    }
    if (snapshots.size() == 1) report["memory_snapshot"] = snapshots.front();
    else if (!snapshots.empty()) report["memory_snapshots"] = snapshots;
    if (timelines.size() == 1) report["memory_timeline"] = timelines.front();
    else if (!timelines.empty()) report["memory_timelines"] = timelines;
    if (!dumps.empty()) {
      const FrDiagnosis d = diagnoseFlightRecorder(readFlightRecorderDumps(dumps));
      printFlightRecorderText(d, out);
      report["flight_recorder"] = flightRecorderJson(d);
    }
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
  if (!json_path.empty()) {
    try {
      writeOutputFile(json_path, [&](std::ostream& f) { f << report.dump(2, ' ', false, Json::error_handler_t::replace) << "\n"; });
    } catch (const RunError& e) {
      err << "error: --json " << e.what() << "\n";
      return kExitOutputFailed;
    }
    out << "figures written to " << json_path << "\n";
  }
  return kExitOk;
}

}  // namespace shardscope
