// Opening PyTorch flight-recorder dumps in the window: a folder of per-rank
// dumps (or several dump files), pickle or JSON, read by core/postmortem and
// shown on the ladder page. Kept apart from the trace import so each post-mortem
// format adds its own small entry to RunFiles::openTrace.
#pragma once

#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

#include "postmortem/flight_recorder.h"

namespace shardscope {

struct FlightRecorderSet {
  QStringList inputs;                          // what was opened
  std::vector<postmortem::FrRankDump> dumps;   // by rank
};

// A flight-recorder dump file, or a folder whose first file (by name) is one.
// Reads at most one file; false for anything else (a trace, a profiler job).
bool isFlightRecorderInput(const QString& path);

// Reads the dumps (files and folders); nullptr with *error (the reader's
// message, naming the file and field) on bad input.
std::shared_ptr<const FlightRecorderSet> importFlightRecorder(const QStringList& inputs, QString* error);

}  // namespace shardscope
