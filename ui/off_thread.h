// Runs a slow read off the GUI thread: the work runs on a worker thread while
// the GUI thread keeps painting (a local event loop), with a progress dialog
// whose Cancel sets the flag the work polls. The file import harness
// (file_import.h: every file the window opens) and the trace diff run on it.
#pragma once

#include <QString>
#include <atomic>
#include <functional>

class QWidget;

namespace shardscope {

// Progress lines may come from any thread: they are queued onto the GUI thread.
using OffThreadProgress = std::function<void(const QString&)>;
using OffThreadWork = std::function<void(const std::atomic<bool>& cancel, const OffThreadProgress& progress)>;

// Returns once `work` has returned; false when the user pressed Cancel (work
// should then stop early; what it wrote is the caller's to ignore). parent:
// the dialog's window, nullptr (headless) shows none. `object_name` names the
// dialog for tests; it appears after 300 ms, so quick reads flash nothing.
bool runOffUiThread(QWidget* parent, const QString& title, const QString& label, const QString& object_name,
                    const OffThreadWork& work);

}  // namespace shardscope
