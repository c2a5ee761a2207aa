#include "flight_recorder_import.h"

#include <QObject>
#include <new>

#include "postmortem/postmortem_report.h"

namespace shardscope {

bool isFlightRecorderInput(const QString& path) {
  // Core's sniffing, as `analyze` does: a profiler trace's distributedInfo names
  // pg_config too, so a dump is told by its own keys, not by that one.
  return postmortem::detectPostmortemInput(path.toStdString()) == postmortem::PostmortemInput::FlightRecorder;
}

std::shared_ptr<const FlightRecorderSet> importFlightRecorder(const QStringList& inputs, QString* error) {
  auto set = std::make_shared<FlightRecorderSet>();
  set->inputs = inputs;
  std::vector<std::string> paths;
  for (const QString& in : inputs) paths.push_back(in.toStdString());
  try {
    set->dumps = postmortem::readFlightRecorderDumps(paths);
  } catch (const std::bad_alloc&) {
    if (error) *error = QObject::tr("%1: not enough memory to read these dumps").arg(inputs.join(QStringLiteral(", ")));
    return nullptr;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return nullptr;
  }
  if (set->dumps.empty()) {
    if (error) *error = QObject::tr("%1: no flight-recorder dumps").arg(inputs.join(QStringLiteral(", ")));
    return nullptr;
  }
  return set;
}

}  // namespace shardscope
