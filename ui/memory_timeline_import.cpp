#include "memory_timeline_import.h"

#include <QFileInfo>
#include <QObject>
#include <exception>
#include <new>

#include "inspection.h"
#include "off_thread.h"

namespace shardscope {

std::shared_ptr<const MemoryTimelineFile> readMemoryTimelineFile(const QString& path, QWidget* parent, QString* error) {
  if (error) error->clear();
  std::shared_ptr<MemoryTimelineFile> file;
  QString why;
  const bool finished = runOffUiThread(
      parent, QObject::tr("Open PyTorch memory timeline"), QObject::tr("Reading %1…").arg(QFileInfo(path).fileName()),
      QStringLiteral("memoryTimelineProgress"), [&](const std::atomic<bool>& cancel, const OffThreadProgress&) {
        try {
          auto f = std::make_shared<MemoryTimelineFile>();
          f->path = path;
          f->name = QFileInfo(path).fileName();
          f->timeline = kineto::readMemoryTimeline(path.toStdString());
          if (!cancel) file = std::move(f);
        } catch (const std::bad_alloc&) {
          why = QObject::tr("%1: not enough memory to read this memory timeline").arg(path);
        } catch (const std::exception& e) {
          why = QString::fromUtf8(e.what());
        }
      });
  if (!finished) return nullptr;  // cancelled: *error stays empty
  if (!file && error) *error = why;
  return file;
}

bool showMemoryTimeline(Inspection& inspection, const QString& path, QWidget* parent, QString* error) {
  std::shared_ptr<const MemoryTimelineFile> file = readMemoryTimelineFile(path, parent, error);
  if (!file) {
    if (error && error->isEmpty()) *error = QObject::tr("opening %1 was cancelled").arg(path);
    return false;
  }
  inspection.store().clear();
  ShownRun run;
  run.kind = ShownRun::Kind::File;
  run.source = file->name;
  run.label = run.source;
  run.done = run.ok = true;
  run.memory_timeline = std::move(file);
  inspection.show(std::move(run));
  return true;
}

}  // namespace shardscope
