// Opening PyTorch flight-recorder dumps in the window: a folder of per-rank
// dumps (or several dump files), pickle or JSON, read by core/postmortem and
// shown on the ladder page. Read through the one import harness (file_import.h).
#pragma once

#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

class QWidget;

#include "postmortem/flight_recorder.h"

namespace shardscope {

struct FlightRecorderSet {
  QStringList inputs;                          // what was opened
  std::vector<postmortem::FrRankDump> dumps;   // by rank
};

// Reads the dumps (files and folders; core's detectInput found them dumps:
// RunFiles checks) off the GUI thread (file_import.h); nullptr with *error
// (the reader's message, naming the file and field) on bad input or Cancel.
// parent: the progress dialog's window; nullptr (headless) shows none.
std::shared_ptr<const FlightRecorderSet> importFlightRecorder(const QStringList& inputs, QWidget* parent, QString* error);

}  // namespace shardscope
