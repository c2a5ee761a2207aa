// The one import harness: every file the window opens (profiler traces,
// memory snapshots, memory timelines, flight-recorder dumps) is read by its
// core reader off the GUI thread (off_thread.h: a progress dialog with Cancel
// after 300 ms), and whatever the reader throws becomes one error line. Which
// reader runs is RunFiles' one switch over core's detectInput (run_files.cpp).
#pragma once

#include <QString>

#include "off_thread.h"

class QWidget;

namespace shardscope {

struct FileImport {
  QString source;       // what is read, for messages: a path, or paths joined by ", "
  QString title;        // the dialog's title: "Open PyTorch profiler trace"
  QString what;         // for "not enough memory to read this %1": "trace"
  QString object_name;  // the dialog's, for tests: "importProgress"
};

enum class ImportOutcome { Read, Failed, Cancelled };

// Runs read(cancel, progress) off the GUI thread. read throws on a bad file
// (ConfigError and the readers' errors: their message is the error;
// bad_alloc: "SOURCE: not enough memory to read this WHAT"). Failed with
// *error set, Cancelled with *error empty (what read stored is the caller's
// to drop). parent: the dialog's window; nullptr (headless) shows none.
ImportOutcome importOffThread(const FileImport& import, QWidget* parent, QString* error, const OffThreadWork& read);

}  // namespace shardscope
