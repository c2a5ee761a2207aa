#include "compare_memory_view.h"

#include <QLabel>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>

#include "analysis/run_summary.h"
#include "common/units.h"
#include "inspect/run_prediction.h"
#include "inspect/event_store.h"
#include "inspect/memory_series.h"
#include "memory/memory_ledger.h"
#include "palette.h"
#include "plot_style.h"
#include "quantity_text.h"

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

QString CompareMemoryView::summaryText() const { return m_summary->text(); }

QString CompareMemoryView::figureTitle() const {
  const QString psi = m_params > 0 ? tr(", N = %1 M parameters").arg(static_cast<double>(m_params) * 1e-6, 0, 'f', 2) : QString();
  if (m_perLayer)  // N says nothing about activations: one line on a slide
    return tr("Activations per layer, booked by the allocator beside Korthikanti et al.'s formula (rank 0, %1 runs)")
        .arg(m_measured.size());
  if (m_shown == CategoryFilter::modelState())
    return tr("Model state per rank, measured beside its formula (%1; %2 runs%3)").arg(m_source).arg(m_measured.size()).arg(psi);
  return tr("Memory per rank at its peak (%1), measured beside the formulas (%2 runs%3)")
      .arg(QString::fromStdString(m_shown.describe()))
      .arg(m_measured.size())
      .arg(psi);
}

namespace {
// Rank 0's books at the moment the drawn categories peak (the first such moment).
std::array<int64_t, kCategoryCount> peakOfShown(const MemorySeries& series, const CategoryFilter& shown) {
  const MemorySample* peak = series.peakOf(0, shown);
  return peak ? peak->bytes : std::array<int64_t, kCategoryCount>{};
}

// A run's name under its bars on at most three short lines: four runs' long
// names ("flash + selective recompute") side by side would overlap.
QString wrappedTick(const QString& label, int max_chars = 16) {
  QStringList lines;
  QString line;
  for (const QString& word : label.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    if (!line.isEmpty() && line.size() + 1 + word.size() > max_chars) {
      lines << line;
      line.clear();
    }
    line += (line.isEmpty() ? QString() : QStringLiteral(" ")) + word;
  }
  if (!line.isEmpty()) lines << line;
  return lines.join(QLatin1Char('\n'));
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
  // Activations drawn, and every run measured them per layer: the figure the
  // activation lesson asks for (MiB per layer beside Korthikanti et al.), not a
  // stack no formula covers.
  std::vector<ActivationFigures> activations;
  for (const ComparedRun& run : runs)
    if (std::optional<ActivationFigures> a = run.result ? activationFigures(*run.result) : std::nullopt)
      activations.push_back(*a);
  m_perLayer = m_shown.shows(Category::Activation) && !runs.empty() && activations.size() == runs.size();
  m_stack[static_cast<size_t>(Category::Activation)]->setName(
      m_perLayer ? tr("activations per layer, booked (rank 0)") : compareCategoryTitle(Category::Activation));
  if (m_perLayer) {
    setPerLayerRuns(runs, activations);
    return;
  }
  m_plot->yAxis->setLabel(zero_figure ? tr("model state per rank (MiB)") : tr("memory per rank (MiB)"));
  m_plot->clearItems();
  for (QCPBars* b : m_stack) b->data()->clear();
  m_predictedBars->data()->clear();
  m_measured.clear();
  m_predicted.clear();
  m_formulas.clear();
  std::array<bool, kCategoryCount> used{};
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  double top = 0;
  int label_lines = 0;  // the tallest label over a pair of bars
  QStringList lines, sources;
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
    if (p) sources << QString::fromStdString(formulaSource(p->config));
    if (p && formulaCovers(m_shown, p->gathered.bytes > 0)) {
      QStringList parts;
      if (m_shown.shows(Category::Param)) {
        predicted += p->model_state_bytes;
        // Wrapped: "(16)/T x the stage's share of the parameters" on one line
        // ran into the neighbouring runs' labels.
        parts << QStringLiteral("%1\n= %2 B/param")
                     .arg(wrappedTick(QString::fromStdString(p->model_state_formula), 18))
                     .arg(p->bytes_per_param, 0, 'g', 4);
      }
      if (m_shown.shows(Category::Gathered)) {
        predicted += static_cast<double>(p->gathered.bytes);
        parts << tr("gathered %1").arg(quantity_text::sizeText(static_cast<double>(p->gathered.bytes), 1, ByteUnit::MiB));
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
    const QString state_text = quantity_text::sizeText(static_cast<double>(state), 2, ByteUnit::MiB);
    const QString measured = params > 0 && zero_figure ? QStringLiteral("%1\n%2 B/param")
                                              .arg(state_text)
                                              .arg(static_cast<double>(state) / static_cast<double>(params), 0, 'f', 2)
                                        : state_text;
    QCPItemText* measured_text = compareBarLabel(m_plot, 0, 0, measured, true);
    measured_text->position->setType(QCPItemPosition::ptAbsolute);
    measured_text->position->setParentAnchor(formula_text->top);
    measured_text->position->setCoords(0, 0);
    top = std::max({top, static_cast<double>(state) / kMiB, predicted / kMiB});
    label_lines = std::max<int>(label_lines, static_cast<int>(formula_text->text().count(QLatin1Char('\n')) +
                                                              measured.count(QLatin1Char('\n')) + 2));
    const QString ranks = store.meta().ranks > 0 ? tr("P = %1 ranks").arg(store.meta().ranks) : QString();
    ticker->addTick(x, wrappedTick(QString::fromStdString(run.label)) + (ranks.isEmpty() ? QString() : QStringLiteral("\n") + ranks));
    lines << tr("<b>%1</b> %2").arg(QString::fromStdString(run.label).toHtmlEscaped(), state_text);
  }
  // Whose formulas the outlines are: one name when every run's is the same.
  sources.removeDuplicates();
  m_source = sources.size() == 1 ? sources.front() : tr("each run's formula");
  m_predictedBars->setName(m_shown.shows(Category::Gathered) ? tr("predicted (%1 + FSDP's gathered peak)").arg(m_source)
                                                             : tr("predicted (%1)").arg(m_source));
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
  // Headroom for the labels above the bars, more for taller ones (a wrapped
  // pipeline formula's four lines ran off the top at 1280×720).
  m_plot->yAxis->setRange(0, top > 0 ? top * std::max(1.45, 1.0 + 0.11 * label_lines) : 1.0);
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

void CompareMemoryView::setPerLayerRuns(const std::vector<ComparedRun>& runs, const std::vector<ActivationFigures>& activations) {
  m_plot->yAxis->setLabel(tr("activations per layer, rank 0 (MiB)"));
  m_predictedBars->setName(tr("Korthikanti et al.'s formula, per layer"));
  m_plot->clearItems();
  for (QCPBars* b : m_stack) {
    b->data()->clear();
    b->removeFromLegend();
  }
  m_predictedBars->data()->clear();
  m_measured.clear();
  m_predicted.clear();
  m_formulas.clear();
  m_params = runs.front().store->meta().params;
  for (const ComparedRun& run : runs)
    if (run.store->meta().params != m_params) m_params = 0;
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  QStringList lines;
  double top = 0;
  QCPBars* booked = m_stack[static_cast<size_t>(Category::Activation)];
  for (size_t i = 0; i < runs.size(); ++i) {
    const ActivationFigures& a = activations[i];
    const double x = static_cast<double>(i);
    booked->addData(x + kCompareMeasuredOffset, toMiB(a.booked_per_layer));
    m_predictedBars->addData(x + kComparePredictedOffset, toMiB(a.formula_per_layer));
    m_measured.push_back(a.booked_per_layer);
    m_predicted.push_back(a.formula_per_layer);
    const QString formula = tr("Korthikanti et al.\n%1/layer").arg(quantity_text::sizeText(a.formula_per_layer, 1, ByteUnit::MiB));
    m_formulas << formula;
    const double pair_top = toMiB(std::max(static_cast<double>(a.booked_per_layer), a.formula_per_layer));
    QCPItemText* formula_text = compareBarLabel(m_plot, x, pair_top, formula, false);
    QCPItemText* measured_text =
        compareBarLabel(m_plot, 0, 0, tr("%1/layer").arg(quantity_text::sizeText(double(a.booked_per_layer), 1, ByteUnit::MiB)),
                        true);
    measured_text->position->setType(QCPItemPosition::ptAbsolute);
    measured_text->position->setParentAnchor(formula_text->top);
    measured_text->position->setCoords(0, 0);
    top = std::max(top, pair_top);
    ticker->addTick(x, wrappedTick(QString::fromStdString(runs[i].label)));
    // The run's peak as the Runs table and the lesson text give it (all
    // categories, most-loaded rank), and its FLOPs use.
    QString line = tr("<b>%1</b> %2").arg(QString::fromStdString(runs[i].label).toHtmlEscaped(),
                                         quantity_text::sizeText(double(largestTotalPeak(*runs[i].result)), 1, ByteUnit::GiB));
    if (a.mfu > 0) line += tr(", MFU %1 %").arg(100.0 * a.mfu, 0, 'f', 1);
    if (a.hfu > a.mfu) line += tr(", HFU %1 %").arg(100.0 * a.hfu, 0, 'f', 1);
    lines << line;
  }
  booked->addToLegend();
  m_predictedBars->addToLegend();
  PlotStyle::updateLegendRow(m_plot, false);
  m_plot->xAxis->setTicker(ticker);
  m_plot->xAxis->setRange(-0.6, std::max(0.6, static_cast<double>(runs.size()) - 0.4));
  m_plot->yAxis->setRange(0, top > 0 ? top * 1.45 : 1.0);
  m_summary->setText(tr("Activations per layer (%1 layers), booked beside Korthikanti et al.'s formula, as the CLI summary "
                        "prints them. Per run, the %2 and the FLOPs used (HFU: the recompute counted): ")
                         .arg(activations.front().layers)
                         .arg(QString::fromLatin1(kTotalPeakName)) +
                     lines.join(QStringLiteral(" · ")) + QStringLiteral("."));
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope
