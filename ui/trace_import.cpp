#include "trace_import.h"

#include <QApplication>
#include <QEventLoop>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QProgressDialog>
#include <QWidget>
#include <atomic>
#include <exception>
#include <memory>
#include <new>
#include <thread>

#include "kineto/kineto_run_trace.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"

namespace shardscope {

namespace {

// What the worker hands back: the trace or the error, and its progress lines.
struct ImportJob {
  std::atomic<bool> cancel{false};
  std::optional<RunTrace> trace;
  std::shared_ptr<const kineto::JobAnalysis> analysis;
  QString error;
  bool cancelled = false;
};

void runImport(ImportJob& job, const std::string& path, const std::function<void(const std::string&)>& progress) {
  try {
    kineto::TraceSetOptions options;
    options.progress = progress;
    options.cancelled = [&job] { return job.cancel.load(); };
    // One file without distributedInfo.rank is rank 0 there, as in `analyze`.
    kineto::TraceSet set = kineto::loadTraceSet({path}, options);
    if (job.cancel) throw kineto::CancelledLoad();
    // What `analyze` reports, while the set is whole (importedRunTrace consumes
    // it); the selections' event lists index that set, so they are dropped.
    kineto::JobAnalysis analysis = kineto::analyzeTraceSet(set, {});
    for (kineto::RankAnalysis& r : analysis.ranks) r.selection = {};
    job.analysis = std::make_shared<const kineto::JobAnalysis>(std::move(analysis));
    job.trace = kineto::importedRunTrace(std::move(set));
  } catch (const kineto::CancelledLoad&) {
    job.cancelled = true;
  } catch (const std::bad_alloc&) {
    job.error = QObject::tr("%1: not enough memory to read this trace").arg(QString::fromStdString(path));
  } catch (const std::exception& e) {
    job.error = QString::fromUtf8(e.what());
  }
}

}  // namespace

std::optional<RunTrace> importKinetoJob(const QString& path, QWidget* parent, QString* error,
                                        std::shared_ptr<const kineto::JobAnalysis>* analysis) {
  auto job = std::make_shared<ImportJob>();
  QEventLoop loop;
  QPointer<QProgressDialog> dialog;
  if (parent) {
    dialog = new QProgressDialog(QObject::tr("Reading %1…").arg(QFileInfo(path).fileName()), QObject::tr("Cancel"), 0, 0,
                                 parent);
    dialog->setObjectName(QStringLiteral("importProgress"));
    dialog->setWindowTitle(QObject::tr("Open PyTorch profiler trace"));
    dialog->setMinimumDuration(300);
    dialog->setWindowModality(Qt::WindowModal);
    QObject::connect(dialog, &QProgressDialog::canceled, dialog, [job] { job->cancel = true; });
  }
  const QPointer<QProgressDialog> target = dialog;
  // Progress lines come from the parser's threads: queued onto the GUI thread.
  const auto progress = [target](const std::string& line) {
    const QString text = QString::fromStdString(line);
    QMetaObject::invokeMethod(qApp, [target, text] {
      if (target) target->setLabelText(text);
    }, Qt::QueuedConnection);
  };
  std::thread worker([job, p = path.toStdString(), progress, &loop] {
    runImport(*job, p, progress);
    QMetaObject::invokeMethod(&loop, "quit", Qt::QueuedConnection);
  });
  loop.exec();
  worker.join();
  delete dialog;
  if (job->cancelled) {
    if (error) error->clear();
    return std::nullopt;
  }
  if (!job->trace) {
    if (error) *error = job->error;
    return std::nullopt;
  }
  if (analysis) *analysis = job->analysis;
  return std::move(job->trace);
}

}  // namespace shardscope
