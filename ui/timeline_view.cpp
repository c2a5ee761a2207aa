#include "timeline_view.h"
#include "common/units.h"

#include <QFontMetricsF>
#include <QKeyEvent>
#include <QLabel>
#include <QMenu>
#include <QScrollBar>
#include <QWheelEvent>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>
#include <cmath>
#include <qcustomplot.h>

#include "theme.h"
#include "inspect/collective_peers.h"
#include "inspect/dependency_links.h"
#include "inspect/event_store.h"
#include "inspect/rank_symmetry.h"
#include "figure_export.h"
#include "palette.h"
#include "plot_style.h"
#include "quantity_text.h"
#include "timeline_legend.h"
#include "timeline_plottable.h"

namespace shardscope {

namespace {

constexpr double kMinRowPx = 20.0;  // below this rows scroll instead of shrinking

// Top ruler: "step N" at each step's start, thinned to every 2nd, 5th, 10th …
// step so labels stay apart at any zoom: the widest label's width plus a gap
// (a fixed 60 px let "step 4201" run into its neighbours).
class StepTicker : public QCPAxisTicker {
 public:
  StepTicker(const TimelineLayout* layout, const QCPAxis* axis) : m_layout(layout), m_axis(axis) {}

  void generate(const QCPRange& range, const QLocale&, QChar, int, QVector<double>& ticks, QVector<double>* sub_ticks,
                QVector<QString>* labels) override {
    ticks.clear();
    if (sub_ticks) sub_ticks->clear();
    if (labels) labels->clear();
    const auto& starts = m_layout->stepStarts();
    const int steps = static_cast<int>(starts.size());
    if (steps == 0 || range.size() <= 0) return;
    const double px_per_ms = m_axis->axisRect()->width() / range.size();
    const double mean_step_ms = steps > 1 && starts.back().ns > starts.front().ns
                                    ? (static_cast<double>(starts.back().ns) - static_cast<double>(starts.front().ns)) / kNsPerMs / (steps - 1)
                                    : range.size();
    const QFontMetricsF metrics(m_axis->tickLabelFont());
    const double min_gap_px =
        std::max(60.0, metrics.horizontalAdvance(QStringLiteral("step %1").arg(starts.back().step)) + 16.0);
    int stride = 1;
    for (int k : {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000}) {
      stride = k;
      if (mean_step_ms * px_per_ms * k >= min_gap_px) break;
    }
    for (int s = 0; s < steps; s += stride) {
      const StepStart& start = starts[static_cast<size_t>(s)];
      const double t = static_cast<double>(start.ns) / kNsPerMs;
      if (t < range.lower || t > range.upper) continue;
      ticks << t;
      if (labels) *labels << QStringLiteral("step %1").arg(start.step);
    }
  }

 private:
  const TimelineLayout* m_layout;
  const QCPAxis* m_axis;
};

QString laneTitle(Lane lane) {
  const std::string_view n = laneName(lane);
  return QString::fromLatin1(n.data(), static_cast<int>(n.size()));
}

}  // namespace

TimelineView::TimelineView(const EventStore* store, QWidget* parent)
    : QWidget(parent), m_store(store), m_plot(new QCustomPlot(this)) {
  m_rowScroll = new QScrollBar(Qt::Vertical, this);
  m_rowScroll->setVisible(false);
  auto* box = new QHBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->setSpacing(0);
  box->addWidget(m_plot, 1);
  box->addWidget(m_rowScroll);
  m_plot->setObjectName(QStringLiteral("timelinePlot"));
  m_plot->setMinimumSize(320, 200);
  m_plot->setBackground(Palette::background());
  m_plot->setNoAntialiasingOnDrag(true);
  m_plot->setPlottingHint(QCP::phCacheLabels, true);

  QCPAxis* x = m_plot->xAxis;
  QCPAxis* y = m_plot->yAxis;
  x->setLabel(tr("time since run start (ms) · measured clock"));
  x->grid()->setVisible(false);  // the plottable draws its grid above the rank bands
  x->setSubTicks(false);
  QFont tick_font = font();
  tick_font.setPointSizeF(8);
  x->setTickLabelFont(tick_font);
  QFont label_font = font();
  label_font.setPointSizeF(8.5);
  x->setLabelFont(label_font);
  x->setLabelColor(QColor(0x55, 0x55, 0x55));

  // Top axis: a ruler naming each step at its first step_begin over all ranks.
  QCPAxis* top = m_plot->xAxis2;
  top->setVisible(true);
  top->setTicker(QSharedPointer<QCPAxisTicker>(new StepTicker(&m_layout, top)));
  top->setSubTicks(false);
  top->setTickLength(0, 5);
  top->setTickLabelPadding(2);
  top->setBasePen(QPen(QColor(0xB0, 0xB5, 0xBC)));
  top->setTickPen(QPen(Palette::step(Theme::Light)));
  QFont step_font = font();
  step_font.setPointSizeF(8);
  step_font.setBold(true);
  top->setTickLabelFont(step_font);
  top->setTickLabelColor(Palette::step(Theme::Light));
  top->grid()->setVisible(false);
  connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), top, qOverload<const QCPRange&>(&QCPAxis::setRange));

  m_rowTicker.reset(new QCPAxisTickerText);
  y->setTicker(m_rowTicker);
  y->setRangeReversed(true);
  y->setSubTicks(false);
  y->setTickLength(0, 0);
  y->grid()->setVisible(false);
  y->setTickLabelFont(tick_font);
  y->setBasePen(QPen(QColor(0xB0, 0xB5, 0xBC)));
  y->setRange(0, 3);

  m_timeline = new TimelinePlottable(x, y, m_store, &m_layout);
  m_timeline->removeFromLegend();
  // Folds and waits depend on the zoom: the legend follows what was painted.
  connect(m_timeline, &TimelinePlottable::marksChanged, this, [this] { updateLegend(); }, Qt::QueuedConnection);

  // Legend in its own row above the plot (see updateLegend), so exported figures carry it.
  m_plot->legend->setVisible(false);
  PlotStyle::styleLegendRow(m_plot, font());
  m_plot->legend->setMaximumSize(QWIDGETSIZE_MAX, 24);
  // The page's "?" sits in the top-right corner: the legend's last column stays clear of it.
  QMargins legend_margins = m_plot->legend->margins();
  legend_margins.setRight(legend_margins.right() + 44);
  m_plot->legend->setMargins(legend_margins);

  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
  m_plot->axisRect()->setRangeDrag(Qt::Horizontal | Qt::Vertical);
  m_plot->axisRect()->setRangeZoomFactor(0.8);
  m_plot->setMouseTracking(true);

  connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &TimelineView::onXRangeChanged);
  connect(y, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &TimelineView::onYRangeChanged);
  connect(m_plot, &QCustomPlot::mouseMove, this, &TimelineView::onMouseMove);
  connect(m_plot, &QCustomPlot::mousePress, this, &TimelineView::onMousePress);
  connect(m_plot, &QCustomPlot::mouseRelease, this, &TimelineView::onMouseRelease);
  connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent* event) {
    if (collapsedBandAt(event->pos()) >= 0)
      setCollapseIdenticalRanks(false);  // the band opens into its ranks
    else
      zoomToFit();
  });
  m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(m_plot, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
    QMenu menu(this);
    if (ranksCollapsed()) {
      menu.addAction(tr("Show every rank"), this, [this] { setCollapseIdenticalRanks(false); });
    } else if (!m_store->empty()) {
      QAction* fold = menu.addAction(tr("Collapse identical ranks"), this,
                                     [this] { setCollapseIdenticalRanks(true, 2); });
      fold->setEnabled(m_store->modeledClock() && !m_store->meta().imported);
    }
    if (!menu.isEmpty()) menu.exec(m_plot->mapToGlobal(pos));
  });
  connect(m_rowScroll, &QScrollBar::valueChanged, this, [this](int value) {
    const double span = m_plot->yAxis->range().size();
    m_plot->yAxis->setRange(value / 100.0, value / 100.0 + span);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
  });
  m_plot->installEventFilter(this);

  m_placeholder = new QLabel(
      tr("No run yet.\nPress Run (Ctrl+R) to train live, or open a trace (Ctrl+O)."), m_plot);
  m_placeholder->setAlignment(Qt::AlignCenter);
  m_placeholder->setStyleSheet(QStringLiteral("font-size: 11pt;"));
  setTone(m_placeholder, Tone::Muted);
  m_placeholder->setAttribute(Qt::WA_TransparentForMouseEvents);
  auto* overlay = new QVBoxLayout(m_plot);  // keeps the message centred as the plot resizes
  overlay->addWidget(m_placeholder);

  setFocusPolicy(Qt::StrongFocus);
  refresh();
}

void TimelineView::refresh() {
  const bool rows_changed = m_layout.sync(*m_store);
  m_timeline->setStuck(m_hangShown ? findStuckCollectives(*m_store) : std::vector<StuckCollective>{});
  // Axes and legend first: they decide the height the rows are fitted into.
  updateLegend();
  m_placeholder->setVisible(m_store->empty());
  for (QCPAxis* axis : {m_plot->xAxis, m_plot->xAxis2, m_plot->yAxis}) axis->setVisible(!m_store->empty());
  if (rows_changed) updateRows();
  m_plot->xAxis->setLabel(m_store->meta().imported ? tr("time since the job's first event (ms) · profiler clock")
                          : m_store->modeledClock()
                              ? tr("time since run start (ms) · modeled clock (%1)")
                                    .arg(QString::fromStdString(m_store->config()->profileName()))
                              : tr("time since run start (ms) · measured clock"));
  if (m_follow && !m_store->empty()) zoomToSteps();
  if (m_selected && m_store->generation() != m_selectedGeneration) selectEvent(-1, -1);  // its store is gone
  else if (m_selected && rows_changed) updateArrows();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString TimelineView::rowTitle(int rank, Lane lane) const {
  if (const auto& imported = m_store->meta().imported)
    if (const ImportedTrack* t = imported->track(rank, lane)) return QString::fromStdString(t->name);
  return laneTitle(lane);
}

void TimelineView::setShowCpuThreads(bool show) {
  if (show == m_layout.showHostTracks()) return;
  m_layout.setShowHostTracks(show);
  if (m_selected) selectEvent(-1, -1);
  updateRows();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int64_t TimelineView::stuckEnd() const {
  int64_t end = 0;
  for (const StuckCollective& s : m_timeline->stuck()) end = std::max(end, s.until_ns);
  return end;
}

const std::vector<StuckCollective>& TimelineView::stuckCollectives() const { return m_timeline->stuck(); }

void TimelineView::setCriticalPath(int rank, std::vector<int64_t> ops) {
  m_pathRank = rank;
  m_pathOps = std::move(ops);
  updatePathHighlight();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::setCriticalPathShown(bool shown) {
  m_pathShown = shown;
  updatePathHighlight();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::updatePathHighlight() {
  for (QCPAbstractItem* item : m_pathItems) m_plot->removeItem(item);
  m_pathItems.clear();
  m_pathDrawn.clear();
  if (!m_pathShown || m_pathOps.empty() || m_pathRank < 0 || m_pathRank >= m_store->rankCount()) return;
  for (const Event& e : m_store->events(m_pathRank)) {
    // Spans only: the step's own time is its band, which the timeline draws already.
    if (e.end_ns <= e.begin_ns || e.op < 0 || !std::binary_search(m_pathOps.begin(), m_pathOps.end(), int64_t(e.op)))
      continue;
    const int row = m_layout.rowOf(m_pathRank, e.lane);
    if (row < 0) continue;  // its row is folded or hidden (key H)
    const double centre = m_layout.rows()[static_cast<size_t>(row)].center();
    const double half = m_layout.rows()[static_cast<size_t>(row)].height * TimelinePlottable::kBoxHeight / 2;
    auto* outline = new QCPItemRect(m_plot);
    outline->topLeft->setCoords(static_cast<double>(e.begin_ns) / kNsPerMs, centre - half);
    outline->bottomRight->setCoords(static_cast<double>(e.end_ns) / kNsPerMs, centre + half);
    outline->setPen(QPen(Palette::cursor(), 2.2));
    outline->setBrush(Qt::NoBrush);
    outline->setClipToAxisRect(true);
    m_pathItems.push_back(outline);
    m_pathDrawn.push_back(e.op);
  }
  std::sort(m_pathDrawn.begin(), m_pathDrawn.end());
  m_pathDrawn.erase(std::unique(m_pathDrawn.begin(), m_pathDrawn.end()), m_pathDrawn.end());
}

void TimelineView::updateRows() {
  QMap<double, QString> ticks;
  const auto& rows = m_layout.rows();
  for (size_t i = 0; i < rows.size(); ++i)
    ticks.insert(rows[i].center(),
                 rows[i].isBand()
                     ? tr("ranks %1").arg(QString::fromStdString(
                           rankRangesText(m_layout.folds()[static_cast<size_t>(rows[i].fold)].ranks)))
                     : QStringLiteral("rank %1 · %2").arg(rows[i].rank).arg(rowTitle(rows[i].rank, rows[i].lane)));
  m_rowTicker->setTicks(ticks);
  fitRows();
  updatePathHighlight();  // rows moved, or the store changed
}

std::vector<EventKind> TimelineView::legendOrder() { return timelineLegendOrder(); }

QStringList TimelineView::legendNames() const {
  QStringList names;
  for (int i = 0; i < m_plot->legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(m_plot->legend->item(i))) names << item->plottable()->name();
  return names;
}

void TimelineView::updateLegend() {
  const uint32_t wanted = m_layout.kinds();
  const bool stuck = !m_timeline->stuck().empty();
  const bool folds = m_figureFolds ? *m_figureFolds : m_timeline->drewFolds();
  const bool waits = m_timeline->drewWaits();
  if (wanted == m_legendKinds && stuck == m_legendStuck && folds == m_legendFolds && waits == m_legendWaits) return;
  m_legendStuck = stuck;
  m_legendFolds = folds;
  m_legendWaits = waits;
  // Rebuild the legend: empty plottables whose only job is an icon and a name.
  for (int i = m_plot->plottableCount() - 1; i >= 0; --i)
    if (m_plot->plottable(i) != m_timeline) m_plot->removePlottable(i);
  m_legendKinds = wanted;
  addTimelineLegendEntries(m_plot, {wanted, waits, folds, stuck});
  PlotStyle::updateLegendRow(m_plot, true);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::fitRows() {
  const double total = m_layout.totalHeight();
  if (total <= 0) return;
  // Lay out now (as replot would) so the axis rect's height reflects the
  // axes and legend just shown or hidden.
  QCPLayoutGrid* grid = m_plot->plotLayout();
  grid->update(QCPLayoutElement::upPreparation);
  grid->update(QCPLayoutElement::upMargins);
  grid->update(QCPLayoutElement::upLayout);
  const int height = m_plot->axisRect()->rect().height();
  const double fit = height > 0 ? std::max(1.0, height / kMinRowPx) : total;
  QCPRange r = m_plot->yAxis->range();
  if (total <= fit) {
    r = QCPRange(0, total);
  } else {
    const double top = std::clamp(r.lower, 0.0, total - fit);
    r = QCPRange(top, top + fit);
  }
  m_clamping = true;
  m_plot->yAxis->setRange(r);
  m_clamping = false;
}

void TimelineView::zoomToFit() {
  if (m_store->empty()) return;
  // The ops, not the allocations that precede them (setup would squeeze the steps).
  const bool drawn = m_layout.drawnEnd() > m_layout.drawnBegin();
  const double b = static_cast<double>(drawn ? m_layout.drawnBegin() : m_store->beginNs()) / kNsPerMs;
  const double e = static_cast<double>(std::max({drawn ? m_layout.drawnEnd() : m_store->endNs(), stuckEnd(), cursorEnd()})) / kNsPerMs;
  const double pad = std::max((e - b) * 0.01, 1e-4);
  m_plot->xAxis->setRange(b - pad, e + pad);
  fitRows();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::zoomToSteps() {
  const auto& starts = m_layout.stepStarts();
  if (starts.empty() || m_layout.drawnEnd() <= starts.front().ns) {
    zoomToFit();
    return;
  }
  const double b = static_cast<double>(starts.front().ns) / kNsPerMs;
  const double e = static_cast<double>(std::max({m_layout.drawnEnd(), stuckEnd(), cursorEnd()})) / kNsPerMs;
  const double pad = std::max((e - b) * 0.01, 1e-4);
  m_plot->xAxis->setRange(b - pad, e + pad);
  fitRows();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::setCursorTime(std::optional<int64_t> ns) {
  m_cursor = ns;
  m_timeline->setCursorNs(ns);
  if (ns && !m_draggingCursor) revealTime(*ns);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int64_t TimelineView::cursorEnd() const {
  // A stepping stop waits before its op: the gate can lie past the last event drawn.
  return m_cursor && !m_store->empty() ? *m_cursor : 0;
}

void TimelineView::revealTime(int64_t ns) {
  if (m_store->empty()) return;
  const double t = static_cast<double>(ns) / kNsPerMs;
  const QCPRange r = m_plot->xAxis->range();
  const double margin = r.size() * 0.02;
  if (t >= r.lower + margin && t <= r.upper - margin) return;
  // The zoom stays; the view pans so the time is in view with what led to it
  // (a stop past the right edge lands three quarters across).
  const QCPRange to = t > r.upper - margin ? QCPRange(t - r.size() * 0.75, t + r.size() * 0.25)
                                           : QCPRange(t - r.size() * 0.25, t + r.size() * 0.75);
  m_plot->xAxis->setRange(to);  // clamped to the run (and the cursor) in onXRangeChanged
}

size_t TimelineView::drawItemCount() const { return m_timeline->lastItemCount(); }

void TimelineView::onXRangeChanged(const QCPRange& range) {
  if (m_clamping || m_store->empty()) return;
  // Keep the view on the run: at most the run plus a margin, at least 200 ns.
  const double b = static_cast<double>(m_store->beginNs()) / kNsPerMs;
  const double e = static_cast<double>(std::max({m_store->endNs(), stuckEnd(), cursorEnd()})) / kNsPerMs;  // a hang's stuck spans, a stop's gate
  const double total = std::max(e - b, 1e-3);
  const double lo = b - total * 0.05, hi = e + total * 0.05;
  QCPRange r = range;
  if (r.size() < 2e-4) r = QCPRange(r.center() - 1e-4, r.center() + 1e-4);
  if (r.size() > hi - lo) r = QCPRange(lo, hi);
  if (r.lower < lo) r += lo - r.lower;
  if (r.upper > hi) r -= r.upper - hi;
  if (r.lower == range.lower && r.upper == range.upper) return;
  m_clamping = true;
  m_plot->xAxis->setRange(r);
  m_clamping = false;
}

void TimelineView::onYRangeChanged(const QCPRange& range) {
  if (!m_clamping) {
    const double total = std::max(m_layout.totalHeight(), 1.0);
    QCPRange r(range.lower, range.lower + std::min(range.size(), total));
    if (r.upper > total) r -= r.upper - total;
    if (r.lower < 0) r += -r.lower;
    if (r.lower != range.lower || r.upper != range.upper) {
      m_clamping = true;
      m_plot->yAxis->setRange(r);
      m_clamping = false;
    }
  }
  syncScrollBar();
}

void TimelineView::syncScrollBar() {
  const double total = m_layout.totalHeight();
  const QCPRange r = m_plot->yAxis->range();
  const bool needed = !m_store->empty() && total - r.size() > 1e-6;
  const QSignalBlocker block(m_rowScroll);
  m_rowScroll->setVisible(needed);
  if (!needed) return;
  // Hundredths of a row unit: smooth enough, and integral as QScrollBar wants.
  m_rowScroll->setRange(0, static_cast<int>(std::lround((total - r.size()) * 100)));
  m_rowScroll->setPageStep(static_cast<int>(std::lround(r.size() * 100)));
  m_rowScroll->setSingleStep(100);
  m_rowScroll->setValue(static_cast<int>(std::lround(r.lower * 100)));
}

void TimelineView::scrollRows(double delta) {
  m_plot->yAxis->setRange(m_plot->yAxis->range() + delta);  // clamped in onYRangeChanged
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool TimelineView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_plot && event->type() == QEvent::Wheel) {
    auto* wheel = static_cast<QWheelEvent*>(event);
    const bool over_labels = wheel->position().x() < m_plot->axisRect()->left();
    if (wheel->modifiers() & Qt::ShiftModifier || over_labels) {
      const QPoint d = wheel->angleDelta();
      const int steps = d.y() != 0 ? d.y() : d.x();  // Shift turns the wheel horizontal on some systems
      scrollRows(-steps / 120.0 * 1.5);
      return true;
    }
    m_follow = false;
  }
  return QWidget::eventFilter(watched, event);
}

double TimelineView::cursorDistance(int x) const {
  if (!m_cursor) return -1;
  return std::abs(m_plot->xAxis->coordToPixel(static_cast<double>(*m_cursor) / kNsPerMs) - x);
}

void TimelineView::onMousePress(QMouseEvent* event) {
  m_pressPos = event->pos();
  m_follow = false;
  QToolTip::hideText();
  if (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier) && !m_store->empty() &&
      m_plot->axisRect()->rect().contains(event->pos())) {
    // Shift+drag: a time range instead of a pan.
    m_selectingRange = true;
    m_plot->setInteraction(QCP::iRangeDrag, false);
    m_rangeAnchor = static_cast<int64_t>(std::llround(m_plot->xAxis->pixelToCoord(event->pos().x()) * kNsPerMs));
    return;
  }
  // Grabbing the cursor line scrubs instead of panning (this slot runs before
  // the axis rect sees the press, so turning the drag off here takes effect).
  const double d = cursorDistance(event->pos().x());
  if (event->button() == Qt::LeftButton && d >= 0 && d <= 6 && m_plot->axisRect()->rect().contains(event->pos())) {
    m_draggingCursor = true;
    m_plot->setInteraction(QCP::iRangeDrag, false);
  }
}

void TimelineView::onMouseRelease(QMouseEvent* event) {
  if (m_selectingRange) {
    m_selectingRange = false;
    m_plot->setInteraction(QCP::iRangeDrag, true);
    // A shift-click (no drag) clears the range.
    if ((event->pos() - m_pressPos).manhattanLength() <= 3) setSelectedRange(std::nullopt);
    emit rangeChanged();
    return;
  }
  if (m_draggingCursor) {
    m_draggingCursor = false;
    m_plot->setInteraction(QCP::iRangeDrag, true);
    m_plot->setCursor(Qt::ArrowCursor);
    return;
  }
  if (event->button() != Qt::LeftButton || (event->pos() - m_pressPos).manhattanLength() > 3) return;
  if (!m_plot->axisRect()->rect().contains(event->pos()) || m_store->empty()) return;
  const auto hit = eventAt(event->pos());
  selectEvent(hit ? hit->first : -1, hit ? hit->second : -1);
  if (hit) emit rankClicked(hit->first);
  const double ms = m_plot->xAxis->pixelToCoord(event->pos().x());
  const auto ns = static_cast<int64_t>(std::llround(ms * kNsPerMs));
  setCursorTime(ns);
  emit cursorChanged(ns);
}

void TimelineView::onMouseMove(QMouseEvent* event) {
  if (m_selectingRange) {
    const QRect rect = m_plot->axisRect()->rect();
    const int x = std::clamp(event->pos().x(), rect.left(), rect.right());
    const auto ns = static_cast<int64_t>(std::llround(m_plot->xAxis->pixelToCoord(x) * kNsPerMs));
    setSelectedRange(std::make_pair(std::min(ns, m_rangeAnchor), std::max(ns, m_rangeAnchor)));
    return;
  }
  if (m_draggingCursor) {
    const QRect rect = m_plot->axisRect()->rect();
    const int x = std::clamp(event->pos().x(), rect.left(), rect.right());
    const auto ns = static_cast<int64_t>(std::llround(m_plot->xAxis->pixelToCoord(x) * kNsPerMs));
    setCursorTime(ns);
    emit cursorChanged(ns);
    return;
  }
  if (event->buttons() != Qt::NoButton) return;
  const double d = cursorDistance(event->pos().x());
  m_plot->setCursor(d >= 0 && d <= 6 && m_plot->axisRect()->rect().contains(event->pos()) ? Qt::SizeHorCursor
                                                                                            : Qt::ArrowCursor);
  const QString text = tooltipAt(event->pos());
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(event->globalPosition().toPoint(), text, m_plot);
}

bool TimelineView::setCollapseIdenticalRanks(bool collapse, int min_ranks) {
  std::vector<RankFold> folds;
  // Identical means the same times: only a modeled clock's ranks are (a
  // measured clock's jitter makes every rank its own).
  if (collapse && m_store->modeledClock() && !m_store->meta().imported) {
    folds = findRankSymmetry(*m_store).folds;
    std::erase_if(folds, [min_ranks](const RankFold& f) { return static_cast<int>(f.ranks.size()) + 1 < min_ranks; });
  }
  m_layout.setFolds(std::move(folds));
  if (m_selected && m_layout.collapsed(m_selected->first)) selectEvent(-1, -1);  // its rows went
  updateRows();
  if (m_selected) updateArrows();  // rows moved
  m_plot->replot(QCustomPlot::rpQueuedReplot);
  return ranksCollapsed();
}

QString TimelineView::foldText(int fold) const {
  return QString::fromStdString(m_layout.folds().at(static_cast<size_t>(fold)).text(m_store->config()));
}

QString TimelineView::collapsedBandText() const {
  QStringList lines;
  for (size_t i = 0; i < m_layout.folds().size(); ++i) lines << foldText(static_cast<int>(i));
  return lines.join(QLatin1Char('\n'));
}

int TimelineView::collapsedBandAt(const QPoint& pos) const {
  if (!ranksCollapsed() || !m_plot->axisRect()->rect().contains(pos)) return -1;
  const double y = m_plot->yAxis->pixelToCoord(pos.y());
  const int row = m_layout.rowAt(y);
  if (row < 0 || y < 0 || y > m_layout.totalHeight()) return -1;
  return m_layout.rows()[static_cast<size_t>(row)].fold;
}

std::optional<std::pair<int, int32_t>> TimelineView::eventAt(const QPoint& pos) const {
  const QRect rect = m_plot->axisRect()->rect();
  if (!rect.contains(pos) || m_layout.rows().empty()) return std::nullopt;
  const double y = m_plot->yAxis->pixelToCoord(pos.y());
  const int row = m_layout.rowAt(y);
  if (row < 0 || y < 0 || y > m_layout.totalHeight()) return std::nullopt;
  const TimelineRow& r = m_layout.rows()[static_cast<size_t>(row)];
  if (std::abs(y - r.center()) > r.height * (TimelinePlottable::kBoxHeight / 2 + 0.05)) return std::nullopt;
  const double x = pos.x() - rect.left();
  if (const TimelineMarker* m = m_layout.markerAt(row, x, 5.0)) return std::make_pair(r.rank, m->event);
  if (const TimelineDrawItem* item = m_layout.itemAt(row, x); item && item->folded == 1)
    return std::make_pair(r.rank, item->event);
  return std::nullopt;
}

void TimelineView::selectEvent(int rank, int32_t index) {
  if (rank < 0 || index < 0 || rank >= m_store->rankCount() ||
      static_cast<size_t>(index) >= m_store->events(rank).size())
    m_selected.reset();
  else
    m_selected = std::make_pair(rank, index);
  m_selectedGeneration = m_store->generation();
  updateArrows();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::setSelectedRange(std::optional<std::pair<int64_t, int64_t>> range) {
  if (range && range->second <= range->first) range.reset();
  m_range = range;
  updateRangeBand();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::zoomToSelection() {
  if (!m_range) return;
  m_follow = false;
  m_plot->xAxis->setRange(static_cast<double>(m_range->first) / kNsPerMs, static_cast<double>(m_range->second) / kNsPerMs);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::updateRangeBand() {
  for (QCPAbstractItem*& item : {std::ref(m_rangeBand), std::ref(m_rangeLabel)}) {
    if (item) m_plot->removeItem(item);
    item = nullptr;
  }
  if (!m_range) return;
  const double b = static_cast<double>(m_range->first) / kNsPerMs, e = static_cast<double>(m_range->second) / kNsPerMs;
  auto* band = new QCPItemRect(m_plot);
  band->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
  band->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
  band->topLeft->setCoords(b, 0);
  band->bottomRight->setCoords(e, 1);
  QColor fill = Palette::cursor();
  fill.setAlpha(28);
  band->setBrush(fill);
  band->setPen(QPen(Palette::cursor(), 1, Qt::DashLine));
  band->setClipToAxisRect(true);
  band->setSelectable(false);
  m_rangeBand = band;
  auto* label = new QCPItemText(m_plot);
  label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  label->position->setCoords((b + e) / 2, 0);
  label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
  label->setText(quantity_text::duration(m_range->second - m_range->first));
  label->setColor(Palette::cursor());
  label->setBrush(QColor(255, 255, 255, 220));
  label->setPadding(QMargins(4, 1, 4, 1));
  label->setClipToAxisRect(true);
  m_rangeLabel = label;
}

void TimelineView::updateArrows() {
  for (QCPAbstractItem* item : m_arrows) m_plot->removeItem(item);
  m_arrows.clear();
  m_peers.clear();
  if (!m_selected) return;
  // Named variables, not a structured binding: the lambdas below capture rank,
  // which clang before 16 refuses for a binding (the asan preset builds with clang).
  const int rank = m_selected->first;
  const int32_t index = m_selected->second;
  const std::vector<Event>& events = m_store->events(rank);
  // A box's point on its row: y at the row's centre, x at the given time.
  const auto anchor = [&](const Event& e, int64_t ns) -> std::optional<QPointF> {
    const int row = m_layout.rowOf(rank, e.lane);
    if (row < 0) return std::nullopt;
    return QPointF(static_cast<double>(ns) / kNsPerMs, m_layout.rows()[static_cast<size_t>(row)].center());
  };
  const Event& selected = events[static_cast<size_t>(index)];
  if (const auto a = anchor(selected, selected.begin_ns), b = anchor(selected, selected.end_ns); a && b) {
    // Outline the selected op (a box) or ring it (an instant marker).
    const int row = m_layout.rowOf(rank, selected.lane);
    const double half = m_layout.rows()[static_cast<size_t>(row)].height * TimelinePlottable::kBoxHeight / 2;
    auto* outline = new QCPItemRect(m_plot);
    outline->topLeft->setCoords(a->x(), a->y() - half);
    outline->bottomRight->setCoords(b->x(), b->y() + half);
    outline->setPen(QPen(Palette::selection(Theme::Light), 2));
    outline->setBrush(Qt::NoBrush);
    outline->setClipToAxisRect(true);
    m_arrows.push_back(outline);
  }
  // The same collective on every other member of its group: outlined dashed
  // (a folded band's ranks have no rows of their own).
  m_peers = collectivePeers(*m_store, rank, index);
  for (const CollectivePeer& p : m_peers) {
    if (p.rank == rank) continue;
    const Event& e = m_store->events(p.rank)[static_cast<size_t>(p.index)];
    const int row = m_layout.rowOf(p.rank, e.lane);
    if (row < 0) continue;
    const double centre = m_layout.rows()[static_cast<size_t>(row)].center();
    const double half = m_layout.rows()[static_cast<size_t>(row)].height * TimelinePlottable::kBoxHeight / 2;
    auto* outline = new QCPItemRect(m_plot);
    outline->topLeft->setCoords(static_cast<double>(e.begin_ns) / kNsPerMs, centre - half);
    outline->bottomRight->setCoords(static_cast<double>(e.end_ns) / kNsPerMs, centre + half);
    outline->setPen(QPen(Palette::selection(Theme::Light), 1.6, Qt::DashLine));
    outline->setBrush(Qt::NoBrush);
    outline->setClipToAxisRect(true);
    m_arrows.push_back(outline);
  }
  for (const DependencyLink& link : dependencyLinks(*m_store, rank, index)) {
    const Event& from = events[static_cast<size_t>(link.from)];
    const Event& to = events[static_cast<size_t>(link.to)];
    // From where the first op ended (an instant: where it happened) to where
    // the second began; a wait that ends when its op ends points at that end.
    const auto start = anchor(from, from.end_ns);
    const auto end = anchor(to, std::max(to.begin_ns, std::min(from.end_ns, to.end_ns)));
    if (!start || !end) continue;
    auto* line = new QCPItemLine(m_plot);
    line->start->setCoords(*start);
    line->end->setCoords(*end);
    line->setPen(QPen(Palette::selection(Theme::Light), 1.6));
    line->setHead(QCPLineEnding(QCPLineEnding::esSpikeArrow, 9, 11));
    line->setClipToAxisRect(true);
    m_arrows.push_back(line);
  }
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_F) {
    zoomToFit();
    return;
  }
  if (event->key() == Qt::Key_H && m_layout.hasHostTracks()) {
    setShowCpuThreads(!m_layout.showHostTracks());
    return;
  }
  if (event->key() == Qt::Key_P && hasCriticalPath()) {
    setCriticalPathShown(!m_pathShown);
    return;
  }
  if (event->key() == Qt::Key_Z && m_range) {
    zoomToSelection();
    return;
  }
  if (event->key() == Qt::Key_Escape && (m_cursor || m_selected || m_range)) {
    selectEvent(-1, -1);
    if (m_range) {
      setSelectedRange(std::nullopt);
      emit rangeChanged();
    }
    setCursorTime(std::nullopt);
    emit cursorChanged(-1);
    return;
  }
  QWidget::keyPressEvent(event);
}

void TimelineView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  // The axis rect's height is known after the next layout pass.
  QMetaObject::invokeMethod(this, [this] {
    fitRows();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
  }, Qt::QueuedConnection);
}

bool TimelineView::figureHasFolds(int width) {
  // The figure's axis rect is about as wide as the figure less the row labels.
  const QCPRange keys = m_plot->xAxis->range();
  const int rows = static_cast<int>(m_layout.rows().size());
  if (rows == 0) return false;
  m_layout.layout(keys.lower * kNsPerMs, keys.upper * kNsPerMs, std::max(100, width - 260), 0, rows - 1);
  const auto& items = m_layout.items();
  return std::any_of(items.begin(), items.end(), [](const TimelineDrawItem& i) { return i.folded > 1; });
}

bool TimelineView::exportFigure(const QString& path, int width, int height, QString* error, const QString& title,
                                const QString& subtitle) {
  // Show every row in the figure, as long as each stays legible; a selected
  // time range is the figure's time axis (without its band).
  const QCPRange rows_before = m_plot->yAxis->range();
  const QCPRange time_before = m_plot->xAxis->range();
  const auto range = m_range;
  if (range) {
    setSelectedRange(std::nullopt);
    m_plot->xAxis->setRange(static_cast<double>(range->first) / kNsPerMs, static_cast<double>(range->second) / kNsPerMs);
  }
  // 4+ ranks identical to rank 0: one band for them (unless --all-ranks, or already so).
  const auto selected = m_selected;
  const bool collapse_now = FigureExport::options().collapseRanks && !ranksCollapsed() &&
                            setCollapseIdenticalRanks(true);
  const double total = m_layout.totalHeight();
  if (total > 0 && total * 12.0 <= height) {
    m_clamping = true;
    m_plot->yAxis->setRange(0, total);
    m_clamping = false;
  }
  // A slide: no cursor line. Every figure's legend names the striped folds
  // when the figure has any (at its own width; the screen's may differ).
  const bool slide = FigureExport::options().slide;
  if (slide) m_timeline->setCursorNs(std::nullopt);
  m_figureFolds = figureHasFolds(width);
  m_timeline->setMarksTracked(false);
  updateLegend();
  const bool ok = FigureExport::write(path, title, subtitle, {{m_plot, 1.0}}, width, height, error);
  m_figureFolds.reset();
  m_timeline->setMarksTracked(true);
  updateLegend();
  if (slide) m_timeline->setCursorNs(m_cursor);
  if (collapse_now) {
    setCollapseIdenticalRanks(false);
    if (selected && !m_selected) selectEvent(selected->first, selected->second);
  }
  m_clamping = true;
  m_plot->yAxis->setRange(rows_before);
  m_clamping = false;
  if (range) {
    m_plot->xAxis->setRange(time_before);
    setSelectedRange(range);
  }
  m_plot->replot(QCustomPlot::rpQueuedReplot);
  return ok;
}

}  // namespace shardscope
