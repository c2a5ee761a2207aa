// Opening the PyTorch profiler's memory timeline (export_memory_timeline:
// .json, .json.gz or raw.json.gz; core/kineto/memory_timeline.h) in the
// window: read off the GUI thread with a progress dialog and Cancel, then
// shown as the run on screen (ShownRun::memory_timeline), whose page draws it.
#pragma once

#include <QString>
#include <memory>

#include "kineto/memory_timeline.h"

class QWidget;

namespace shardscope {

class Inspection;

struct MemoryTimelineFile {
  QString path, name;
  kineto::MemoryTimeline timeline;
};

// nullptr with *error on a bad file (the core reader's message), or with
// *error empty when the user cancelled. parent: the dialog's window, or nullptr.
std::shared_ptr<const MemoryTimelineFile> readMemoryTimelineFile(const QString& path, QWidget* parent, QString* error);

// Reads it and shows it in `inspection` (the store emptied); false with *error.
bool showMemoryTimeline(Inspection& inspection, const QString& path, QWidget* parent, QString* error);

}  // namespace shardscope
