#include "units_view.h"
#include "common/units.h"

#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <qcustomplot.h>

#include "figure_export.h"
#include "inspect/event_store.h"
#include "palette.h"
#include "plot_style.h"
#include "quantity_text.h"

namespace shardscope {

namespace {

constexpr int kThrottleMs = 250;
constexpr int kSliderSteps = 1000;
constexpr int kPlayFrames = 240;  // frames per step: 8 s at 30 fps
constexpr double kCell = 0.94;    // of a grid slot

QString ms(int64_t ns) { return QString::number(static_cast<double>(ns) / kNsPerMs, 'f', 3) + " ms"; }

}  // namespace

std::optional<QFont> UnitsView::cellLabelFont(const std::vector<QFont>& fonts, QSizeF cell) {
  if (cell.height() < 14) return std::nullopt;
  for (const QFont& f : fonts) {
    const QFontMetricsF fm(f);
    bool all = true;
    for (int s = 0; s < kUnitStateCount && all; ++s)
      all = cell.width() >= fm.horizontalAdvance(Palette::unitStateTitle(static_cast<UnitState>(s))) + 4;
    if (all) return f;
  }
  return std::nullopt;
}

// Paints the grid: one cell per (rank, unit) in its state's colour, the state
// named inside when the cell is wide enough.
class UnitGridPlottable : public QCPAbstractPlottable {
 public:
  UnitGridPlottable(QCPAxis* key, QCPAxis* value) : QCPAbstractPlottable(key, value) {
    setSelectable(QCP::stNone);
    setAntialiased(false);
  }
  int ranks = 0, units = 0;
  const std::vector<UnitState>* cells = nullptr;

  double selectTest(const QPointF&, bool, QVariant*) const override { return -1; }
  QCPRange getKeyRange(bool& found, QCP::SignDomain) const override {
    found = ranks > 0;
    return QCPRange(-0.5, ranks - 0.5);
  }
  QCPRange getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const override {
    found = units > 0;
    return QCPRange(-0.5, units - 0.5);
  }

 protected:
  void draw(QCPPainter* painter) override {
    if (!cells || ranks == 0 || units == 0) return;
    const QFont font = FigureExport::paintFont(painter->font(), 7.5);
    painter->setFont(font);
    const QFont small = FigureExport::paintFont(painter->font(), 6.5);
    // Cells are all one size: one font for every name, or none (the legend
    // names the colours), so no state loses its label while others keep theirs.
    const QRectF one = QRectF(QPointF(mKeyAxis->coordToPixel(-kCell / 2), mValueAxis->coordToPixel(-kCell / 2)),
                              QPointF(mKeyAxis->coordToPixel(kCell / 2), mValueAxis->coordToPixel(kCell / 2)))
                           .normalized();
    const std::optional<QFont> label_font = UnitsView::cellLabelFont({font, small}, one.size());
    for (int u = 0; u < units; ++u) {
      for (int r = 0; r < ranks; ++r) {
        const UnitState s = (*cells)[static_cast<size_t>(u) * static_cast<size_t>(ranks) + static_cast<size_t>(r)];
        const QPointF a(mKeyAxis->coordToPixel(r - kCell / 2), mValueAxis->coordToPixel(u - kCell / 2));
        const QPointF b(mKeyAxis->coordToPixel(r + kCell / 2), mValueAxis->coordToPixel(u + kCell / 2));
        const QRectF cell = QRectF(a, b).normalized();
        const QColor c = Palette::unitState(s);
        painter->fillRect(cell, c);
        if (cell.width() >= 4 && cell.height() >= 4) {
          painter->setPen(QPen(s == UnitState::Freed ? Palette::themed(QColor(0xBB, 0xBB, 0xBB)) : c.darker(130), 1,
                               s == UnitState::Freed ? Qt::DashLine : Qt::SolidLine));
          painter->drawRect(cell.adjusted(0, 0, -1, -1));
        }
        if (label_font) {
          painter->setFont(*label_font);
          painter->setPen(Palette::textOn(c));
          painter->drawText(cell, Qt::AlignCenter, Palette::unitStateTitle(s));
        }
      }
    }
  }
  void drawLegendIcon(QCPPainter*, const QRectF&) const override {}
};

UnitsView::UnitsView(const EventStore* store, QWidget* parent)
    : QWidget(parent), m_store(store), m_throttle(new QTimer(this)), m_player(new QTimer(this)),
      m_plot(new QCustomPlot(this)) {
  m_throttle->setSingleShot(true);
  m_throttle->setInterval(kThrottleMs);
  connect(m_throttle, &QTimer::timeout, this, &UnitsView::rebuild);
  m_player->setInterval(33);

  m_play = new QPushButton(tr("▶ Play step"), this);
  m_play->setObjectName(QStringLiteral("playStep"));
  m_play->setToolTip(tr("Animate the shown step from its start (moves the shared cursor)"));
  m_slider = new QSlider(Qt::Horizontal, this);
  m_slider->setObjectName(QStringLiteral("scrub"));
  m_slider->setRange(0, kSliderSteps);
  m_slider->setToolTip(tr("Scrub through the step: moves the cursor every view shares"));
  m_timeLabel = new QLabel(this);
  m_timeLabel->setMinimumWidth(110);
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 4, 6, 0);
  controls->addWidget(m_play);
  controls->addWidget(m_slider, 1);
  controls->addWidget(m_timeLabel);

  m_plot->setObjectName(QStringLiteral("unitsPlot"));
  m_plot->setMinimumHeight(200);
  PlotStyle::styleAxes(m_plot);
  m_unitTicker.reset(new QCPAxisTickerText);
  m_rankTicker.reset(new QCPAxisTickerText);
  m_plot->yAxis->setTicker(m_unitTicker);
  m_plot->yAxis->setRangeReversed(true);
  m_plot->xAxis->setTicker(m_rankTicker);
  for (QCPAxis* a : {m_plot->xAxis, m_plot->yAxis}) {
    a->setSubTicks(false);
    a->setTickLength(0, 0);
    a->grid()->setVisible(false);
  }
  m_grid = new UnitGridPlottable(m_plot->xAxis, m_plot->yAxis);
  m_grid->cells = &m_cells;
  m_grid->removeFromLegend();

  m_info = new QCPTextElement(m_plot, QString());
  QFont info_font = font();
  info_font.setPointSizeF(8.5);
  m_info->setFont(info_font);
  m_info->setTextColor(QColor(0x33, 0x33, 0x33));
  m_plot->plotLayout()->insertRow(0);
  m_plot->plotLayout()->addElement(0, 0, m_info);
  m_plot->plotLayout()->setRowStretchFactor(0, 0.001);

  for (int s = 0; s < kUnitStateCount; ++s) {
    auto* b = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    const QColor c = Palette::unitState(static_cast<UnitState>(s), Theme::Light);  // a legend icon: followTheme maps it
    b->setBrush(c);
    b->setPen(QPen(static_cast<UnitState>(s) == UnitState::Freed ? QColor(0xBB, 0xBB, 0xBB) : c.darker(130)));
    b->setName(Palette::unitStateTitle(static_cast<UnitState>(s)));
  }
  m_plot->legend->setVisible(false);
  m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_plot->legend->setBorderPen(Qt::NoPen);
  QFont legend_font = font();
  legend_font.setPointSizeF(7.5);
  m_plot->legend->setFont(legend_font);
  m_plot->legend->setIconSize(14, 10);

  m_empty = PlotStyle::emptyMessage(m_plot, QString());

  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->setSpacing(2);
  box->addLayout(controls);
  box->addWidget(m_plot, 1);
  m_plot->installEventFilter(this);

  connect(m_slider, &QSlider::valueChanged, this, [this](int value) {
    if (m_scrubbing || m_steps.empty()) return;
    int s = stepAt(m_time);
    if (s < 0) s = static_cast<int>(m_steps.size()) - 1;
    const auto [step, b, e, open] = m_steps[static_cast<size_t>(s)];
    const int64_t t = b + static_cast<int64_t>(std::llround(static_cast<double>(e - b) * value / kSliderSteps));
    setCursorTime(t);
    emit cursorRequested(t);
  });
  connect(m_play, &QPushButton::clicked, this, [this] {
    if (m_player->isActive()) {
      m_player->stop();
      m_play->setText(tr("▶ Play step"));
    } else {
      play();
    }
  });
  connect(m_player, &QTimer::timeout, this, [this] {
    int s = stepAt(m_time);
    if (s < 0 || m_steps.empty()) {
      m_player->stop();
      m_play->setText(tr("▶ Play step"));
      return;
    }
    const auto [step, b, e, open] = m_steps[static_cast<size_t>(s)];
    const int64_t t = m_time + std::max<int64_t>(1, (e - b) / kPlayFrames);
    if (t >= e) {
      m_player->stop();
      m_play->setText(tr("▶ Play step"));
    }
    setCursorTime(std::min(t, e));
    emit cursorRequested(std::min(t, e));
  });
  rebuild();
}

void UnitsView::refresh(bool now) {
  if (now) {
    m_throttle->stop();
    rebuild();
  } else if (!m_throttle->isActive()) {
    m_throttle->start();
  }
}

void UnitsView::play() {
  if (m_steps.empty()) return;
  int s = stepAt(m_time);
  if (s < 0) s = static_cast<int>(m_steps.size()) - 1;
  const int64_t start = m_steps[static_cast<size_t>(s)].begin;
  setCursorTime(start);
  emit cursorRequested(start);
  m_play->setText(tr("■ Stop"));
  m_player->start();
}

bool UnitsView::playing() const { return m_player->isActive(); }

void UnitsView::stepSpans() {
  // Rank 0's steps in time order; step numbers come from the file, so they
  // key a map, never size an array.
  m_steps.clear();
  if (m_store->rankCount() == 0) return;
  std::map<int, std::pair<int64_t, int64_t>> steps;
  int64_t last = 0;
  for (const Event& e : m_store->events(0)) {
    last = std::max(last, e.end_ns);
    if (e.step < 0 || (e.kind != EventKind::StepBegin && e.kind != EventKind::StepEnd)) continue;
    auto& span = steps.try_emplace(e.step, -1, -1).first->second;
    if (e.kind == EventKind::StepBegin) span.first = e.begin_ns;
    else span.second = e.end_ns;
  }
  for (auto& [step, span] : steps) {
    auto [b, e] = span;
    const bool open = e < 0;
    if (open) e = last;  // a step still running, or where the run stopped
    if (b < 0) b = e;
    m_steps.push_back({step, b, e, open && b <= e});
  }
}

int UnitsView::stepAt(int64_t t) const {
  // A step without its end (stepping stops before an op, after the last event
  // so far) runs on: the ranks are in it, not between steps.
  for (size_t s = 0; s < m_steps.size(); ++s)
    if (t >= m_steps[s].begin && (t <= m_steps[s].end || m_steps[s].open)) return static_cast<int>(s);
  return -1;
}

int64_t UnitsView::defaultTime() const {
  // The middle unit's forward in the last step that has one (the steps the
  // events hold, not every number up to the largest).
  const int units = m_states.unitCount();
  for (auto it = m_steps.rbegin(); it != m_steps.rend(); ++it) {
    const auto [b, e] = m_states.computeSpan(units / 2, it->step, true);
    if (b >= 0) return b + (e - b) / 2;
  }
  return m_steps.empty() ? 0 : m_steps.back().begin;
}

void UnitsView::setCursorTime(std::optional<int64_t> ns) {
  m_cursor = ns;
  m_time = ns ? *ns : defaultTime();
  updateGrid();
  updateSlider();
}

void UnitsView::rebuild() {
  m_states.sync(*m_store);
  stepSpans();
  const int ranks = m_states.rankCount(), units = m_states.unitCount();
  m_unitTicker->clear();
  const auto& infos = m_store->meta().units;
  for (int u = 0; u < units; ++u) {
    const int id = m_states.unitId(u);
    QString label = QStringLiteral("unit %1").arg(id);
    const UnitInfo* info = nullptr;
    for (const UnitInfo& i : infos)
      if (i.index == id) info = &i;
    if (info && units <= 40) {
      if (info->blocks.empty())
        label += tr(" · root");
      else if (info->blocks.size() == 1)
        label += QStringLiteral(" · block %1").arg(info->blocks.front());
      else
        label += QStringLiteral(" · blocks %1–%2").arg(info->blocks.front()).arg(info->blocks.back());
    }
    if (units <= 40 || u % ((units + 19) / 20) == 0) m_unitTicker->addTick(u, label);
  }
  m_rankTicker->clear();
  for (int r = 0; r < ranks; ++r)
    if (ranks <= 16 || r % ((ranks + 15) / 16) == 0) m_rankTicker->addTick(r, ranks <= 8 ? tr("rank %1").arg(r) : QString::number(r));
  m_plot->xAxis->setLabel(ranks > 8 ? tr("rank") : QString());
  m_plot->xAxis->setRange(-0.5, std::max(0.5, ranks - 0.5));
  m_plot->yAxis->setRange(-0.5, std::max(0.5, units - 0.5));
  // A profiler trace records no unit's gather, compute and free: rows derived
  // from its memory samples' modules would be made up (every one read "root").
  const bool imported = m_store->meta().imported != nullptr;
  const bool have = !imported && ranks > 0 && units > 0;
  m_grid->ranks = have ? ranks : 0;
  m_grid->units = have ? units : 0;
  m_empty->setVisible(!have);
  m_empty->setText(m_store->empty() ? tr("FSDP unit states appear once a zero3, fsdp or hsdp run starts.")
                   : imported
                       ? tr("A PyTorch profiler trace does not record when each FSDP unit's parameters are gathered, "
                            "computed and freed: no unit states to draw (the memory view books what was allocated "
                            "under each FSDP all-gather as gathered).")
                       : tr("This run has no FSDP units: %1 keeps whole replicas or gradient buckets "
                            "(see the buckets view).")
                             .arg(QString::fromStdString(m_store->meta().strategy)));
  for (QCPAxis* a : {m_plot->xAxis, m_plot->yAxis}) a->setVisible(have);
  m_info->setVisible(have);
  for (int i = 0; i < m_plot->plottableCount(); ++i)
    if (m_plot->plottable(i) != m_grid) {
      if (have)
        m_plot->plottable(i)->addToLegend();
      else
        m_plot->plottable(i)->removeFromLegend();
    }
  PlotStyle::updateLegendRow(m_plot, false);
  m_play->setEnabled(have);
  m_slider->setEnabled(have);
  setCursorTime(m_cursor);
}

void UnitsView::updateGrid() {
  const int ranks = m_states.rankCount(), units = m_states.unitCount();
  m_cells.assign(static_cast<size_t>(ranks) * static_cast<size_t>(units), UnitState::Sharded);
  for (int u = 0; u < units; ++u)
    for (int r = 0; r < ranks; ++r)
      m_cells[static_cast<size_t>(u) * static_cast<size_t>(ranks) + static_cast<size_t>(r)] = m_states.stateAt(r, u, m_time);
  m_info->setText(infoText());
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void UnitsView::updateSlider() {
  const int s = stepAt(m_time);
  const QSignalBlocker block(m_slider);
  m_scrubbing = true;
  if (s >= 0) {
    const auto [step, b, e, open] = m_steps[static_cast<size_t>(s)];
    m_slider->setValue(e > b ? static_cast<int>(std::llround(static_cast<double>(m_time - b) / (e - b) * kSliderSteps)) : 0);
    m_timeLabel->setText(tr("step %1 · %2").arg(step).arg(ms(m_time)));
  } else {
    m_slider->setValue(0);
    m_timeLabel->setText(m_steps.empty() ? QString() : ms(m_time));
  }
  m_scrubbing = false;
}

UnitState UnitsView::cellState(int rank, int unit) const {
  const int ranks = m_states.rankCount();
  if (rank < 0 || rank >= ranks || unit < 0 || unit >= m_states.unitCount()) return UnitState::Sharded;
  return m_cells[static_cast<size_t>(unit) * static_cast<size_t>(ranks) + static_cast<size_t>(rank)];
}

QString UnitsView::infoText() const {
  if (m_states.rankCount() == 0 || m_states.unitCount() == 0) return {};
  const int s = stepAt(m_time);
  const int step = s >= 0 ? m_steps[static_cast<size_t>(s)].step : -1;
  // Phase: rank 0's last compute op that began by now in this step.
  QString phase;
  for (const Event& e : m_store->events(0)) {
    if (e.step != step || e.begin_ns > m_time || e.lane != Lane::Compute) continue;
    if (e.kind == EventKind::Forward) phase = tr("forward");
    else if (e.kind == EventKind::Loss || e.kind == EventKind::Backward) phase = tr("backward");
    else if (e.kind == EventKind::OptimizerStep) phase = tr("update");
  }
  QStringList busy;
  int64_t held = m_states.unattributedBytes(0, m_time);
  for (UnitState st : {UnitState::Computing, UnitState::Gathering, UnitState::Gathered, UnitState::Reducing}) {
    QStringList units;
    for (int u = 0; u < m_states.unitCount(); ++u)
      if (cellState(0, u) == st) {
        units << QString::number(m_states.unitId(u));
        if (holdsParameters(st)) held += m_states.heldBytes(0, u, m_time);
      }
    if (!units.isEmpty())
      busy << QStringLiteral("%1 %2").arg(Palette::unitStateTitle(st), units.join(QStringLiteral(", ")));
  }
  QString text = step >= 0 ? tr("step %1").arg(step) : tr("between steps");
  if (!phase.isEmpty()) text += QStringLiteral(" · ") + phase;
  text += tr(" · t = %1").arg(ms(m_time));
  // Without a cursor the grid shows a chosen moment: say which, in the
  // audience's words (this text goes onto exported slides).
  if (!m_cursor) text += tr(" · the middle unit's forward");
  // Two lines: the dock is narrow, and the busy list grows with prefetch. The
  // bytes are the ledger's gathered bytes, the units' own allocations.
  text += QStringLiteral("\n") + tr("rank 0: ") + (busy.isEmpty() ? tr("every unit sharded or freed") : busy.join(QStringLiteral("; ")));
  text += tr(" · %1 gathered").arg(quantity_text::sizeText(double(held), 2, ByteUnit::MiB));
  return text;
}

QString UnitsView::cellTooltip(int rank, int unit) const {
  const UnitState s = cellState(rank, unit);
  const int id = m_states.unitId(unit);
  QString text = QStringLiteral("<b>unit %1 · rank %2: %3</b>").arg(id).arg(rank).arg(Palette::unitStateTitle(s));
  for (const UnitSpan& span : m_states.spans(rank, unit)) {
    if (m_time < span.begin_ns || m_time >= span.end_ns) continue;
    text += tr("<br>since %1").arg(ms(span.begin_ns));
    if (span.end_ns < std::numeric_limits<int64_t>::max()) text += tr(", until %1").arg(ms(span.end_ns));
  }
  for (const UnitInfo& info : m_store->meta().units)
    if (info.index == id) text += tr("<br>%1 parameters (%2 M)").arg(info.params).arg(static_cast<double>(info.params) * 1e-6, 0, 'f', 2);
  return text;
}

int UnitsView::drawnUnitRows() const { return m_grid->units; }
QString UnitsView::emptyText() const { return m_empty->isHidden() ? QString() : m_empty->text(); }

QString UnitsView::figureTitle() const {
  return tr("FSDP unit states at t = %1").arg(ms(m_time));
}

bool UnitsView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_plot && event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int r = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(help->pos().x())));
    const int u = static_cast<int>(std::lround(m_plot->yAxis->pixelToCoord(help->pos().y())));
    if (m_plot->axisRect()->rect().contains(help->pos()) && r >= 0 && r < m_grid->ranks && u >= 0 &&
        u < m_grid->units)
      QToolTip::showText(help->globalPos(), cellTooltip(r, u), m_plot);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace shardscope
