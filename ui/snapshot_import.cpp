#include "snapshot_import.h"

#include <QFileInfo>
#include <QObject>
#include <utility>

#include "file_import.h"
#include "inspection.h"

namespace shardscope {

QString SnapshotSet::source() const {
  if (files.size() == 1) return files.front().name;
  QStringList names;
  for (const SnapshotFile& f : files) names << f.name;
  return QObject::tr("%1 memory snapshots (%2)").arg(files.size()).arg(names.join(QStringLiteral(", ")));
}

std::shared_ptr<const SnapshotSet> readMemorySnapshots(const QStringList& paths, QWidget* parent, QString* error) {
  if (error) error->clear();
  if (paths.isEmpty()) {
    if (error) *error = QObject::tr("no memory snapshot given");
    return nullptr;
  }
  auto set = std::make_shared<SnapshotSet>();
  const FileImport import{paths.join(QStringLiteral(", ")), QObject::tr("Open memory snapshot"), QObject::tr("snapshot"),
                          QStringLiteral("snapshotProgress")};
  const ImportOutcome outcome =
      importOffThread(import, parent, error, [&](const std::atomic<bool>& cancel, const OffThreadProgress& progress) {
        for (int i = 0; i < paths.size() && !cancel; ++i) {
          progress(QObject::tr("Reading %1 (%2 of %3)…").arg(QFileInfo(paths[i]).fileName()).arg(i + 1).arg(paths.size()));
          SnapshotFile f;
          f.path = paths[i];
          f.name = QFileInfo(paths[i]).fileName();
          f.rank = i;
          f.snapshot = postmortem::readMemorySnapshotFile(paths[i].toStdString());
          set->files.push_back(std::move(f));
        }
      });
  return outcome == ImportOutcome::Read ? set : nullptr;
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
