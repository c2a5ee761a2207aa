// Paints the pipeline schedule inside a QCustomPlot axis rect: per stage row
// its idle time shaded, one box per microbatch's forward or backward pass
// through a chunk (labelled "F3"/"B3" where the label fits; recompute striped
// inside backward boxes), and an arrow per transfer from the send's begin on
// the sender's row to the receive's end on the receiver's row. Key axis: ms
// since the step's pipeline window began; value axis: stage (row 0 on top).
#pragma once

#include <qcustomplot.h>

namespace shardscope {

class PipelineBoxes;

class PipelinePlottable : public QCPAbstractPlottable {
  Q_OBJECT
 public:
  static constexpr double kBoxHeight = 0.62;  // of a row

  PipelinePlottable(QCPAxis* key_axis, QCPAxis* value_axis, const PipelineBoxes* boxes);

  // What the last paint drew: boxes labelled (the rest too narrow) and arrows.
  int lastLabels() const { return m_lastLabels; }
  int lastArrows() const { return m_lastArrows; }
  static QColor idleColor();

  double selectTest(const QPointF& pos, bool only_selectable, QVariant* details = nullptr) const override;
  QCPRange getKeyRange(bool& found, QCP::SignDomain domain = QCP::sdBoth) const override;
  QCPRange getValueRange(bool& found, QCP::SignDomain domain = QCP::sdBoth,
                         const QCPRange& key_range = QCPRange()) const override;

 protected:
  void draw(QCPPainter* painter) override;
  void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override;

 private:
  double x(int64_t ns) const;  // pixel of a time
  QRectF rowRect(int stage, int64_t begin, int64_t end, double height) const;
  void drawArrows(QCPPainter* painter) const;

  const PipelineBoxes* m_boxes;
  mutable int m_lastLabels = 0;
  mutable int m_lastArrows = 0;
};

}  // namespace shardscope
