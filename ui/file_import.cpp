#include "file_import.h"

#include <QFileInfo>
#include <QObject>
#include <exception>
#include <new>

namespace shardscope {

ImportOutcome importOffThread(const FileImport& import, QWidget* parent, QString* error, const OffThreadWork& read) {
  if (error) error->clear();
  QString why;
  bool failed = false;
  const QString label = QObject::tr("Reading %1…").arg(QFileInfo(import.source.section(QStringLiteral(", "), 0, 0)).fileName());
  const bool finished = runOffUiThread(parent, import.title, label, import.object_name,
                                       [&](const std::atomic<bool>& cancel, const OffThreadProgress& progress) {
                                         try {
                                           read(cancel, progress);
                                         } catch (const std::bad_alloc&) {
                                           failed = true;
                                           why = QObject::tr("%1: not enough memory to read this %2")
                                                     .arg(import.source, import.what);
                                         } catch (const std::exception& e) {
                                           failed = true;
                                           why = QString::fromUtf8(e.what());
                                         }
                                       });
  if (!finished) return ImportOutcome::Cancelled;  // a reader stopped by the flag throws too: not its error
  if (failed) {
    if (error) *error = why;
    return ImportOutcome::Failed;
  }
  return ImportOutcome::Read;
}

}  // namespace shardscope
