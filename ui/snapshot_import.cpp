#include "snapshot_import.h"

#include <QApplication>
#include <QEventLoop>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QProgressDialog>
#include <atomic>
#include <exception>
#include <new>
#include <thread>

#include "inspection.h"
#include "postmortem/postmortem_report.h"

namespace shardscope {

QString SnapshotSet::source() const {
  if (files.size() == 1) return files.front().name;
  QStringList names;
  for (const SnapshotFile& f : files) names << f.name;
  return QObject::tr("%1 memory snapshots (%2)").arg(files.size()).arg(names.join(QStringLiteral(", ")));
}

bool isMemorySnapshotFile(const QString& path) {
  return postmortem::detectPostmortemInput(path.toStdString()) == postmortem::PostmortemInput::MemorySnapshot &&
         QFileInfo(path).isFile();
}

namespace {

struct SnapshotJob {
  std::atomic<bool> cancel{false};
  std::shared_ptr<SnapshotSet> set;
  QString error;
};

void readSnapshotFiles(SnapshotJob& job, const QStringList& paths, const std::function<void(const QString&)>& progress) {
  auto set = std::make_shared<SnapshotSet>();
  try {
    for (int i = 0; i < paths.size() && !job.cancel; ++i) {
      progress(QObject::tr("Reading %1 (%2 of %3)…").arg(QFileInfo(paths[i]).fileName()).arg(i + 1).arg(paths.size()));
      SnapshotFile f;
      f.path = paths[i];
      f.name = QFileInfo(paths[i]).fileName();
      f.rank = i;
      f.snapshot = postmortem::readMemorySnapshotFile(paths[i].toStdString());
      set->files.push_back(std::move(f));
    }
  } catch (const std::bad_alloc&) {
    job.error = QObject::tr("%1: not enough memory to read this snapshot").arg(paths.value(static_cast<int>(set->files.size())));
    return;
  } catch (const std::exception& e) {
    job.error = QString::fromUtf8(e.what());
    return;
  }
  if (!job.cancel) job.set = std::move(set);
}

}  // namespace

std::shared_ptr<const SnapshotSet> readMemorySnapshots(const QStringList& paths, QWidget* parent, QString* error) {
  if (error) error->clear();
  if (paths.isEmpty()) {
    if (error) *error = QObject::tr("no memory snapshot given");
    return nullptr;
  }
  for (const QString& p : paths) {
    if (!isMemorySnapshotFile(p)) {
      if (error)
        *error = QObject::tr("%1 is not a PyTorch memory snapshot (a pickle or JSON with 'segments' and "
                             "'device_traces', as torch.cuda.memory._dump_snapshot writes); several files open "
                             "together only as memory snapshots, one per rank")
                     .arg(p);
      return nullptr;
    }
  }
  auto job = std::make_shared<SnapshotJob>();
  QEventLoop loop;
  QPointer<QProgressDialog> dialog;
  if (parent) {
    dialog = new QProgressDialog(QObject::tr("Reading %1…").arg(QFileInfo(paths.front()).fileName()), QObject::tr("Cancel"),
                                 0, 0, parent);
    dialog->setObjectName(QStringLiteral("snapshotProgress"));
    dialog->setWindowTitle(QObject::tr("Open memory snapshot"));
    dialog->setMinimumDuration(300);
    dialog->setWindowModality(Qt::WindowModal);
    QObject::connect(dialog, &QProgressDialog::canceled, dialog, [job] { job->cancel = true; });
  }
  const QPointer<QProgressDialog> target = dialog;
  const auto progress = [target](const QString& text) {
    QMetaObject::invokeMethod(qApp, [target, text] {
      if (target) target->setLabelText(text);
    }, Qt::QueuedConnection);
  };
  std::thread worker([job, paths, progress, &loop] {
    readSnapshotFiles(*job, paths, progress);
    QMetaObject::invokeMethod(&loop, "quit", Qt::QueuedConnection);
  });
  loop.exec();
  worker.join();
  delete dialog;
  if (!job->set) {
    if (error) *error = job->error;  // empty: cancelled
    return nullptr;
  }
  return job->set;
}

bool showMemorySnapshots(Inspection& inspection, const QStringList& paths, QWidget* parent, QString* error) {
  std::shared_ptr<const SnapshotSet> set = readMemorySnapshots(paths, parent, error);
  if (!set) {
    if (error && error->isEmpty()) *error = QObject::tr("opening %1 was cancelled").arg(paths.join(QStringLiteral(", ")));
    return false;
  }
  inspection.store().clear();
  ShownRun run;
  run.kind = ShownRun::Kind::File;
  run.source = set->source();
  run.label = run.source;
  run.done = run.ok = true;
  run.snapshots = std::move(set);
  inspection.show(std::move(run));
  return true;
}

}  // namespace shardscope
