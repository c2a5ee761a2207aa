#include "timeline_legend.h"

#include <QObject>
#include <qcustomplot.h>

#include "figure_export.h"
#include "palette.h"
#include "timeline_plottable.h"

namespace shardscope {

namespace {

// The legend's entry for folded boxes: striped grey, as the folds are drawn.
class FoldedBoxesLegendEntry : public QCPBars {
 public:
  using QCPBars::QCPBars;

 protected:
  void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override {
    const QColor fill = Palette::foldedMixed();
    painter->fillRect(rect, fill.lighter(118));
    TimelinePlottable::drawStripes(painter, rect, fill.darker(150), FigureExport::lineScale());
  }
};

}  // namespace

const std::vector<EventKind>& timelineLegendOrder() {
  // A step's order: compute, then communication, then the rest.
  static const std::vector<EventKind> order = {
      EventKind::Forward, EventKind::Backward, EventKind::Loss, EventKind::AllReduce,
      EventKind::ReduceScatter, EventKind::AllGather, EventKind::Send, EventKind::Recv, EventKind::OptimizerStep,
      EventKind::Wait,
      EventKind::Copy, EventKind::Broadcast, EventKind::Launch, EventKind::BucketReady, EventKind::GradReady,
      EventKind::Error,
      // An imported PyTorch trace's kinds.
      EventKind::AllToAll, EventKind::Kernel, EventKind::CpuOp};
  return order;
}

void addTimelineLegendEntries(QCustomPlot* plot, const TimelineLegendMarks& marks) {
  for (EventKind k : timelineLegendOrder()) {
    if (!(marks.kinds & (1u << static_cast<unsigned>(k)))) continue;
    const QColor c = Palette::kind(k);
    if (k == EventKind::BucketReady || k == EventKind::GradReady || k == EventKind::Error) {
      auto* g = new QCPGraph(plot->xAxis, plot->yAxis);
      g->setLineStyle(QCPGraph::lsNone);
      g->setScatterStyle(k == EventKind::GradReady
                             ? QCPScatterStyle(QCPScatterStyle::ssPlus, c, 6)
                             : QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, c.darker(150), c, 8));
      g->setName(Palette::kindTitle(k));
      continue;
    }
    auto* b = new QCPBars(plot->xAxis, plot->yAxis);
    b->setBrush(c);
    b->setPen(QPen(c.darker(135)));
    b->setName(Palette::kindTitle(k));
  }
  if (marks.waits) {
    auto* b = new QCPBars(plot->xAxis, plot->yAxis);
    const QColor c = Palette::kind(EventKind::AllReduce);
    b->setBrush(TimelinePlottable::waitingColor(c));
    b->setPen(QPen(c.darker(135)));
    b->setName(QObject::tr("pale part: waiting for the slowest peer"));
  }
  if (marks.folds) {
    auto* b = new FoldedBoxesLegendEntry(plot->xAxis, plot->yAxis);
    b->setName(QObject::tr("folded: several short ops"));
  }
  if (marks.stuck) {
    auto* b = new QCPBars(plot->xAxis, plot->yAxis);
    b->setBrush(QBrush(QColor(0xC0, 0x10, 0x28), Qt::BDiagPattern));
    b->setPen(QPen(QColor(0xC0, 0x10, 0x28), 1.5));
    b->setName(QObject::tr("stuck collective (hang)"));
  }
}

}  // namespace shardscope
