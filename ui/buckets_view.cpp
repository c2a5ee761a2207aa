#include "buckets_view.h"
#include "quantity_text.h"
#include "common/units.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

#include "figure_export.h"
#include "inspect/event_store.h"
#include "palette.h"
#include "plot_style.h"

namespace shardscope {

namespace {

constexpr double kBar = 0.62;  // of a row
// Rank 0's compute lane above the bucket rows, for context: y in [kStripTop, kStripBottom].
constexpr double kStripTop = -1.15;
constexpr double kStripBottom = -0.3;
constexpr double kAxisTop = -1.35;
constexpr int kThrottleMs = 250;
const QColor kRed(0xC0, 0x00, 0x00);
const QColor kPaleRed(0xFD, 0xE4, 0xE7);

}  // namespace

// Paints the rows of one step: bands, collective bars, ready markers, the
// red marks of a stopped run and the cursor. Reads the view's model directly.
class BucketPlottable : public QCPAbstractPlottable {
 public:
  BucketPlottable(QCPAxis* key, QCPAxis* value, const BucketActivity* activity, const EventStore* store)
      : QCPAbstractPlottable(key, value), m_activity(activity), m_store(store) {
    setSelectable(QCP::stNone);
    setAntialiased(false);
  }

  int step = -1;
  bool failed = false;
  std::optional<int64_t> cursor;

  int rows() const { return m_activity->bucketCount() * m_activity->rankCount(); }
  // Rows on screen: a trace's 32768 ranks paint only what the axis shows.
  std::pair<int, int> visibleRows() const {
    const QCPRange range = mValueAxis->range();
    const int first = static_cast<int>(std::clamp(std::floor(std::min(range.lower, range.upper)), 0.0, double(rows())));
    const int last = static_cast<int>(std::clamp(std::ceil(std::max(range.lower, range.upper)) + 1, 0.0, double(rows())));
    return {first, last};
  }
  int bucketOfRow(int row) const { return m_activity->rankCount() ? row / m_activity->rankCount() : 0; }
  int rankOfRow(int row) const { return m_activity->rankCount() ? row % m_activity->rankCount() : 0; }

  // (rank, bucket) that never readied / that wait in a collective for a rank that never will.
  bool neverReady(int rank, int bucket) const {
    if (!failed) return false;
    for (const auto& n : m_activity->neverReady(step))
      if (n.bucket == bucket && std::find(n.ranks.begin(), n.ranks.end(), rank) != n.ranks.end()) return true;
    return false;
  }
  bool stuck(int rank, int bucket) const {
    if (!failed) return false;
    for (const auto& n : m_activity->neverReady(step))
      if (n.bucket == bucket && std::find(n.ranks.begin(), n.ranks.end(), rank) == n.ranks.end())
        return m_activity->slot(step, rank, bucket).launched();
    return false;
  }

  double selectTest(const QPointF&, bool, QVariant*) const override { return -1; }
  QCPRange getKeyRange(bool& found, QCP::SignDomain) const override {
    const auto [b, e] = m_activity->stepSpan(step);
    found = b >= 0;
    return QCPRange(static_cast<double>(b) / kNsPerMs, static_cast<double>(e) / kNsPerMs);
  }
  QCPRange getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const override {
    found = rows() > 0;
    return QCPRange(kAxisTop, rows());
  }

 protected:
  void draw(QCPPainter* painter) override {
    const QRect clip = clipRect();
    const int ranks = m_activity->rankCount(), n = rows();
    if (n == 0 || step < 0) return;
    const auto x = [&](int64_t t) { return mKeyAxis->coordToPixel(static_cast<double>(t) / kNsPerMs); };
    const auto y = [&](double v) { return mValueAxis->coordToPixel(v); };
    const double row_px = std::abs(y(1) - y(0));
    // Bands: one shade per bucket group, a firm line between groups.
    painter->setPen(Qt::NoPen);
    for (int b = 0; b < m_activity->bucketCount(); ++b) {
      const QRectF band(QPointF(clip.left(), y(b * ranks)), QPointF(clip.right() + 1, y((b + 1) * ranks)));
      painter->fillRect(band.normalized(), Palette::rankBand(b));
    }
    const auto [first_row, last_row] = visibleRows();
    for (int r = first_row; r < last_row; ++r) {
      const int rank = rankOfRow(r), bucket = bucketOfRow(r);
      if (neverReady(rank, bucket)) {
        painter->fillRect(QRectF(QPointF(clip.left(), y(r)), QPointF(clip.right() + 1, y(r + 1))).normalized(), kPaleRed);
      }
    }
    drawComputeStrip(painter, clip, x, y);
    painter->setPen(QPen(Palette::themed(QColor(0xB0, 0xB5, 0xBC)), 1));
    for (int b = 0; b < m_activity->bucketCount(); ++b) {
      const double yy = std::round(y(b * ranks));
      painter->drawLine(QPointF(clip.left(), yy), QPointF(clip.right(), yy));
    }
    const QFont font = FigureExport::paintFont(painter->font(), 7.5);
    painter->setFont(font);
    const QFontMetricsF fm(font);
    // Collective bars, then markers on top.
    for (int r = first_row; r < last_row; ++r) {
      const int rank = rankOfRow(r), bucket = bucketOfRow(r);
      const BucketSlot& s = m_activity->slot(step, rank, bucket);
      const double top = y(r + 0.5 - kBar / 2), bottom = y(r + 0.5 + kBar / 2);
      if (s.gather_begin_ns >= 0) {
        const QColor c = Palette::kind(EventKind::AllGather);
        const QRectF g(QPointF(x(s.gather_begin_ns), y(r + 0.5)), QPointF(std::max(x(s.gather_end_ns), x(s.gather_begin_ns) + 1), bottom));
        painter->fillRect(g.normalized(), c);
      }
      if (!s.launched()) continue;
      if (stuck(rank, bucket)) {
        // Launched, waiting for a rank that never readies the bucket: open-ended.
        const QRectF bar(QPointF(x(s.begin_ns), top), QPointF(std::max<double>(clip.right(), x(s.begin_ns) + 2), bottom));
        painter->fillRect(bar.normalized(), kPaleRed);
        painter->setPen(QPen(kRed, 1));
        for (double k = bar.left(); k < bar.right(); k += 6)
          painter->drawLine(QPointF(k, bar.bottom()), QPointF(std::min(k + bar.height(), bar.right()), bar.top()));
        painter->setPen(QPen(kRed, 1.5));
        painter->drawRect(bar.normalized().adjusted(0, 0, -1, -1));
        if (row_px >= 11) {
          QFont bold = font;
          bold.setBold(true);
          painter->setFont(bold);
          const QString text = QStringLiteral("%1 b%2 waiting for a peer").arg(Palette::kindShort(s.kind)).arg(m_activity->bucketId(bucket));
          const QRectF label = bar.normalized().adjusted(4, 0, -4, 0);
          painter->fillRect(QRectF(label.topLeft(), QSizeF(std::min(label.width(), QFontMetricsF(bold).horizontalAdvance(text) + 6), label.height())), kPaleRed);
          painter->setPen(kRed);
          painter->drawText(label, Qt::AlignVCenter | Qt::AlignLeft, text);
          painter->setFont(font);
        }
        continue;
      }
      const QColor c = Palette::kind(s.kind);
      const QRectF bar(QPointF(x(s.begin_ns), top), QPointF(std::max(x(s.end_ns), x(s.begin_ns) + 1.5), s.gather_begin_ns >= 0 ? y(r + 0.5) : bottom));
      painter->fillRect(bar.normalized(), c);
      if (s.wait_ns > 0 && s.end_ns > s.begin_ns) {
        const QColor pale = QColor::fromRgbF(0.75f + 0.25f * c.redF(), 0.75f + 0.25f * c.greenF(), 0.75f + 0.25f * c.blueF());
        const QRectF wait(bar.normalized().topLeft(), QPointF(x(s.begin_ns + s.wait_ns), bar.normalized().bottom()));
        if (wait.width() >= 1) painter->fillRect(wait, pale);
      }
      if (bar.width() >= 4) {
        painter->setPen(QPen(c.darker(135), 1));
        painter->drawRect(bar.normalized().adjusted(0, 0, -1, -1));
      }
      const QString label = QStringLiteral("%1 b%2").arg(Palette::kindShort(s.kind)).arg(m_activity->bucketId(bucket));
      if (bar.width() > fm.horizontalAdvance(label) + 6 && row_px >= 11) {
        painter->setPen(Palette::textOn(c));
        painter->drawText(bar.normalized().adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, label);
      }
    }
    painter->setRenderHint(QPainter::Antialiasing, true);
    for (int r = first_row; r < last_row; ++r) {
      const int rank = rankOfRow(r), bucket = bucketOfRow(r);
      const BucketSlot& s = m_activity->slot(step, rank, bucket);
      const double cy = y(r + 0.5);
      const double half = std::clamp(row_px * 0.32, 3.0, 6.5);
      if (s.ready()) {
        const double xx = x(s.ready_ns);
        const QColor c = Palette::kind(EventKind::BucketReady);
        const QPointF tri[3] = {{xx - half, cy - half}, {xx + half, cy - half}, {xx, cy + half * 0.7}};
        painter->setPen(QPen(c.darker(150), 1));
        painter->setBrush(c);
        painter->drawPolygon(tri, 3);
      } else if (neverReady(rank, bucket)) {
        // Where the marker should be: when the other ranks readied it.
        int64_t expected = -1;
        for (int o = 0; o < ranks; ++o) expected = std::max(expected, m_activity->slot(step, o, bucket).ready_ns);
        const double xx = x(expected);
        painter->setPen(QPen(kRed, 2));
        painter->drawLine(QPointF(xx - half, cy - half), QPointF(xx + half, cy + half));
        painter->drawLine(QPointF(xx - half, cy + half), QPointF(xx + half, cy - half));
        QFont bold = font;
        bold.setBold(true);
        painter->setFont(bold);
        painter->drawText(QRectF(QPointF(xx + half + 4, cy - row_px / 2), QPointF(clip.right(), cy + row_px / 2)),
                          Qt::AlignVCenter | Qt::AlignLeft,
                          QStringLiteral("rank %1 never readied bucket %2").arg(rank).arg(m_activity->bucketId(bucket)));
        painter->setFont(font);
      }
    }
    painter->setBrush(Qt::NoBrush);
    painter->setRenderHint(QPainter::Antialiasing, false);
    if (cursor) {
      const double xx = x(*cursor);
      if (xx >= clip.left() && xx <= clip.right()) {
        painter->setPen(QPen(Palette::cursor(), 1.5));
        painter->drawLine(QPointF(xx, clip.top()), QPointF(xx, clip.bottom()));
      }
    }
  }
  void drawLegendIcon(QCPPainter*, const QRectF&) const override {}

 private:
  template <typename X, typename Y>
  void drawComputeStrip(QCPPainter* painter, const QRect& clip, const X& x, const Y& y) const {
    if (!m_store || m_store->rankCount() == 0) return;
    const double top = y(kStripTop), bottom = y(kStripBottom);
    for (const Event& e : m_store->events(0)) {
      if (e.step != m_activity->stepId(step) || e.lane != Lane::Compute || isInstant(e.kind)) continue;
      const QColor c = Palette::kind(e.kind);
      const QRectF box(QPointF(x(e.begin_ns), top), QPointF(std::max(x(e.end_ns), x(e.begin_ns) + 1), bottom));
      if (box.normalized().right() < clip.left() || box.normalized().left() > clip.right()) continue;
      painter->fillRect(box.normalized(), c);
      if (box.width() >= 4) {
        painter->setPen(QPen(c.darker(135), 1));
        painter->drawRect(box.normalized().adjusted(0, 0, -1, -1));
      }
    }
  }

  const BucketActivity* m_activity;
  const EventStore* m_store;
};

BucketsView::BucketsView(const EventStore* store, QWidget* parent)
    : QWidget(parent), m_store(store), m_throttle(new QTimer(this)), m_plot(new QCustomPlot(this)) {
  m_throttle->setSingleShot(true);
  m_throttle->setInterval(kThrottleMs);
  connect(m_throttle, &QTimer::timeout, this, &BucketsView::rebuild);

  m_stepCombo = new QComboBox(this);
  m_stepCombo->setToolTip(tr("The training step shown. Placing the timeline cursor in a step shows that step."));
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 4, 6, 0);
  controls->addWidget(new QLabel(tr("Step"), this));
  controls->addWidget(m_stepCombo);
  controls->addStretch(1);

  m_plot->setObjectName(QStringLiteral("bucketsPlot"));
  m_plot->setMinimumHeight(200);
  PlotStyle::styleAxes(m_plot);
  m_plot->xAxis->setLabel(tr("time since run start (ms)"));
  m_plot->xAxis->grid()->setVisible(true);
  m_plot->yAxis->grid()->setVisible(false);
  m_ticker.reset(new QCPAxisTickerText);
  // The rows' height is known after a layout (a resize, a dock moved): relabel when it crosses a text line.
  connect(m_plot, &QCustomPlot::afterLayout, this, [this] { updateRowTicks(false); });
  m_plot->yAxis->setTicker(m_ticker);
  m_plot->yAxis->setRangeReversed(true);
  m_plot->yAxis->setSubTicks(false);
  m_plot->yAxis->setTickLength(0, 0);
  m_rows = new BucketPlottable(m_plot->xAxis, m_plot->yAxis, &m_activity, m_store);
  m_rows->removeFromLegend();
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
  m_plot->axisRect()->setRangeZoom(Qt::Horizontal);

  m_info = new QCPTextElement(m_plot, QString());
  QFont info_font = font();
  info_font.setPointSizeF(8.5);
  m_info->setFont(info_font);
  m_info->setTextFlags(Qt::AlignLeft | Qt::AlignVCenter);
  m_info->setMargins(QMargins(8, 4, 8, 2));
  m_plot->plotLayout()->insertRow(0);
  m_plot->plotLayout()->addElement(0, 0, m_info);
  m_plot->plotLayout()->setRowStretchFactor(0, 0.001);

  // Legend entries: empty plottables whose only job is an icon and a name.
  auto* ready = new QCPGraph(m_plot->xAxis, m_plot->yAxis);
  ready->setLineStyle(QCPGraph::lsNone);
  const QColor rc = Palette::kind(EventKind::BucketReady);
  ready->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, rc.darker(150), rc, 8));
  ready->setName(tr("bucket ready (last gradient arrived)"));
  for (EventKind k : {EventKind::AllReduce, EventKind::ReduceScatter, EventKind::AllGather, EventKind::Forward,
                      EventKind::Backward, EventKind::OptimizerStep, EventKind::Wait}) {
    auto* b = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    b->setBrush(Palette::kind(k));
    b->setPen(QPen(Palette::kind(k).darker(135)));
    b->setName(k == EventKind::AllGather ? tr("all-gather (updated parameters)")
               : k == EventKind::Wait    ? tr("compute waits")
                                         : Palette::kindTitle(k));
    b->setObjectName(QString::number(static_cast<int>(k)));
  }
  auto* red = new QCPBars(m_plot->xAxis, m_plot->yAxis);
  red->setBrush(kPaleRed);
  red->setPen(QPen(kRed, 1.5));
  red->setName(tr("never ready / stuck"));
  red->setObjectName(QStringLiteral("red"));
  m_plot->legend->setVisible(false);
  m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_plot->legend->setWrap(4);
  m_plot->legend->setBorderPen(Qt::NoPen);
  QFont legend_font = font();
  legend_font.setPointSizeF(7.5);
  m_plot->legend->setFont(legend_font);
  m_plot->legend->setIconSize(14, 9);
  m_plot->legend->setRowSpacing(0);

  m_empty = PlotStyle::emptyMessage(m_plot, tr("Bucket firing appears for ddp, zero1 and zero2 runs."));

  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->setSpacing(2);
  box->addLayout(controls);
  box->addWidget(m_plot, 1);
  m_plot->installEventFilter(this);
  m_plot->setMouseTracking(true);

  connect(m_stepCombo, &QComboBox::activated, this, [this](int index) {
    m_userStep = true;
    setStep(index);
  });
  rebuild();
}

void BucketsView::refresh(bool now) {
  if (now) {
    m_throttle->stop();
    rebuild();
  } else if (!m_throttle->isActive()) {
    m_throttle->start();
  }
}

bool BucketsView::failed() const { return !m_error.isEmpty(); }

void BucketsView::setRunError(const QString& message) {
  m_error = message;
  if (failed()) m_userStep = false;
  rebuild();
}

void BucketsView::setCursorTime(std::optional<int64_t> ns) {
  m_cursor = ns;
  m_rows->cursor = ns;
  if (ns && !m_userStep) {
    const int s = m_activity.stepAt(*ns);
    if (s >= 0 && s != m_step) {
      setStep(s);
      m_userStep = false;
      return;
    }
  }
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void BucketsView::setStep(int step) {
  m_step = std::clamp(step, -1, m_activity.stepCount() - 1);
  if (m_stepCombo->currentIndex() != m_step) {
    const QSignalBlocker block(m_stepCombo);
    m_stepCombo->setCurrentIndex(m_step);
  }
  updateRows();
}

void BucketsView::rebuild() {
  if (m_store->generation() != m_generation) {
    m_generation = m_store->generation();
    m_userStep = false;  // a new run: show its default step
  }
  m_activity.sync(*m_store);
  const int steps = m_activity.stepCount();
  if (m_stepCombo->count() != steps) {
    const QSignalBlocker block(m_stepCombo);
    m_stepCombo->clear();
    for (int s = 0; s < steps; ++s) m_stepCombo->addItem(tr("step %1").arg(m_activity.stepId(s)));
  }
  if (!m_userStep || m_step >= steps) m_step = m_activity.defaultStep();
  {
    const QSignalBlocker block(m_stepCombo);
    m_stepCombo->setCurrentIndex(m_step);
  }
  updateRows();
}

void BucketsView::updateRows() {
  const bool have = m_activity.bucketCount() > 0 && m_activity.rankCount() > 0 && m_step >= 0;
  m_rows->step = m_step;
  m_rows->failed = failed();
  m_empty->setVisible(!have);
  m_empty->setText(m_store->empty() ? tr("Bucket firing appears once a ddp, zero1 or zero2 run starts.")
                   : m_activity.bucketCount() == 0
                       ? tr("This run has no gradient buckets: %1 shards by FSDP units (see the units view).")
                             .arg(QString::fromStdString(m_store->meta().strategy))
                       : tr("No bucket has been used yet."));
  for (QCPAxis* a : {m_plot->xAxis, m_plot->yAxis}) a->setVisible(have);
  const int rows = m_activity.bucketCount() * m_activity.rankCount();
  // Legend: only the kinds this run draws, and the red entry for a stopped run.
  bool kinds[3] = {false, false, false};
  if (have) {
    const BucketActivity::StepTotals totals = m_activity.totals(m_step);
    kinds[0] = totals.all_reduce;
    kinds[1] = totals.reduce_scatter;
    kinds[2] = totals.gather;
  }
  bool any_red = false;
  if (failed())
    for (const auto& n : m_activity.neverReady(m_step)) any_red = any_red || !n.ranks.empty();
  for (int i = 0; i < m_plot->plottableCount(); ++i) {
    QCPAbstractPlottable* p = m_plot->plottable(i);
    if (p == m_rows) continue;
    bool want = have;
    if (p->objectName() == QString::number(static_cast<int>(EventKind::AllReduce))) want = want && kinds[0];
    if (p->objectName() == QString::number(static_cast<int>(EventKind::ReduceScatter))) want = want && kinds[1];
    if (p->objectName() == QString::number(static_cast<int>(EventKind::AllGather))) want = want && kinds[2];
    if (p->objectName() == QLatin1String("red")) want = want && any_red;
    if (want)
      p->addToLegend();
    else
      p->removeFromLegend();
  }
  PlotStyle::updateLegendRow(m_plot, false);
  if (have) {
    const auto [b, e] = m_activity.stepSpan(m_step);
    const double lo = static_cast<double>(b) / kNsPerMs, hi = static_cast<double>(e) / kNsPerMs;
    const double pad = std::max((hi - lo) * 0.02, 1e-4);
    // A stopped run's red label sits right of its marker: leave room for it.
    m_plot->xAxis->setRange(lo - pad, hi + pad + (any_red ? (hi - lo) * 0.25 : 0.0));
    m_plot->yAxis->setRange(kAxisTop, rows);
  }
  updateRowTicks(true);
  updateInfo();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void BucketsView::updateRowTicks(bool force) {
  const int ranks = m_activity.rankCount(), rows = m_activity.bucketCount() * ranks;
  // One label per row where rows are at least a text line high (and not too
  // many); else one per bucket, so labels never overlap on a short screen.
  const double row_px = m_plot->axisRect()->height() / std::max(1.0, m_plot->yAxis->range().size());
  const bool per_row = rows <= 48 && row_px >= QFontMetricsF(m_plot->yAxis->tickLabelFont()).height();
  if (!force && per_row == m_rowLabels) return;
  m_rowLabels = per_row;
  m_ticker->clear();
  m_ticker->addTick((kStripTop + kStripBottom) / 2, tr("rank 0 compute"));
  if (per_row) {
    for (int row = 0; row < rows; ++row) {
      const int b = row / std::max(ranks, 1), r = row % std::max(ranks, 1);
      m_ticker->addTick(row + 0.5, QStringLiteral("b%1 · rank %2").arg(m_activity.bucketId(b)).arg(r));
    }
  } else {
    for (int b = 0; b < m_activity.bucketCount(); ++b)
      m_ticker->addTick(b * ranks + ranks / 2 + 0.5, QStringLiteral("bucket %1").arg(m_activity.bucketId(b)));
  }
  if (!force) m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void BucketsView::setInfoWrap(int chars) {
  m_infoChars = chars;
  updateInfo();
}

void BucketsView::updateInfo() {
  m_info->setVisible(m_step >= 0 && m_activity.bucketCount() > 0);
  int chars = m_infoChars;
  if (chars <= 0) {
    const double char_px = std::max(4.0, QFontMetricsF(m_info->font()).averageCharWidth());
    chars = std::max(40, static_cast<int>((m_plot->width() - 24) / char_px));
  }
  m_info->setText(PlotStyle::wrappedText(infoText(), chars));
  m_info->setTextColor(failed() ? kRed : QColor(0x33, 0x33, 0x33));
}

QString BucketsView::infoText() const {
  if (m_step < 0 || m_activity.bucketCount() == 0) return {};
  const int ranks = m_activity.rankCount(), buckets = m_activity.bucketCount();
  if (failed()) {
    QString head;
    const auto never = m_activity.neverReady(m_step);
    if (!never.empty()) {
      QStringList who;
      for (int r : never.front().ranks) who << QString::number(r);
      head = tr("Step %1: bucket %2 never fired: rank %3 never readied it.")
                 .arg(m_activity.stepId(m_step))
                 .arg(m_activity.bucketId(never.front().bucket))
                 .arg(who.join(QStringLiteral(", ")));
    }
    return head + (head.isEmpty() ? QString() : QStringLiteral(" ")) + m_error;
  }
  // Rank 0: the order buckets fired in, and how many launched before backward ended.
  std::vector<std::pair<int64_t, int>> order;
  for (int b = 0; b < buckets; ++b)
    if (m_activity.slot(m_step, 0, b).launched()) order.emplace_back(m_activity.slot(m_step, 0, b).begin_ns, m_activity.bucketId(b));
  std::sort(order.begin(), order.end());
  int64_t backward_end = -1;
  for (const Event& e : m_store->events(0))
    if (e.step == m_activity.stepId(m_step) && e.kind == EventKind::Backward) backward_end = std::max(backward_end, e.end_ns);
  int overlapped = 0;
  QStringList fired;
  for (const auto& [t, b] : order) {
    fired << QString::number(b);
    if (backward_end >= 0 && t < backward_end) ++overlapped;
  }
  const bool zero = m_activity.slot(m_step, 0, 0).kind == EventKind::ReduceScatter;
  return tr("step %1 · %2 buckets × %3 ranks · rank 0 fired them in order %4 · %5 of %6 %7 launched while backward "
            "was still computing")
      .arg(m_activity.stepId(m_step))
      .arg(buckets)
      .arg(ranks)
      .arg(fired.join(QLatin1Char(' ')))
      .arg(overlapped)
      .arg(order.size())
      .arg(zero ? tr("reduce-scatters") : tr("all-reduces"));
}

int BucketsView::readyMarkerCount() const { return m_activity.totals(m_step).ready; }

int BucketsView::collectiveBarCount() const { return m_activity.totals(m_step).launched; }

bool BucketsView::neverReadyHighlighted(int rank, int bucket) const { return m_rows->neverReady(rank, bucket); }
bool BucketsView::stuckHighlighted(int rank, int bucket) const { return m_rows->stuck(rank, bucket); }

QString BucketsView::bucketTooltip(int rank, int bucket) const {
  QStringList lines;
  const BucketInfo* info = nullptr;
  for (const BucketInfo& b : m_store->meta().buckets)
    if (b.index == m_activity.bucketId(bucket)) info = &b;
  lines << QStringLiteral("<b>bucket %1 · rank %2</b>").arg(m_activity.bucketId(bucket)).arg(rank);
  if (info)
    lines << QStringLiteral("%1 · %2 parameters")
                 .arg(quantity_text::sizeText(double(info->bytes), 2, ByteUnit::MiB))
                 .arg(info->params.size());
  const BucketSlot& s = m_activity.slot(m_step, rank, bucket);
  if (s.ready())
    lines << QStringLiteral("ready at %1 (its last gradient arrived)").arg(quantity_text::ms(s.ready_ns));
  else
    lines << QStringLiteral("<span style='color:#C00000'>never ready in step %1</span>").arg(m_activity.stepId(m_step));
  if (stuckHighlighted(rank, bucket)) {
    lines << QStringLiteral("<span style='color:#C00000'>%1 launched at %2, waiting for a rank that never readied the bucket</span>")
                 .arg(Palette::kindTitle(s.kind))
                 .arg(quantity_text::ms(s.begin_ns));
  } else if (s.launched()) {
    lines << QStringLiteral("%1 %2 – %3 (%4%5)")
                 .arg(Palette::kindTitle(s.kind), quantity_text::ms(s.begin_ns), quantity_text::ms(s.end_ns), quantity_text::duration(s.end_ns - s.begin_ns))
                 .arg(s.wait_ns > 0 ? QStringLiteral(", %1 waiting for peers").arg(quantity_text::duration(s.wait_ns)) : QString());
  }
  if (s.gather_begin_ns >= 0)
    lines << QStringLiteral("all-gather of the updated parameters %1 (%2)").arg(quantity_text::ms(s.gather_begin_ns), quantity_text::duration(s.gather_end_ns - s.gather_begin_ns));
  if (info) {
    constexpr int kMaxNames = 24;
    QStringList names;
    for (size_t i = 0; i < info->params.size() && i < kMaxNames; ++i) names << QString::fromStdString(info->params[i]).toHtmlEscaped();
    if (info->params.size() > kMaxNames) names << tr("… %1 more").arg(info->params.size() - kMaxNames);
    lines << QStringLiteral("<i>parameters, in bucket order:</i><br>") + names.join(QStringLiteral("<br>"));
  }
  return lines.join(QStringLiteral("<br>"));
}

QString BucketsView::figureTitle() const {
  return m_step >= 0 ? tr("Gradient buckets, step %1: ready markers and collectives per rank").arg(m_activity.stepId(m_step))
                     : tr("Gradient buckets");
}

bool BucketsView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_plot && event->type() == QEvent::Resize && m_infoChars <= 0) {
    updateInfo();  // re-wrap the line above the rows to the new width
    return QWidget::eventFilter(watched, event);
  }
  if (watched == m_plot && event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QRect rect = m_plot->axisRect()->rect();
    const int rows = m_activity.bucketCount() * m_activity.rankCount();
    if (rect.contains(help->pos()) && rows > 0 && m_step >= 0) {
      const int row = static_cast<int>(std::floor(m_plot->yAxis->pixelToCoord(help->pos().y())));
      if (row >= 0 && row < rows) {
        QToolTip::showText(help->globalPos(), bucketTooltip(row % m_activity.rankCount(), row / m_activity.rankCount()), m_plot);
        return true;
      }
    }
    QToolTip::hideText();
    return true;
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace shardscope
