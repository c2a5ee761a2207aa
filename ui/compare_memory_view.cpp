#include "compare_memory_view.h"

#include <QLabel>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>

#include "common/units.h"
#include "inspect/run_prediction.h"
#include "inspect/event_store.h"
#include "inspect/memory_series.h"
#include "memory/memory_ledger.h"
#include "palette.h"
#include "plot_style.h"

namespace shardscope {

namespace {

constexpr double kCompareBarWidth = 0.34;
constexpr double kCompareMeasuredOffset = -0.18;
constexpr double kComparePredictedOffset = 0.18;

QString compareCategoryTitle(Category c) {
  const std::string_view n = categoryName(c);
  return QString::fromLatin1(n.data(), static_cast<int>(n.size()));
}

QCPItemText* compareBarLabel(QCustomPlot* plot, double x, double y, const QString& text, bool bold) {
  auto* t = new QCPItemText(plot);
  t->position->setCoords(x, y);
  t->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
  t->setTextAlignment(Qt::AlignHCenter);
  t->setText(text);
  QFont f = plot->font();
  f.setPointSizeF(8);
  f.setBold(bold);
  t->setFont(f);
  t->setColor(QColor(0x22, 0x22, 0x22));
  t->setPadding(QMargins(0, 0, 0, 3));
  t->setClipToAxisRect(false);
  return t;
}

}  // namespace

CompareMemoryView::CompareMemoryView(QWidget* parent) : QWidget(parent) {
  m_summary = new QLabel(this);
  m_summary->setWordWrap(true);
  m_summary->setTextFormat(Qt::RichText);
  m_summary->setContentsMargins(6, 4, 6, 2);

  m_plot = new QCustomPlot(this);
  m_plot->setObjectName(QStringLiteral("compareMemoryBars"));
  m_plot->setMinimumHeight(220);
  PlotStyle::styleAxes(m_plot);
  m_plot->yAxis->setLabel(tr("model state per rank (MiB)"));
  PlotStyle::styleCategoryAxis(m_plot->xAxis);
  for (int c = 0; c < kCategoryCount; ++c) {
    auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    const QColor color = Palette::category(static_cast<Category>(c));
    bars->setName(compareCategoryTitle(static_cast<Category>(c)));
    bars->setBrush(color);
    bars->setPen(QPen(color.darker(125), 0.8));
    bars->setWidth(kCompareBarWidth);
    bars->setStackingGap(0);
    if (c > 0) bars->moveAbove(m_stack[static_cast<size_t>(c - 1)]);
    m_stack[static_cast<size_t>(c)] = bars;
  }
  m_predictedBars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
  m_predictedBars->setWidth(kCompareBarWidth);
  m_predictedBars->setPen(QPen(QColor(0x22, 0x22, 0x22), 1.6));
  m_predictedBars->setBrush(Qt::NoBrush);
  m_predictedBars->setName(tr("predicted (ZeRO paper)"));
  for (int i = 0; i < m_plot->plottableCount(); ++i) m_plot->plottable(i)->removeFromLegend();
  m_plot->legend->setVisible(false);
  m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_plot->legend->setBorderPen(Qt::NoPen);
  QFont legend_font = font();
  legend_font.setPointSizeF(8);
  m_plot->legend->setFont(legend_font);
  m_plot->legend->setIconSize(12, 9);
  m_plot->legend->setRowSpacing(0);
  m_plot->legend->setColumnSpacing(8);

  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->setSpacing(2);
  box->addWidget(m_summary);
  box->addWidget(m_plot, 1);
}

QString CompareMemoryView::figureTitle() const {
  const QString psi = m_params > 0 ? tr(", N = %1 M parameters").arg(static_cast<double>(m_params) * 1e-6, 0, 'f', 2) : QString();
  if (m_shown == CategoryFilter::modelState())
    return tr("Model state per rank, measured beside the ZeRO paper's formula (%1 runs%2)").arg(m_measured.size()).arg(psi);
  return tr("Memory per rank at its peak (%1), measured beside the formulas (%2 runs%3)")
      .arg(QString::fromStdString(m_shown.describe()))
      .arg(m_measured.size())
      .arg(psi);
}

namespace {
// Rank 0's books at the moment the drawn categories peak (the first such moment).
std::array<int64_t, kCategoryCount> peakOfShown(const MemorySeries& series, const CategoryFilter& shown) {
  std::array<int64_t, kCategoryCount> best{};
  if (series.rankCount() == 0) return best;
  if (shown == CategoryFilter::modelState()) {
    if (const MemorySample* peak = series.peakModelState(0)) best = peak->bytes;
    return best;
  }
  int64_t top = -1;
  for (const MemorySample& s : series.samples(0)) {
    int64_t total = 0;
    for (int c = 0; c < kCategoryCount; ++c)
      if (shown.shows(static_cast<Category>(c))) total += s.bytes[static_cast<size_t>(c)];
    if (total > top) {
      top = total;
      best = s.bytes;
    }
  }
  return best;
}

// The drawn categories a formula covers: all of model state (the ZeRO paper)
// or none of it, and gathered parameters (FSDP's unit + prefetch + shards peak).
bool formulaCovers(const CategoryFilter& shown, bool has_gathered_formula) {
  int model_state = 0;
  for (int c = 0; c < kCategoryCount; ++c) {
    const auto cat = static_cast<Category>(c);
    if (!shown.shows(cat)) continue;
    if (isModelState(cat)) ++model_state;
    else if (!(cat == Category::Gathered && has_gathered_formula)) return false;
  }
  return model_state == 0 || model_state == 5;
}
}  // namespace

void CompareMemoryView::setRuns(const std::vector<ComparedRun>& runs, const CategoryFilter& shown) {
  m_shown = shown.empty() ? CategoryFilter::modelState() : shown;
  const bool zero_figure = m_shown == CategoryFilter::modelState();
  m_plot->yAxis->setLabel(zero_figure ? tr("model state per rank (MiB)") : tr("memory per rank (MiB)"));
  m_predictedBars->setName(m_shown.shows(Category::Gathered) ? tr("predicted (ZeRO paper + FSDP's gathered peak)")
                                                             : tr("predicted (ZeRO paper)"));
  m_plot->clearItems();
  for (QCPBars* b : m_stack) b->data()->clear();
  m_predictedBars->data()->clear();
  m_measured.clear();
  m_predicted.clear();
  m_formulas.clear();
  std::array<bool, kCategoryCount> used{};
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  double top = 0;
  QStringList lines;
  m_params = runs.empty() ? 0 : runs.front().store->meta().params;
  for (const ComparedRun& run : runs)
    if (run.store->meta().params != m_params) m_params = 0;  // different models: no one N to name
  for (size_t i = 0; i < runs.size(); ++i) {
    const ComparedRun& run = runs[i];
    const EventStore& store = *run.store;
    const double x = static_cast<double>(i);
    // Rank 0's books at the peak of what is drawn (model state: the ZeRO figure).
    MemorySeries series;
    series.sync(store);
    const std::array<int64_t, kCategoryCount> bytes = peakOfShown(series, m_shown);
    int64_t state = 0;
    for (int c = 0; c < kCategoryCount; ++c) {
      const auto cat = static_cast<Category>(c);
      const int64_t b = m_shown.shows(cat) ? bytes[static_cast<size_t>(c)] : 0;
      m_stack[static_cast<size_t>(c)]->addData(x + kCompareMeasuredOffset, static_cast<double>(b) / kMiB);
      used[static_cast<size_t>(c)] = used[static_cast<size_t>(c)] || b > 0;
      state += b;
    }
    m_measured.push_back(state);
    const int64_t params = store.meta().params;
    double predicted = 0;
    QString formula;
    const std::optional<RunPrediction> p = predictRun(store);
    if (p && formulaCovers(m_shown, p->gathered.bytes > 0)) {
      QStringList parts;
      if (m_shown.shows(Category::Param)) {
        predicted += p->model_state_bytes;
        parts << QStringLiteral("%1\n= %2 B/param")
                     .arg(QString::fromStdString(p->model_state_formula))
                     .arg(p->bytes_per_param, 0, 'g', 4);
      }
      if (m_shown.shows(Category::Gathered)) {
        predicted += static_cast<double>(p->gathered.bytes);
        parts << tr("gathered %1 MiB").arg(toMiB(static_cast<double>(p->gathered.bytes)), 0, 'f', 1);
      }
      formula = parts.join(QStringLiteral("\n+ "));
      m_predictedBars->addData(x + kComparePredictedOffset, toMiB(predicted));
    }
    m_predicted.push_back(predicted);
    m_formulas << formula;
    // Over the pair, centred (narrow docks have no room for a label per bar):
    // the formula, and above it the measurement.
    const double pair_top = std::max(static_cast<double>(state), predicted) / kMiB;
    QCPItemText* formula_text = compareBarLabel(m_plot, x, pair_top, formula.isEmpty() ? tr("no formula") : formula, false);
    const QString measured = params > 0 ? QStringLiteral("%1 MiB\n%2 B/param")
                                              .arg(static_cast<double>(state) / kMiB, 0, 'f', 2)
                                              .arg(static_cast<double>(state) / static_cast<double>(params), 0, 'f', 2)
                                        : QStringLiteral("%1 MiB").arg(static_cast<double>(state) / kMiB, 0, 'f', 2);
    QCPItemText* measured_text = compareBarLabel(m_plot, 0, 0, measured, true);
    measured_text->position->setType(QCPItemPosition::ptAbsolute);
    measured_text->position->setParentAnchor(formula_text->top);
    measured_text->position->setCoords(0, 0);
    top = std::max({top, static_cast<double>(state) / kMiB, predicted / kMiB});
    const QString ranks = store.meta().ranks > 0 ? tr("P = %1 ranks").arg(store.meta().ranks) : QString();
    ticker->addTick(x, QString::fromStdString(run.label) + (ranks.isEmpty() ? QString() : QStringLiteral("\n") + ranks));
    lines << tr("<b>%1</b> %2 MiB").arg(QString::fromStdString(run.label).toHtmlEscaped())
                 .arg(static_cast<double>(state) / kMiB, 0, 'f', 2);
  }
  for (int c = 0; c < kCategoryCount; ++c) {
    if (used[static_cast<size_t>(c)])
      m_stack[static_cast<size_t>(c)]->addToLegend();
    else
      m_stack[static_cast<size_t>(c)]->removeFromLegend();
  }
  if (m_predictedBars->data()->isEmpty())
    m_predictedBars->removeFromLegend();
  else
    m_predictedBars->addToLegend();
  PlotStyle::updateLegendRow(m_plot, false);
  m_plot->xAxis->setTicker(ticker);
  const auto n = static_cast<double>(runs.size());
  m_plot->xAxis->setRange(-0.6, std::max(0.6, n - 0.4));
  // Headroom for the two-line labels above the bars.
  m_plot->yAxis->setRange(0, top > 0 ? top * 1.45 : 1.0);
  if (zero_figure)
    m_summary->setText(tr("Rank 0's model state at its peak, per run (N parameters, P ranks): ") +
                       lines.join(QStringLiteral(" · ")) +
                       tr(". Buckets, gathered parameters and activations are left out; choose them with the memory "
                          "view's Categories button."));
  else
    m_summary->setText(tr("Rank 0 at the peak of %1, per run: ").arg(QString::fromStdString(m_shown.describe())) +
                       lines.join(QStringLiteral(" · ")) + QStringLiteral("."));
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope
