#include "timeline_plottable.h"

#include <QLocale>
#include <QVarLengthArray>
#include <algorithm>
#include <cmath>
#include <vector>

#include "figure_export.h"
#include "inspect/event_store.h"
#include "inspect/rank_symmetry.h"
#include "palette.h"
#include "plot_style.h"
#include "inspect/timeline_layout.h"

namespace shardscope {

namespace {
constexpr double kMinLabelPx = 22.0;  // narrower boxes carry no text
constexpr double kMinStepGapPx = 8.0;  // closer step lines thin to the ruler's labels
}  // namespace

TimelinePlottable::TimelinePlottable(QCPAxis* key_axis, QCPAxis* value_axis, const EventStore* store,
                                     TimelineLayout* layout)
    : QCPAbstractPlottable(key_axis, value_axis), m_store(store), m_layout(layout) {
  setSelectable(QCP::stNone);
  setAntialiased(false);  // crisp box edges; text and markers turn it on locally
}

double TimelinePlottable::selectTest(const QPointF&, bool, QVariant*) const { return -1; }

QCPRange TimelinePlottable::getKeyRange(bool& found, QCP::SignDomain) const {
  found = !m_store->empty();
  int64_t end = m_store->endNs();
  for (const StuckCollective& s : m_stuck) end = std::max(end, s.until_ns);
  return QCPRange(static_cast<double>(m_store->beginNs()) / kNsPerMs, static_cast<double>(end) / kNsPerMs);
}

QCPRange TimelinePlottable::getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const {
  found = !m_layout->rows().empty();
  return QCPRange(0, m_layout->totalHeight());
}

QString TimelinePlottable::label(int rank, int32_t event, bool compact) const {
  const Event& e = m_store->events(rank)[static_cast<size_t>(event)];
  const bool recompute = e.kind == EventKind::Forward && (e.flags & kEventRecompute);  // checkpointing
  const QString prefix = recompute ? QStringLiteral("rec") : Palette::kindShort(e.kind);
  const auto join = [&](const QString& what) { return compact ? what : prefix + ' ' + what; };
  switch (e.kind) {
    case EventKind::Forward:
    case EventKind::Backward:
      return e.block >= 0 ? join(QString::fromStdString(m_store->blockName(e.block))) : prefix;
    case EventKind::AllReduce:
    case EventKind::ReduceScatter:
    case EventKind::AllGather:
    case EventKind::Copy:
      if (e.bucket >= 0) return join(QStringLiteral("b%1").arg(e.bucket));
      if (e.unit >= 0) return join(QStringLiteral("u%1").arg(e.unit));
      return prefix;
    case EventKind::OptimizerStep: return compact ? QStringLiteral("opt") : prefix;
    default: return prefix;
  }
}

QRectF TimelinePlottable::boxRect(const TimelineDrawItem& item, const QRect& clip) const {
  const TimelineRow& row = m_layout->rows()[static_cast<size_t>(item.row)];
  const double a = mValueAxis->coordToPixel(row.center() - kBoxHeight * row.height / 2);
  const double b = mValueAxis->coordToPixel(row.center() + kBoxHeight * row.height / 2);
  const double left = std::max(clip.left() + item.x0, static_cast<double>(clip.left()) - 2.0);
  const double right = std::min(clip.left() + item.x1, static_cast<double>(clip.right()) + 2.0);
  return QRectF(QPointF(left, std::min(a, b)), QPointF(right, std::max(a, b)));
}

void TimelinePlottable::draw(QCPPainter* painter) {
  const QRect clip = clipRect();
  const QCPRange keys = mKeyAxis->range();
  const QCPRange values = mValueAxis->range();
  const int first_row = std::max(0, m_layout->rowAt(values.lower));
  const int last_row = m_layout->rowAt(values.upper);  // -1 without rows: nothing to draw
  m_layout->layout(keys.lower * kNsPerMs, keys.upper * kNsPerMs, clip.width(), first_row, last_row);
  m_lastItems = m_layout->items().size() + m_layout->markers().size();
  // A new run cleared the store and the view has not synced yet (a repaint
  // from a tab switch or resize): the rows and stuck boxes are the old run's
  // and their event indices point into cleared events. Draw nothing until
  // TimelineView::refresh syncs.
  if (!m_layout->current(*m_store)) return;

  drawBands(painter, clip, first_row, last_row);
  drawGrid(painter, clip);
  bool folds = false, waits = false;
  drawBoxes(painter, clip, &folds, &waits);
  if (m_marksTracked && (folds != m_drewFolds || waits != m_drewWaits)) {
    m_drewFolds = folds;
    m_drewWaits = waits;
    emit marksChanged();
  }
  drawStuck(painter, clip);
  drawMarkers(painter, clip);
  drawSteps(painter, clip);
  if (m_cursorNs) {
    const double x = mKeyAxis->coordToPixel(static_cast<double>(*m_cursorNs) / kNsPerMs);
    if (x >= clip.left() && x <= clip.right()) {
      painter->setPen(QPen(Palette::cursor(), 1.5));
      painter->drawLine(QPointF(x, clip.top()), QPointF(x, clip.bottom()));
    }
  }
}

QString TimelinePlottable::waitingText(const StuckCollective& s) {
  QStringList ranks;
  for (int r : s.waiting_for) ranks << QString::number(r);
  if (ranks.size() > 4) ranks = ranks.mid(0, 3) << QStringLiteral("…");
  return (s.waiting_for.size() == 1 ? QObject::tr("waiting for rank %1") : QObject::tr("waiting for ranks %1"))
      .arg(ranks.join(QStringLiteral(", ")));
}

QRectF TimelinePlottable::stuckRect(const StuckCollective& s) const {
  if (s.rank < 0 || s.rank >= m_store->rankCount() || s.event < 0 ||
      static_cast<size_t>(s.event) >= m_store->events(s.rank).size())
    return {};
  const int row = m_layout->rowOf(s.rank, m_store->events(s.rank)[static_cast<size_t>(s.event)].lane);
  if (row < 0) return {};
  const TimelineRow& r = m_layout->rows()[static_cast<size_t>(row)];
  const double a = mValueAxis->coordToPixel(r.center() - kBoxHeight * r.height / 2);
  const double b = mValueAxis->coordToPixel(r.center() + kBoxHeight * r.height / 2);
  const double x0 = mKeyAxis->coordToPixel(static_cast<double>(s.begin_ns) / kNsPerMs);
  const double x1 = mKeyAxis->coordToPixel(static_cast<double>(s.until_ns) / kNsPerMs);
  return QRectF(QPointF(std::min(x0, x1), std::min(a, b)), QPointF(std::max(x0 + 2, x1), std::max(a, b)));
}

void TimelinePlottable::drawStuck(QCPPainter* painter, const QRect& clip) const {
  if (m_stuck.empty()) return;
  const QColor red(0xC0, 0x10, 0x28);
  QFont font = FigureExport::paintFont(painter->font(), 8);
  font.setBold(true);
  painter->setFont(font);
  const QFontMetricsF metrics(font);
  for (const StuckCollective& s : m_stuck) {
    const QRectF r = stuckRect(s).intersected(QRectF(clip).adjusted(-2, 0, 2, 0));
    if (r.isEmpty()) continue;
    painter->fillRect(r, QColor(0xFD, 0xEC, 0xEE));
    painter->fillRect(r, QBrush(red, Qt::BDiagPattern));
    painter->setPen(QPen(red, 1.5 * FigureExport::lineScale()));
    painter->drawRect(r.adjusted(0.5, 0.5, -0.5, -0.5));
    // Inside the box when it fits; else ending at its right edge, over the
    // lane before it (where this rank sat waiting), never elided.
    const QString text = waitingText(s);
    const double w = metrics.horizontalAdvance(text) + 4;
    const double left = w + 8 <= r.width() ? r.left() + 4 : std::max<double>(clip.left(), r.right() - 4 - w);
    const QString shown = metrics.elidedText(text, Qt::ElideRight, r.right() - left);
    if (shown.isEmpty() || shown == QStringLiteral("…")) continue;
    const QRectF label(left, r.top(), metrics.horizontalAdvance(shown) + 4, r.height());
    painter->fillRect(label.adjusted(-2, 2, 0, -2), QColor(0xFD, 0xEC, 0xEE));
    painter->setPen(red.darker(130));
    painter->drawText(label, Qt::AlignLeft | Qt::AlignVCenter, shown);
  }
}

void TimelinePlottable::drawBands(QCPPainter* painter, const QRect& clip, int first_row, int last_row) const {
  const auto& rows = m_layout->rows();
  painter->setPen(Qt::NoPen);
  for (int row = first_row; row <= last_row; ++row) {
    const TimelineRow& r = rows[static_cast<size_t>(row)];
    const double a = mValueAxis->coordToPixel(r.top), b = mValueAxis->coordToPixel(r.top + r.height);
    const QRectF band(QPointF(clip.left(), std::min(a, b)), QPointF(clip.right() + 1, std::max(a, b)));
    painter->fillRect(band, Palette::rankBand(r.rank));
    if (r.isBand()) drawSameAsBand(painter, band, m_layout->folds()[static_cast<size_t>(r.fold)]);
  }
  // A firm line between rank groups, a faint one between lanes.
  for (int row = first_row; row <= last_row; ++row) {
    const bool group_start = row == 0 || rows[static_cast<size_t>(row - 1)].rank != rows[static_cast<size_t>(row)].rank;
    const double y = std::round(mValueAxis->coordToPixel(rows[static_cast<size_t>(row)].top));
    painter->setPen(QPen(Palette::themed(group_start ? QColor(0xB0, 0xB5, 0xBC) : QColor(0xEA, 0xEC, 0xEF)),
                         group_start ? FigureExport::lineScale() : 1));
    if (row > 0) painter->drawLine(QPointF(clip.left(), y), QPointF(clip.right(), y));
  }
}

void TimelinePlottable::drawSameAsBand(QCPPainter* painter, const QRectF& band, const RankFold& fold) const {
  // Pale stripes under "ranks 1–7: same as rank 0", so the band never reads as an idle rank.
  const QRectF inner = band.adjusted(0, band.height() * 0.14, 0, -band.height() * 0.14);
  painter->fillRect(inner, Palette::themed(QColor(0xEE, 0xF0, 0xF3)));
  const QString text = QString::fromStdString(fold.text(m_store ? m_store->config() : nullptr));
  QFont font = FigureExport::paintFont(painter->font(), 8.5);
  font.setItalic(true);
  painter->setFont(font);
  painter->setPen(Palette::themed(QColor(0x45, 0x4B, 0x55)));
  painter->drawText(inner.adjusted(8, 0, -8, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
}

void TimelinePlottable::drawGrid(QCPPainter* painter, const QRect& clip) const {
  painter->setPen(QPen(Palette::grid(), 1, Qt::DotLine));
  for (double t : mKeyAxis->tickVector()) {
    const double x = std::round(mKeyAxis->coordToPixel(t));
    if (x > clip.left() && x < clip.right()) painter->drawLine(QPointF(x, clip.top()), QPointF(x, clip.bottom()));
  }
}

void TimelinePlottable::drawSteps(QCPPainter* painter, const QRect& clip) const {
  // Labels live on the top axis (TimelineView's step ruler); here only the lines.
  std::vector<double> xs;
  for (const StepStart& start : m_layout->stepStarts()) {
    const double x = std::round(mKeyAxis->coordToPixel(static_cast<double>(start.ns) / kNsPerMs));
    if (x >= clip.left() && x <= clip.right()) xs.push_back(x);
  }
  // Steps denser than kMinStepGapPx keep only the ruler's labelled lines:
  // hundreds of dashed lines a few px apart paint a grey wash over the boxes
  // and cost most of a zoomed-out frame.
  const QCPAxis* ruler = mKeyAxis->axisRect()->axis(QCPAxis::atTop);
  if (xs.size() > 1 && (xs.back() - xs.front()) / static_cast<double>(xs.size() - 1) < kMinStepGapPx && ruler) {
    xs.clear();
    for (double t : ruler->tickVector()) {
      const double x = std::round(mKeyAxis->coordToPixel(t));
      if (x >= clip.left() && x <= clip.right()) xs.push_back(x);
    }
  }
  painter->setPen(QPen(Palette::step(), FigureExport::lineScale(), Qt::DashLine));
  for (double x : xs) painter->drawLine(QPointF(x, clip.top()), QPointF(x, clip.bottom()));
}

QColor TimelinePlottable::waitingColor(const QColor& fill) {
  return QColor::fromRgbF(0.75f + 0.25f * fill.redF(), 0.75f + 0.25f * fill.greenF(), 0.75f + 0.25f * fill.blueF());
}

bool TimelinePlottable::drawsKind(EventKind kind) {
  switch (kind) {
    case EventKind::BucketReady:
    case EventKind::GradReady:
    case EventKind::Error: return true;  // markers
    default: return !isInstant(kind);    // boxes
  }
}

void TimelinePlottable::drawBoxes(QCPPainter* painter, const QRect& clip, bool* folds, bool* waits) const {
  const QFont font = FigureExport::paintFont(painter->font(), 7.5);
  painter->setFont(font);
  const QFontMetricsF fm(font);
  const double outline = FigureExport::lineScale();  // thicker box edges on a slide
  // Shaping text is most of a zoomed-in frame, and labels repeat ("bwd
  // block3" on every rank and step): measure each label once per font.
  if (m_advanceFont != font || m_advances.size() > 4096) {
    m_advances.clear();
    m_advanceFont = font;
  }
  const auto advance = [&](const QString& text) {
    auto it = m_advances.constFind(text);
    if (it == m_advances.constEnd()) it = m_advances.insert(text, fm.horizontalAdvance(text));
    return it.value();
  };
  const auto& rows = m_layout->rows();
  // Labels go on after every box: a row's collectives are drawn over its
  // folded compute (TimelineLayout), and must not hide the fold's "171 ops".
  struct BoxLabel {
    QRectF rect;
    QString text;
    QColor color;
  };
  std::vector<BoxLabel> labels;
  for (const TimelineDrawItem& item : m_layout->items()) {
    const QRectF r = boxRect(item, clip);
    if (r.width() <= 0) continue;
    const QColor fill = item.mixed ? Palette::foldedMixed() : Palette::kind(item.kind);
    if (item.folded > 1) {
      *folds = true;
      // Folded boxes: the colour of what they hold, striped, so they never
      // pass for one long op. Stripes are lines, not a pattern brush: SVG
      // export has no pattern support.
      painter->fillRect(r, fill.lighter(118));
      drawStripes(painter, r, fill.darker(150), outline);
    } else {
      painter->fillRect(r, fill);
      // A collective's first `value` ns wait for the slowest peer: drawn pale,
      // so waiting never passes for bandwidth.
      const Event& e = m_store->events(rows[static_cast<size_t>(item.row)].rank)[static_cast<size_t>(item.event)];
      const bool collective = e.kind == EventKind::AllReduce || e.kind == EventKind::ReduceScatter ||
                              e.kind == EventKind::AllGather || e.kind == EventKind::Copy;
      if (collective && e.value > 0 && e.end_ns > e.begin_ns) {
        const double frac = std::min(1.0, static_cast<double>(e.value) / static_cast<double>(e.end_ns - e.begin_ns));
        const double x_wait = clip.left() + item.x0 + (item.x1 - item.x0) * frac;
        const QRectF wait(QPointF(r.left(), r.top()), QPointF(std::clamp(x_wait, r.left(), r.right()), r.bottom()));
        if (wait.width() >= 1) {
          *waits = true;
          // A quarter-strength tint of the kind's colour: "hollow" while waiting.
          painter->fillRect(wait, waitingColor(fill));
        }
      }
      if (r.width() >= 4 * outline) {
        painter->setPen(QPen(fill.darker(135), outline));
        painter->drawRect(r.adjusted(0, 0, -1, -1));
      }
    }
    if (r.width() < kMinLabelPx) continue;
    const int rank = rows[static_cast<size_t>(item.row)].rank;
    // Keep the label in view when the box starts left of the viewport.
    const QRectF text_rect = r.intersected(QRectF(clip)).adjusted(3, 0, -3, 0);
    QString text = item.folded > 1 ? QLocale(QLocale::English).toString(qlonglong(item.folded)) + QStringLiteral(" ops")
                                  : label(rank, item.event);
    if (item.folded == 1 && advance(text) > text_rect.width()) text = label(rank, item.event, true);
    // A bare "12" would read as a unit or bucket id: short folds say "×12".
    if (item.folded > 1 && advance(text) > text_rect.width() - 1) text = QStringLiteral("×%1").arg(item.folded);
    // elidedText returns a fitting text unchanged; the 1 px margin leaves its
    // own rounding (1/64 px) to decide the borderline cases.
    if (advance(text) > text_rect.width() - 1) text = fm.elidedText(text, Qt::ElideRight, text_rect.width());
    // "bl…" says nothing the colour does not: elided labels keep 3+ characters.
    if (text.isEmpty() || (text.endsWith(QChar(0x2026)) && text.size() < 4)) continue;
    labels.push_back({text_rect, text, item.folded > 1 ? QColor(0x1A, 0x1A, 0x1A) : Palette::textOn(fill)});
  }
  for (const BoxLabel& l : labels) {
    painter->setPen(l.color);
    painter->drawText(l.rect, Qt::AlignVCenter | Qt::AlignLeft, l.text);
  }
}

void TimelinePlottable::drawStripes(QCPPainter* painter, const QRectF& r, const QColor& color, double width) {
  const double kGap = 5.0 * width;
  const double w = r.width(), h = r.height();
  painter->setPen(QPen(color, width));
  // Lines of slope -1: x = k - h + t, y = h - t (local), clipped to [0, w].
  // One drawLines call per box: a zoomed-out row is one fold of ~300 stripes.
  // Rounded to whole pixels as QCPPainter::drawLine does when not antialiased.
  const bool exact = painter->antialiasing() || painter->modes().testFlag(QCPPainter::pmVectorized);
  QVarLengthArray<QLineF, 512> lines;
  QVarLengthArray<QLine, 512> pixel_lines;
  for (double k = std::fmod(r.left(), kGap); k < w + h; k += kGap) {
    const double t0 = std::max(0.0, h - k), t1 = std::min(h, w - k + h);
    if (t0 >= t1) continue;
    const QLineF line(QPointF(r.left() + k - h + t0, r.top() + h - t0), QPointF(r.left() + k - h + t1, r.top() + h - t1));
    if (exact)
      lines.append(line);
    else
      pixel_lines.append(line.toLine());
  }
  if (exact)
    painter->drawLines(lines.constData(), static_cast<int>(lines.size()));
  else
    painter->drawLines(pixel_lines.constData(), static_cast<int>(pixel_lines.size()));
}

void TimelinePlottable::drawMarkers(QCPPainter* painter, const QRect& clip) const {
  painter->setRenderHint(QPainter::Antialiasing, true);
  for (const TimelineMarker& m : m_layout->markers()) {
    const double x = clip.left() + m.x;
    const TimelineRow& row = m_layout->rows()[static_cast<size_t>(m.row)];
    const double y = mValueAxis->coordToPixel(row.center());
    const double half = std::abs(mValueAxis->coordToPixel(row.center() + kBoxHeight * row.height / 2) - y);
    const QColor c = Palette::kind(m.kind);
    if (m.kind == EventKind::GradReady) {
      painter->setPen(QPen(c, 1));
      painter->drawLine(QPointF(x, y + half * 0.1), QPointF(x, y + half));
      continue;
    }
    // bucket_ready / error: a downward triangle pointing at the instant.
    const double s = std::clamp(half * 0.5, 3.5, 5.5) * FigureExport::lineScale();
    const QPointF tri[3] = {{x - s, y - s}, {x + s, y - s}, {x, y + s * 0.6}};
    painter->setPen(QPen(c.darker(150), 1));
    painter->setBrush(c);
    painter->drawPolygon(tri, 3);
  }
  painter->setBrush(Qt::NoBrush);
  painter->setRenderHint(QPainter::Antialiasing, false);
}

void TimelinePlottable::drawLegendIcon(QCPPainter*, const QRectF&) const {}

}  // namespace shardscope
