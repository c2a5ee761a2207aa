#include "pipeline_plottable.h"

#include <algorithm>
#include <cmath>

#include "common/units.h"
#include "figure_export.h"
#include "inspect/pipeline_boxes.h"
#include "palette.h"
#include "timeline_plottable.h"

namespace shardscope {

PipelinePlottable::PipelinePlottable(QCPAxis* key_axis, QCPAxis* value_axis, const PipelineBoxes* boxes)
    : QCPAbstractPlottable(key_axis, value_axis), m_boxes(boxes) {
  setSelectable(QCP::stNone);
  setAntialiased(true);
}

QColor PipelinePlottable::idleColor() { return Palette::themed(QColor(0xE4, 0xE4, 0xE4)); }

double PipelinePlottable::selectTest(const QPointF&, bool, QVariant*) const { return -1; }

QCPRange PipelinePlottable::getKeyRange(bool& found, QCP::SignDomain) const {
  found = !m_boxes->boxes().empty();
  return QCPRange(0, static_cast<double>(m_boxes->windowEnd() - m_boxes->windowBegin()) / kNsPerMs);
}

QCPRange PipelinePlottable::getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const {
  found = m_boxes->stages() > 0;
  return QCPRange(-0.5, m_boxes->stages() - 0.5);
}

double PipelinePlottable::x(int64_t ns) const {
  return mKeyAxis->coordToPixel(static_cast<double>(ns - m_boxes->windowBegin()) / kNsPerMs);
}

QRectF PipelinePlottable::rowRect(int stage, int64_t begin, int64_t end, double height) const {
  return QRectF(QPointF(x(begin), mValueAxis->coordToPixel(stage - height / 2)),
                QPointF(x(end), mValueAxis->coordToPixel(stage + height / 2)))
      .normalized();
}

void PipelinePlottable::draw(QCPPainter* painter) {
  m_lastLabels = 0;
  m_lastArrows = 0;
  if (m_boxes->boxes().empty()) return;
  const double line = FigureExport::lineScale();
  // The bubble: each row's idle time in the step's pipeline window.
  for (const PipelineRow& row : m_boxes->rows())
    for (const auto& [b, e] : row.idle) {
      const QRectF r = rowRect(row.stage, b, e, kBoxHeight);
      painter->fillRect(r, idleColor());
      TimelinePlottable::drawStripes(painter, r, idleColor().darker(112), line);
    }
  const QFont font = FigureExport::paintFont(painter->font(), 7.5);
  painter->setFont(font);
  const QFontMetricsF fm(font);
  const QColor fwd = Palette::kind(EventKind::Forward), bwd = Palette::kind(EventKind::Backward);
  for (const PipelineBox& box : m_boxes->boxes()) {
    const bool forward = box.action.pass == PipelineAction::Pass::Forward;
    const QColor fill = forward ? fwd : bwd;
    const QRectF r = rowRect(box.stage, box.begin_ns, box.end_ns, kBoxHeight);
    painter->setPen(QPen(fill.darker(140), line));
    painter->setBrush(fill);
    painter->drawRect(r);
    // Activation checkpointing: the forward a backward recomputes, striped in the forward's colour.
    for (const auto& [b, e] : box.recompute) {
      const QRectF rr = rowRect(box.stage, b, e, kBoxHeight).intersected(r);
      if (rr.width() < 0.5) continue;
      painter->fillRect(rr, fwd.lighter(115));
      TimelinePlottable::drawStripes(painter, rr, bwd, line);
    }
    // "F3.5", or "3.5" where only that fits (the colour says the pass).
    QString text = QString::fromStdString(m_boxes->label(box));
    if (r.width() < fm.horizontalAdvance(text) + 4) text = text.mid(1);
    if (r.width() >= fm.horizontalAdvance(text) + 4 && r.height() >= fm.height()) {
      painter->setPen(Palette::textOn(fill));
      painter->drawText(r, Qt::AlignCenter, text);
      ++m_lastLabels;
    }
  }
  drawArrows(painter);
}

void PipelinePlottable::drawArrows(QCPPainter* painter) const {
  const double line = FigureExport::lineScale();
  const double half = kBoxHeight / 2;
  for (const PipelineArrow& a : m_boxes->arrows()) {
    // Down the rows for a later stage, up for an earlier one (gradients, interleaving's wrap).
    const double dir = a.to_stage > a.from_stage ? 1.0 : -1.0;
    const QPointF from(x(a.send_ns), mValueAxis->coordToPixel(a.from_stage + dir * half));
    const QPointF to(x(a.recv_end_ns), mValueAxis->coordToPixel(a.to_stage - dir * half));
    const QColor c = Palette::kind(a.gradient ? EventKind::Recv : EventKind::Send).darker(a.gradient ? 120 : 100);
    QPen pen(c, 1.1 * line);
    if (a.gradient) pen.setStyle(Qt::DashLine);
    painter->setPen(pen);
    painter->drawLine(from, to);
    // The head: a small filled triangle at the receive's end.
    const QPointF d = to - from;
    const double len = std::hypot(d.x(), d.y());
    if (len >= 1) {
      const QPointF u = d / len, n(-u.y(), u.x());
      const double size = 5 * line;
      const QPointF head[3] = {to, to - u * size + n * size * 0.45, to - u * size - n * size * 0.45};
      painter->setPen(Qt::NoPen);
      painter->setBrush(c);
      painter->drawPolygon(head, 3);
    }
    ++m_lastArrows;
  }
}

void PipelinePlottable::drawLegendIcon(QCPPainter*, const QRectF&) const {}

}  // namespace shardscope
