// Opening a trace: a PyTorch profiler job (a folder of per-rank Kineto
// traces, one .json or .json.gz; core/kineto turns it into a RunTrace the
// views show) or a trace ShardScope wrote, each read off the GUI thread
// through the one import harness (file_import.h).
#pragma once

#include <QString>
#include <memory>
#include <optional>

#include "trace/run_trace.h"

class QWidget;

namespace shardscope {

namespace kineto {
struct JobAnalysis;
}

// nullopt with *error on a bad file, with *error empty when the user cancelled.
// parent: the progress dialog's window; nullptr (headless) shows none.
// analysis: when given, also what `analyze` computes for the job (HTA's metrics and tables).
std::optional<RunTrace> importKinetoJob(const QString& path, QWidget* parent, QString* error,
                                        std::shared_ptr<const kineto::JobAnalysis>* analysis = nullptr);

// A trace ShardScope wrote (trace/chrome_trace_reader.h), read the same way.
std::optional<RunTrace> importShardScopeTrace(const QString& path, QWidget* parent, QString* error);

}  // namespace shardscope
