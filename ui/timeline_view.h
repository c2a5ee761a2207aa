// The timeline page: ranks × lanes over time, as in Nsight Systems / Perfetto.
// Owns its QCustomPlot and a TimelineLayout; wheel zooms time only, drag pans,
// double-click or F fits, a click sets the cursor that the memory view follows.
// While a run is live the view follows its end until the user zooms or pans.
#pragma once

#include <QWidget>
#include <optional>

#include "timeline_layout.h"

class QCustomPlot;
class QCPAxisTickerText;
class QCPRange;
class QLabel;
class QMouseEvent;

namespace shardscope {

class EventStore;
class TimelinePlottable;

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(const EventStore* store, QWidget* parent = nullptr);

  // The store gained events (or was reset): update rows and repaint soon.
  void refresh();
  void zoomToFit();
  void setFollowLive(bool follow) { m_follow = follow; }
  void setCursorTime(std::optional<int64_t> ns);  // ns since run start
  std::optional<int64_t> cursorTime() const { return m_cursor; }

  // Writes the timeline as PNG, SVG or PDF (by suffix) at width × height px.
  bool exportFigure(const QString& path, int width, int height, QString* error);

  QCustomPlot* plot() const { return m_plot; }
  const TimelineLayout& layout() const { return m_layout; }
  // Draw items (boxes, folds, markers) of the last paint.
  size_t drawItemCount() const;
  // Tooltip text for a point in plot coordinates, empty when nothing is there.
  QString tooltipAt(const QPoint& pos) const;

 signals:
  void cursorChanged(qint64 ns);  // -1: cursor cleared

 protected:
  void keyPressEvent(QKeyEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void onMouseMove(QMouseEvent* event);
  void onMousePress(QMouseEvent* event);
  void onMouseRelease(QMouseEvent* event);
  void onXRangeChanged(const QCPRange& range);
  void onYRangeChanged(const QCPRange& range);
  void updateRows();
  void updateLegend();
  void fitRows();
  QString eventTooltip(int rank, int32_t event) const;
  QString foldTooltip(const TimelineDrawItem& item) const;

  const EventStore* m_store;
  TimelineLayout m_layout;
  QCustomPlot* m_plot;
  TimelinePlottable* m_timeline;
  QSharedPointer<QCPAxisTickerText> m_rowTicker;
  QSharedPointer<QCPAxisTickerText> m_stepTicker;
  QLabel* m_placeholder;
  std::optional<int64_t> m_cursor;
  QPoint m_pressPos;
  uint32_t m_legendKinds = 0;  // bit per EventKind already in the legend
  bool m_follow = true;
  bool m_clamping = false;
};

}  // namespace shardscope
