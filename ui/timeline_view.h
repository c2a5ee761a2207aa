// The timeline page: ranks × lanes over time, as in Nsight Systems / Perfetto.
// Wheel zooms time only, drag pans, double-click or F fits, a click sets the
// cursor every view follows, and dragging the cursor line scrubs it. A click
// on an op also selects it: arrows then join it to the ops it waited on or
// was launched by, and to the ops that wait on it (ready → launch, gather →
// compute, backward → reduce-scatter). Shift+drag selects a time range
// (its length shown on the band; Z zooms to it; a timeline figure covers it).
// Rows never shrink below a legible height: past that they scroll (scroll
// bar, Shift+wheel, wheel over the labels).
// While a run is live the view follows its steps until the user zooms or pans.
#pragma once

#include <QStringList>
#include <QWidget>
#include <optional>
#include <utility>
#include <vector>

#include "inspect/collective_peers.h"
#include "inspect/stuck_collectives.h"
#include "inspect/timeline_layout.h"

class QCustomPlot;
class QCPAbstractItem;
class QCPAxisTickerText;
class QCPRange;
class QLabel;
class QMouseEvent;
class QScrollBar;

namespace shardscope {

class EventStore;
class TimelinePlottable;

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(const EventStore* store, QWidget* parent = nullptr);

  // The store gained events (or was reset): update rows and repaint soon.
  void refresh();
  void zoomToFit();    // every op, setup included
  void zoomToSteps();  // from the first step_begin to the end: the training itself
  void setFollowLive(bool follow) { m_follow = follow; }
  void setCursorTime(std::optional<int64_t> ns);  // ns since run start
  std::optional<int64_t> cursorTime() const { return m_cursor; }

  // Writes the timeline as PNG, SVG or PDF (by suffix) at width × height px,
  // in the teaching theme with an optional title and subtitle.
  bool exportFigure(const QString& path, int width, int height, QString* error, const QString& title = {},
                    const QString& subtitle = {});
  // Pixels from x (plot coordinates) to the cursor line; -1 without a cursor.
  double cursorDistance(int x) const;

  QCustomPlot* plot() const { return m_plot; }
  const TimelineLayout& layout() const { return m_layout; }
  // Draw items (boxes, folds, markers) of the last paint.
  size_t drawItemCount() const;
  // The tooltip of events(rank)[event].
  QString eventTooltip(int rank, int32_t event) const;
  // The selected collective's ops on its group's members (itself included; empty: none).
  const std::vector<CollectivePeer>& selectedPeers() const { return m_peers; }
  // Tooltip text for a point in plot coordinates, empty when nothing is there.
  QString tooltipAt(const QPoint& pos) const;
  // Selects events(rank)[index] and draws its dependency arrows (index < 0 clears).
  void selectEvent(int rank, int32_t index);
  std::optional<std::pair<int, int32_t>> selectedEvent() const { return m_selected; }
  int arrowCount() const { return static_cast<int>(m_arrows.size()); }
  // The selected time range (ns since run start), if any.
  std::optional<std::pair<int64_t, int64_t>> selectedRange() const { return m_range; }
  void setSelectedRange(std::optional<std::pair<int64_t, int64_t>> range);
  void zoomToSelection();
  // A hung run's stuck collectives, as drawn (hatched red to the stop).
  const std::vector<StuckCollective>& stuckCollectives() const;
  // Off while a run is live (its store lacks the collectives in flight); the next refresh applies it.
  void setHangShown(bool shown) { m_hangShown = shown; }
  // An imported PyTorch trace's CPU-thread rows: shown (default) or collapsed (key H).
  void setShowCpuThreads(bool show);
  // A row's name: the lane ("compute"), or an imported trace's track ("stream 7 · NCCL").
  QString rowTitle(int rank, Lane lane) const;
  // Each class of identical ranks (findRankSymmetry: rank 0's, or a
  // pipeline stage's) as one band "ranks 1–7: same as rank 0" after its first
  // rank's rows, for the classes of at least `min_ranks` ranks (the first
  // included); false: every rank its rows. Returns whether ranks are collapsed.
  // Double-click or right-click on a band expands them.
  bool setCollapseIdenticalRanks(bool collapse, int min_ranks = 4);
  bool ranksCollapsed() const { return !m_layout.folds().empty(); }
  // The bands' texts ("ranks 1–7: same as rank 0"; a pipeline's name their
  // stage), one line each, while collapsed; else "".
  QString collapsedBandText() const;
  // The kinds the legend names, in its order (every kind TimelinePlottable::drawsKind).
  static std::vector<EventKind> legendOrder();
  // The legend's entries as shown.
  QStringList legendNames() const;
  // The single event at a point (a marker or an unfolded box), if any.
  std::optional<std::pair<int, int32_t>> eventAt(const QPoint& pos) const;
  // An imported job's critical path: the ops of `rank` on it (kineto::criticalPathOps, the same
  // indices as its events' Event::op), outlined while shown (key P toggles; off by default).
  // Empty ops: none (the key does nothing).
  void setCriticalPath(int rank, std::vector<int64_t> ops);
  void setCriticalPathShown(bool shown);
  bool criticalPathShown() const { return m_pathShown; }
  bool hasCriticalPath() const { return !m_pathOps.empty(); }
  // The ops outlined now (each op's spans on the path's rank), ascending, each once.
  const std::vector<int64_t>& highlightedOps() const { return m_pathDrawn; }

 signals:
  void cursorChanged(qint64 ns);  // -1: cursor cleared
  void rangeChanged();            // selectedRange() changed
  void rankClicked(int rank);     // an op of this rank was clicked

 protected:
  void keyPressEvent(QKeyEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;
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
  void syncScrollBar();
  void scrollRows(double delta);  // y units; positive scrolls down
  QString foldTooltip(const TimelineDrawItem& item) const;
  void updateArrows();
  void updatePathHighlight();
  void updateRangeBand();
  bool figureHasFolds(int width);
  // The band under pos (its fold's index), or -1.
  int collapsedBandAt(const QPoint& pos) const;
  QString foldText(int fold) const;  // at a figure this wide, over the shown time
  int64_t stuckEnd() const;  // 0 without stuck collectives
  int64_t cursorEnd() const;  // the cursor (ns), which the view keeps in range; 0 without one
  void revealTime(int64_t ns);  // pans (same zoom) until ns is in view

  const EventStore* m_store;
  TimelineLayout m_layout;
  QCustomPlot* m_plot;
  TimelinePlottable* m_timeline;
  QSharedPointer<QCPAxisTickerText> m_rowTicker;
  QLabel* m_placeholder;
  QScrollBar* m_rowScroll;
  std::optional<int64_t> m_cursor;
  std::optional<std::pair<int, int32_t>> m_selected;  // rank, index into its events
  uint64_t m_selectedGeneration = 0;                   // the store's, when selected
  QString peersLine(int rank, int32_t index) const;  // "" unless a listed peer
  std::vector<CollectivePeer> m_peers;  // the selected collective on each member of its group
  std::vector<QCPAbstractItem*> m_arrows;              // lines, labels and the outline
  std::optional<std::pair<int64_t, int64_t>> m_range;
  QCPAbstractItem* m_rangeBand = nullptr;
  QCPAbstractItem* m_rangeLabel = nullptr;
  bool m_selectingRange = false;
  int64_t m_rangeAnchor = 0;
  QPoint m_pressPos;
  bool m_draggingCursor = false;
  uint32_t m_legendKinds = 0;  // bit per EventKind already in the legend
  bool m_legendStuck = false;  // the legend has the stuck-collective entry
  bool m_legendFolds = false;  // … the folded-boxes entry
  bool m_legendWaits = false;  // … the waiting-for-peers entry
  std::optional<bool> m_figureFolds;  // while a figure is written: whether it has folds
  bool m_hangShown = true;
  bool m_follow = true;
  bool m_clamping = false;
  int m_pathRank = -1;
  std::vector<int64_t> m_pathOps;            // ascending
  bool m_pathShown = false;
  std::vector<QCPAbstractItem*> m_pathItems;  // the outlines
  std::vector<int64_t> m_pathDrawn;           // their ops
};

}  // namespace shardscope
