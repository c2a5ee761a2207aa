// The PyTorch profiler's memory timeline (export_memory_timeline) drawn as
// the profiler's own figure does: a stacked area per category over time
// (Parameter at the bottom, Unknown on top, in kineto::memoryTimelineCategoryName's
// order), one graph per category, its peak marked with the total and the
// category breakdown there in the heading. The numbers are core's
// (kineto::MemoryTimeline); the view only stacks them to draw.
#pragma once

#include <QWidget>
#include <memory>

class QCustomPlot;
class QCPItemStraightLine;
class QLabel;

namespace shardscope {

struct MemoryTimelineFile;

class MemoryTimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryTimelineView(QWidget* parent = nullptr);

  // nullptr clears the view.
  void setTimeline(std::shared_ptr<const MemoryTimelineFile> file);
  bool hasTimeline() const { return m_file != nullptr; }

  QCustomPlot* plot() const { return m_plot; }
  QString headingText() const;
  // The top of the stack at its highest point, in bytes, as drawn (for tests: core's peak total).
  double drawnPeakBytes() const;
  QString figureTitle() const;
  QString figureSubtitle() const;

 private:
  void rebuild();

  std::shared_ptr<const MemoryTimelineFile> m_file;
  QLabel* m_heading;
  QCustomPlot* m_plot;
  QCPItemStraightLine* m_peakLine = nullptr;
};

}  // namespace shardscope
