#include "trace_import.h"

#include <QObject>
#include <utility>

#include "file_import.h"
#include "kineto/kineto_run_trace.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"
#include "trace/chrome_trace_reader.h"

namespace shardscope {

std::optional<RunTrace> importKinetoJob(const QString& path, QWidget* parent, QString* error,
                                        std::shared_ptr<const kineto::JobAnalysis>* analysis) {
  std::optional<RunTrace> trace;
  std::shared_ptr<const kineto::JobAnalysis> figures;
  const FileImport import{path, QObject::tr("Open PyTorch profiler trace"), QObject::tr("trace"),
                          QStringLiteral("importProgress")};
  const ImportOutcome outcome =
      importOffThread(import, parent, error, [&](const std::atomic<bool>& cancel, const OffThreadProgress& progress) {
        kineto::TraceSetOptions options;
        options.progress = [&progress](const std::string& line) { progress(QString::fromStdString(line)); };
        options.cancelled = [&cancel] { return cancel.load(); };
        // One file without distributedInfo.rank is rank 0 there, as in `analyze`.
        kineto::TraceSet set = kineto::loadTraceSet({path.toStdString()}, options);
        if (cancel) return;
        // What `analyze` reports, while the set is whole (importedRunTrace consumes
        // it); the selections' event lists index that set, so they are dropped.
        kineto::JobAnalysis job = kineto::analyzeTraceSet(set, {});
        for (kineto::RankAnalysis& r : job.ranks) r.selection = {};
        figures = std::make_shared<const kineto::JobAnalysis>(std::move(job));
        trace = kineto::importedRunTrace(std::move(set));
      });
  if (outcome != ImportOutcome::Read || !trace) return std::nullopt;
  if (analysis) *analysis = std::move(figures);
  return trace;
}

std::optional<RunTrace> importShardScopeTrace(const QString& path, QWidget* parent, QString* error) {
  std::optional<RunTrace> trace;
  const FileImport import{path, QObject::tr("Open trace"), QObject::tr("trace"), QStringLiteral("importProgress")};
  const ImportOutcome outcome = importOffThread(import, parent, error, [&](const std::atomic<bool>&, const OffThreadProgress&) {
    trace = readChromeTraceFile(path.toStdString());
  });
  return outcome == ImportOutcome::Read ? std::move(trace) : std::nullopt;
}

}  // namespace shardscope
