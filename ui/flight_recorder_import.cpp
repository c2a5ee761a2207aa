#include "flight_recorder_import.h"

#include <QObject>

#include "file_import.h"
#include "postmortem/postmortem_report.h"

namespace shardscope {

std::shared_ptr<const FlightRecorderSet> importFlightRecorder(const QStringList& inputs, QWidget* parent, QString* error) {
  auto set = std::make_shared<FlightRecorderSet>();
  set->inputs = inputs;
  const QString source = inputs.join(QStringLiteral(", "));
  const FileImport import{source, QObject::tr("Open flight-recorder dumps"), QObject::tr("set of dumps"),
                          QStringLiteral("flightRecorderProgress")};
  const ImportOutcome outcome = importOffThread(import, parent, error, [&](const std::atomic<bool>&, const OffThreadProgress&) {
    std::vector<std::string> paths;
    for (const QString& in : inputs) paths.push_back(in.toStdString());
    set->dumps = postmortem::readFlightRecorderDumps(paths);
  });
  if (outcome == ImportOutcome::Cancelled && error) *error = QObject::tr("opening %1 was cancelled").arg(source);
  if (outcome != ImportOutcome::Read) return nullptr;
  if (set->dumps.empty()) {
    if (error) *error = QObject::tr("%1: no flight-recorder dumps").arg(source);
    return nullptr;
  }
  return set;
}

}  // namespace shardscope
