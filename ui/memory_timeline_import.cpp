#include "memory_timeline_import.h"

#include <QFileInfo>
#include <QObject>

#include "file_import.h"
#include "inspection.h"

namespace shardscope {

std::shared_ptr<const MemoryTimelineFile> readMemoryTimelineFile(const QString& path, QWidget* parent, QString* error) {
  auto file = std::make_shared<MemoryTimelineFile>();
  const FileImport import{path, QObject::tr("Open PyTorch memory timeline"), QObject::tr("memory timeline"),
                          QStringLiteral("memoryTimelineProgress")};
  const ImportOutcome outcome = importOffThread(import, parent, error, [&](const std::atomic<bool>&, const OffThreadProgress&) {
    file->path = path;
    file->name = QFileInfo(path).fileName();
    file->timeline = kineto::readMemoryTimeline(path.toStdString());
  });
  return outcome == ImportOutcome::Read ? file : nullptr;
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
