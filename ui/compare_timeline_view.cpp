#include "compare_timeline_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

#include "figure_export.h"
#include "inspect/event_store.h"
#include "inspect/stuck_collectives.h"
#include "inspect/timeline_layout.h"
#include "palette.h"
#include "plot_style.h"
#include "theme.h"
#include "timeline_legend.h"
#include "timeline_plottable.h"

namespace shardscope {

namespace {

constexpr double kCompareRowPx = 22.0;  // a band's lane height on screen

// Ticks at round times since the aligned step's start, placed on a run's own
// time axis (shifted by its offset): every band's grid lines fall together.
class CompareOffsetTicker : public QCPAxisTicker {
 public:
  explicit CompareOffsetTicker(double offset_ms) : m_offset(offset_ms) {}
  void generate(const QCPRange& range, const QLocale& locale, QChar format, int precision, QVector<double>& ticks,
                QVector<double>* sub_ticks, QVector<QString>* labels) override {
    QCPAxisTicker::generate(QCPRange(range.lower - m_offset, range.upper - m_offset), locale, format, precision, ticks,
                            sub_ticks, labels);
    for (double& t : ticks) t += m_offset;
    if (sub_ticks)
      for (double& t : *sub_ticks) t += m_offset;
  }

 private:
  double m_offset;
};

QString compareLaneTitle(Lane lane) {
  const std::string_view n = laneName(lane);
  return QString::fromLatin1(n.data(), static_cast<int>(n.size()));
}

QString msSpan(int64_t ns) { return QString::number(static_cast<double>(ns) * 1e-6, 'f', 3) + QStringLiteral(" ms"); }

}  // namespace

struct CompareTimelineView::Band {
  TimelineLayout layout;
  QCPAxisRect* rect = nullptr;
  QCPTextElement* title = nullptr;
  TimelinePlottable* plottable = nullptr;
  double offset_ms = 0;
  double shown_rows = 0;  // y units shown (rank 0's rows, or every rank's)
  QString text;
};

CompareTimelineView::CompareTimelineView(QWidget* parent) : QWidget(parent) {
  m_box = new QVBoxLayout(this);
  m_box->setContentsMargins(0, 0, 0, 0);
  m_box->setSpacing(2);
  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 4, 6, 0);
  m_header = new QLabel(this);
  // Wrapped: the runs' names must not widen the central area past a 1280-px screen
  // (a stacked page's minimum counts even while the single-run timeline shows).
  m_header->setWordWrap(true);
  m_stepCombo = new QComboBox(this);
  m_stepCombo->setToolTip(tr("The step every band starts at 0 ms"));
  m_allRanksBox = new QCheckBox(tr("every rank"), this);
  m_allRanksBox->setToolTip(tr("Off: rank 0's lanes per run (symmetric runs repeat them on every rank)"));
  auto* unpin = new QPushButton(tr("Unpin"), this);
  unpin->setToolTip(tr("Back to one run (Ctrl+Shift+K)"));
  // The header on a row of its own: beside the controls it made the central
  // area too wide for the form's dock at 1280×720 (a lesson ends compared).
  m_header->setContentsMargins(6, 4, 36, 0);  // the page's "?" sits in the top-right corner
  m_box->addWidget(m_header);
  controls->addStretch(1);
  controls->addWidget(new QLabel(tr("align at"), this));
  controls->addWidget(m_stepCombo);
  controls->addWidget(m_allRanksBox);
  controls->addWidget(unpin);
  m_box->addLayout(controls);
  // Bands keep legible lanes: past the page's height they scroll.
  m_scroll = new QScrollArea(this);
  m_scroll->setWidgetResizable(true);
  m_scroll->setFrameShape(QFrame::NoFrame);
  m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  m_box->addWidget(m_scroll, 1);
  connect(m_stepCombo, &QComboBox::activated, this, [this](int index) { setAlignStep(m_stepCombo->itemData(index).toInt()); });
  connect(m_allRanksBox, &QCheckBox::toggled, this, &CompareTimelineView::setAllRanks);
  connect(unpin, &QPushButton::clicked, this, &CompareTimelineView::unpinRequested);
  rebuild();
}

CompareTimelineView::~CompareTimelineView() = default;

void CompareTimelineView::setRuns(const std::vector<ComparedRun>& runs) {
  m_runs = runs;
  m_step = -1;
  const std::vector<int> steps = commonSteps(m_runs);
  const QSignalBlocker block(m_stepCombo);
  m_stepCombo->clear();
  for (int s : steps) m_stepCombo->addItem(tr("step %1").arg(s), s);
  m_stepCombo->setCurrentIndex(m_stepCombo->count() - 1);
  rebuild();
}

void CompareTimelineView::setAlignStep(int step) {
  m_step = step;
  rebuild();
}

void CompareTimelineView::setAllRanks(bool all) {
  m_allRanks = all;
  if (m_allRanksBox->isChecked() != all) {
    const QSignalBlocker block(m_allRanksBox);
    m_allRanksBox->setChecked(all);
  }
  rebuild();
}

QString CompareTimelineView::bandText(int band) const {
  return band >= 0 && band < bandCount() ? m_bands[static_cast<size_t>(band)]->text : QString();
}

QString CompareTimelineView::figureTitle() const {
  return tr("Timelines of %1 runs, aligned at step %2's start").arg(m_runs.size()).arg(m_alignment.step);
}

QString CompareTimelineView::differenceText(const StepAlignment::Run& run) {
  const QString sign = run.diff_ns > 0 ? QStringLiteral("+") : run.diff_ns < 0 ? QStringLiteral("−") : QString();
  return QStringLiteral("%1%2 (%3×)").arg(sign, msSpan(std::abs(run.diff_ns))).arg(run.ratio, 0, 'f', 2);
}

void CompareTimelineView::rebuild() {
  // A fresh plot per set of runs: its axis rects, layouts and legend are the runs'.
  m_bands.clear();
  delete m_scroll->takeWidget();
  m_plot = new QCustomPlot(this);
  m_plot->setObjectName(QStringLiteral("compareTimelinePlot"));
  m_plot->setBackground(Palette::background());
  m_plot->setNoAntialiasingOnDrag(true);
  m_scroll->setWidget(m_plot);
  m_alignment = alignAtStep(m_runs, m_step);
  if (m_runs.size() < 2 || m_alignment.step < 0) {
    m_header->setText(m_runs.size() < 2 ? tr("Pin two or more runs to compare them")
                                        : tr("The pinned runs have no step in common to align at"));
    for (QCPAxis* a : m_plot->axisRect()->axes()) a->setVisible(false);
    PlotStyle::followTheme(m_plot);
    m_plot->replot();
    return;
  }
  {
    const QSignalBlocker block(m_stepCombo);
    m_stepCombo->setCurrentIndex(m_stepCombo->findData(m_alignment.step));
  }
  m_header->setText(tr("<b>%1 runs compared</b>, each band's time from the aligned step's start").arg(m_runs.size()));

  QFont tick_font = font();
  tick_font.setPointSizeF(8);
  QFont title_font = font();
  title_font.setPointSizeF(8.5);
  title_font.setBold(true);
  auto* margins = new QCPMarginGroup(m_plot);
  QCPLayoutGrid* grid = m_plot->plotLayout();
  uint32_t kinds = 0;
  for (size_t i = 0; i < m_runs.size(); ++i) {
    auto band = std::make_unique<Band>();
    const ComparedRun& run = m_runs[i];
    const StepAlignment::Run& aligned = m_alignment.runs[i];
    band->layout.sync(*run.store);
    kinds |= band->layout.kinds();
    band->offset_ms = static_cast<double>(aligned.begin_ns) / kNsPerMs;
    band->rect = i == 0 ? m_plot->axisRect() : new QCPAxisRect(m_plot, true);
    band->title = new QCPTextElement(m_plot, QString(), title_font);
    band->title->setTextFlags(Qt::AlignLeft | Qt::AlignVCenter);
    band->title->setMargins(QMargins(8, 4, 4, 0));
    band->text = QStringLiteral("%1 · step %2: %3").arg(QString::fromStdString(run.label)).arg(m_alignment.step).arg(msSpan(aligned.step_ns));
    if (i > 0)
      band->text += tr(", %1 vs %2").arg(differenceText(aligned), QString::fromStdString(m_runs.front().label));
    // Wrapped to the plot's width: a long difference line was cut at the right edge.
    PlotStyle::setWrappedTitle(band->title, band->text);
    if (i == 0) {
      grid->insertRow(0);
      grid->addElement(0, 0, band->title);
    } else {
      const int row = grid->rowCount();
      grid->addElement(row, 0, band->title);
      grid->addElement(row + 1, 0, band->rect);
    }
    QCPAxis* x = band->rect->axis(QCPAxis::atBottom);
    QCPAxis* y = band->rect->axis(QCPAxis::atLeft);
    band->plottable = new TimelinePlottable(x, y, run.store.get(), &band->layout);
    band->plottable->removeFromLegend();
    band->plottable->setStuck(findStuckCollectives(*run.store));
    // Rows: rank 0's lanes, or every rank's.
    auto rows = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    double shown = 0;
    for (const TimelineRow& r : band->layout.rows()) {
      if (!m_allRanks && r.rank > 0) continue;
      rows->addTick(r.center(), QStringLiteral("rank %1 · %2").arg(r.rank).arg(compareLaneTitle(r.lane)));
      shown = std::max(shown, r.top + r.height);
    }
    band->shown_rows = std::max(shown, 1.0);
    y->setTicker(rows);
    y->setRangeReversed(true);
    y->setSubTicks(false);
    y->setTickLength(0, 0);
    y->grid()->setVisible(false);
    y->setTickLabelFont(tick_font);
    y->setBasePen(QPen(QColor(0xB0, 0xB5, 0xBC)));
    y->setRange(0, band->shown_rows);
    x->setTicker(QSharedPointer<QCPAxisTicker>(new CompareOffsetTicker(band->offset_ms)));
    x->grid()->setVisible(false);
    x->setSubTicks(false);
    x->setTickLabelFont(tick_font);
    x->setBasePen(QPen(QColor(0xB0, 0xB5, 0xBC)));
    x->setTickLabels(i + 1 == m_runs.size());
    x->setLabelFont(tick_font);
    x->setLabelColor(QColor(0x55, 0x55, 0x55));
    if (i + 1 == m_runs.size()) {
      const bool modeled = run.store->modeledClock();
      x->setLabel(tr("ms since step %1's start (every band)").arg(m_alignment.step) +
                  (modeled ? tr(" · modeled clock (%1)").arg(QString::fromStdString(run.store->config()->profileName()))
                           : tr(" · measured clock")));
    }
    band->rect->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
    band->rect->setRangeDrag(Qt::Horizontal);
    band->rect->setRangeZoom(Qt::Horizontal);
    band->rect->setRangeZoomFactor(0.8);
    const int index = static_cast<int>(i);
    connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [this, index](const QCPRange& r) { onRangeChanged(index, r); });
    m_bands.push_back(std::move(band));
  }
  // Heights: each band's rows at the same px per lane; the titles take what they need.
  for (int row = 0; row < grid->rowCount(); ++row) {
    auto* text = qobject_cast<QCPTextElement*>(grid->element(row, 0));
    grid->setRowStretchFactor(row, text ? 0.001 : 1.0);
  }
  for (const auto& band : m_bands)
    for (int row = 0; row < grid->rowCount(); ++row)
      if (grid->element(row, 0) == band->rect) grid->setRowStretchFactor(row, band->shown_rows);
  // Legend: the kinds and marks any band draws, as the single-run timeline's
  // (folds and waits follow the paint).
  m_legendKinds = kinds;
  m_legend.reset();
  for (const auto& band : m_bands)
    connect(band->plottable, &TimelinePlottable::marksChanged, this, &CompareTimelineView::updateLegend, Qt::QueuedConnection);
  PlotStyle::styleLegendRow(m_plot, font());
  updateLegend();
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  // The aligned step itself, the longest of the runs' (wheel out for the rest).
  int64_t longest = 1;
  for (const StepAlignment::Run& r : m_alignment.runs) longest = std::max(longest, r.step_ns);
  m_lo = -0.03 * static_cast<double>(longest) / kNsPerMs;
  m_hi = 1.03 * static_cast<double>(longest) / kNsPerMs;
  // Each band's step end: where the difference in step time shows.
  for (size_t i = 0; i < m_bands.size(); ++i) {
    Band& band = *m_bands[i];
    auto* end = new QCPItemStraightLine(m_plot);
    end->setClipAxisRect(band.rect);
    for (QCPItemPosition* p : {end->point1, end->point2}) p->setAxes(band.rect->axis(QCPAxis::atBottom), band.rect->axis(QCPAxis::atLeft));
    const double x = band.offset_ms + static_cast<double>(m_alignment.runs[i].step_ns) / kNsPerMs;
    end->point1->setCoords(x, 0);
    end->point2->setCoords(x, 1);
    end->setPen(QPen(Palette::cursor(), 1.5, Qt::DashLine));
    auto* label = new QCPItemText(m_plot);
    label->setClipAxisRect(band.rect);
    label->position->setAxes(band.rect->axis(QCPAxis::atBottom), band.rect->axis(QCPAxis::atLeft));
    label->position->setCoords(x, 0);
    // Left of its line, or right of it where the step ends early in the shown
    // range (a 6.7 ms step beside a 184 ms one: its label was cut at the left).
    const bool early = (x - band.offset_ms - m_lo) < 0.25 * (m_hi - m_lo);
    label->setPositionAlignment((early ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignTop);
    label->setText(tr("step %1 ends").arg(m_alignment.step));
    QFont f = tick_font;
    f.setBold(true);
    label->setFont(f);
    label->setColor(Palette::cursor());
    label->setBrush(QColor(255, 255, 255, 210));
    label->setPadding(QMargins(3, 1, 3, 1));
  }
  m_syncing = true;
  for (const auto& band : m_bands)
    band->rect->axis(QCPAxis::atBottom)->setRange(m_lo + band->offset_ms, m_hi + band->offset_ms);
  m_syncing = false;
  double total_rows = 0;
  for (const auto& band : m_bands) total_rows += band->shown_rows;
  // The legend's rows on top of the bands' lanes: in a narrow centre (1280×720)
  // it wraps to several rows, which took their height from the bands and cut
  // "step N ends" and the lanes.
  const int bands_px = static_cast<int>(total_rows * kCompareRowPx) + 44 * static_cast<int>(m_bands.size()) + 60;
  m_plot->setMinimumHeight(bands_px);
  QCustomPlot* plot = m_plot;
  connect(plot, &QCustomPlot::afterLayout, plot, [plot, bands_px] {
    const int legend = plot->legend->visible() && plot->legend->layout() == plot->plotLayout()
                           ? static_cast<int>(std::ceil(plot->legend->outerRect().height()))
                           : 0;
    if (plot->minimumHeight() != bands_px + legend) plot->setMinimumHeight(bands_px + legend);
  });
  PlotStyle::followTheme(m_plot);
  m_plot->replot();
}

void CompareTimelineView::updateLegend() {
  if (!m_plot || m_bands.empty()) return;
  TimelineLegendMarks marks;
  marks.kinds = m_legendKinds;
  for (const auto& band : m_bands) {
    marks.waits = marks.waits || band->plottable->drewWaits();
    marks.folds = marks.folds || band->plottable->drewFolds();
    marks.stuck = marks.stuck || !band->plottable->stuck().empty();
  }
  if (m_legend && *m_legend == marks) return;
  m_legend = marks;
  for (int i = m_plot->plottableCount() - 1; i >= 0; --i)
    if (!qobject_cast<TimelinePlottable*>(m_plot->plottable(i))) m_plot->removePlottable(i);
  addTimelineLegendEntries(m_plot, marks);
  PlotStyle::updateLegendRow(m_plot, true);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QStringList CompareTimelineView::legendNames() const {
  QStringList names;
  if (!m_plot) return names;
  for (int i = 0; i < m_plot->legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(m_plot->legend->item(i))) names << item->plottable()->name();
  return names;
}

void CompareTimelineView::onRangeChanged(int band, const QCPRange& range) {
  if (m_syncing) return;
  const double offset = m_bands[static_cast<size_t>(band)]->offset_ms;
  m_lo = range.lower - offset;
  m_hi = range.upper - offset;
  m_syncing = true;
  for (int i = 0; i < bandCount(); ++i)
    if (i != band)
      m_bands[static_cast<size_t>(i)]->rect->axis(QCPAxis::atBottom)->setRange(m_lo + m_bands[static_cast<size_t>(i)]->offset_ms,
                                                                               m_hi + m_bands[static_cast<size_t>(i)]->offset_ms);
  m_syncing = false;
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope
