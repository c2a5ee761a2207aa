// Paints the timeline inside a QCustomPlot axis rect: rank bands, grid, step
// lines, event boxes, instant markers and the cursor. It asks TimelineLayout
// for the draw items of exactly the visible window on every draw, so painting
// cost follows the pixel count, not the event count. Key axis: ms since run
// start; value axis: row index (reversed, row 0 at the top).
#pragma once

#include <QFont>
#include <QHash>
#include <optional>
#include <qcustomplot.h>
#include <vector>

#include "inspect/rank_symmetry.h"
#include "inspect/stuck_collectives.h"
#include "trace/event.h"

namespace shardscope {

class EventStore;
class TimelineLayout;
struct TimelineDrawItem;

class TimelinePlottable : public QCPAbstractPlottable {
  Q_OBJECT
 public:
  static constexpr double kBoxHeight = 0.72;  // of a row

  TimelinePlottable(QCPAxis* key_axis, QCPAxis* value_axis, const EventStore* store,
                    TimelineLayout* layout);

  void setCursorNs(std::optional<int64_t> ns) { m_cursorNs = ns; }
  // A hung run's stuck collectives: drawn from their start to the stop,
  // hatched red, "waiting for rank N", on every waiting rank.
  void setStuck(std::vector<StuckCollective> stuck) { m_stuck = std::move(stuck); }
  const std::vector<StuckCollective>& stuck() const { return m_stuck; }
  // Its rectangle in pixels (empty when its row is not laid out).
  QRectF stuckRect(const StuckCollective& s) const;
  static QString waitingText(const StuckCollective& s);
  // Box label ("fwd block3", "AR b1") for an event of rank; compact drops
  // what the colour already says ("block3", "b1", "opt").
  QString label(int rank, int32_t event, bool compact = false) const;
  size_t lastItemCount() const { return m_lastItems; }
  // Marks the last paint drew besides the kinds' own boxes and markers: folded
  // boxes (striped) and the pale part of a collective that waited for its
  // peers. marksChanged() (emitted from the paint: connect queued) when either changes.
  bool drewFolds() const { return m_drewFolds; }
  bool drewWaits() const { return m_drewWaits; }
  // Off while a figure is painted: its folds are the figure's, not the screen's.
  void setMarksTracked(bool on) { m_marksTracked = on; }
  // Whether events of this kind are drawn (a box or a marker), as TimelineLayout lays them out.
  static bool drawsKind(EventKind kind);
  // The pale tint a collective's waiting part is drawn in (a quarter of fill).
  static QColor waitingColor(const QColor& fill);
  // A folded box's stripes (lines, not a pattern: SVG has no patterns).
  static void drawStripes(QCPPainter* painter, const QRectF& r, const QColor& color, double width = 1);

  double selectTest(const QPointF& pos, bool only_selectable, QVariant* details = nullptr) const override;
  QCPRange getKeyRange(bool& found, QCP::SignDomain domain = QCP::sdBoth) const override;
  QCPRange getValueRange(bool& found, QCP::SignDomain domain = QCP::sdBoth,
                         const QCPRange& key_range = QCPRange()) const override;

 signals:
  void marksChanged();

 protected:
  void draw(QCPPainter* painter) override;
  void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override;

 private:
  void drawBands(QCPPainter* painter, const QRect& clip, int first_row, int last_row) const;
  void drawGrid(QCPPainter* painter, const QRect& clip) const;
  void drawSameAsBand(QCPPainter* painter, const QRectF& band, const RankFold& fold) const;
  void drawSteps(QCPPainter* painter, const QRect& clip) const;
  void drawBoxes(QCPPainter* painter, const QRect& clip, bool* folds, bool* waits) const;
  void drawMarkers(QCPPainter* painter, const QRect& clip) const;
  void drawStuck(QCPPainter* painter, const QRect& clip) const;
  QRectF boxRect(const TimelineDrawItem& item, const QRect& clip) const;

  const EventStore* m_store;
  TimelineLayout* m_layout;
  std::optional<int64_t> m_cursorNs;
  std::vector<StuckCollective> m_stuck;
  size_t m_lastItems = 0;
  bool m_drewFolds = false, m_drewWaits = false, m_marksTracked = true;
  mutable QHash<QString, double> m_advances;  // label -> px in m_advanceFont (drawBoxes)
  mutable QFont m_advanceFont;
};

}  // namespace shardscope
