// The "memory-timeline" page: the profiler's memory timeline (memory_timeline_view.h)
// of the run on screen when one was opened (ShownRun::memory_timeline), cleared
// for anything else. Like a snapshot, it takes the timeline's place in the
// window's centre while it is shown.
#pragma once

#include "view_pages.h"

namespace shardscope {

class MemoryTimelineView;

class MemoryTimelinePage : public ViewPage {
  Q_DECLARE_TR_FUNCTIONS(MemoryTimelinePage)
 public:
  MemoryTimelinePage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("memory-timeline"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  MemoryTimelineView* view() const { return m_view; }
  bool shown() const;  // a memory timeline is the run on screen

 private:
  MemoryTimelineView* m_view;
};

}  // namespace shardscope
