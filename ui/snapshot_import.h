// Opening PyTorch memory snapshots (torch.cuda.memory._dump_snapshot, pickle
// or JSON; told apart from traces by their content): one file, or several
// opened together, one per rank. Read off the GUI thread (a progress dialog
// with Cancel when it takes long), then shown as the Inspection's run, whose
// store stays empty: the "snapshot" page draws them.
#pragma once

#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

#include "postmortem/memory_snapshot.h"

class QWidget;

namespace shardscope {

class Inspection;

struct SnapshotFile {
  QString path;
  QString name;  // the file's name, for titles
  int rank = 0;  // its place among the files opened together (from 0)
  postmortem::MemorySnapshot snapshot;
};

struct SnapshotSet {
  std::vector<SnapshotFile> files;  // one per rank, in the order given
  QString source() const;           // "snap.pickle" or "4 memory snapshots (rank0.pickle, …)"
};

// Reads the files (each one core's detectInput found a memory snapshot:
// RunFiles checks); nullptr with *error (the reader's one line, naming the
// file and the field) on a bad file, with *error empty when the user cancelled.
// parent: the progress dialog's window; nullptr (headless) shows none.
std::shared_ptr<const SnapshotSet> readMemorySnapshots(const QStringList& paths, QWidget* parent, QString* error);

// Reads the files and shows them (the store emptied, a File run whose
// `snapshots` the page draws); false with *error as above.
bool showMemorySnapshots(Inspection& inspection, const QStringList& paths, QWidget* parent, QString* error);

}  // namespace shardscope
