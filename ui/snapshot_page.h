// The "snapshot" page: the snapshot view (snapshot_view.h) over the
// Inspection's run, filled when opened PyTorch memory snapshots are shown
// (ShownRun::snapshots), cleared for anything else. It takes the timeline's
// place in the window's centre while a snapshot is on screen.
#pragma once

#include "view_pages.h"

namespace shardscope {

class SnapshotView;

class SnapshotPage : public ViewPage {
  Q_DECLARE_TR_FUNCTIONS(SnapshotPage)
 public:
  SnapshotPage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("snapshot"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  SnapshotView* view() const { return m_view; }
  bool shown() const;  // a snapshot is the run on screen

 private:
  SnapshotView* m_view;
};

}  // namespace shardscope
