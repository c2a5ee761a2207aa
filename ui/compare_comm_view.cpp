#include "compare_comm_view.h"

#include <QHeaderView>
#include <QResizeEvent>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>

#include "comm_stats_model.h"
#include "common/units.h"
#include "inspect/event_store.h"
#include "palette.h"
#include "plot_style.h"
#include "quantity_text.h"

namespace shardscope {

namespace {


QString commMibText(int64_t bytes) { return QString::number(toMiB(bytes), 'f', 2); }
QString commMsText(int64_t ns) { return QString::number(static_cast<double>(ns) * 1e-6, 'f', 3); }
// A bar's label: three significant figures or more (5130 ms, 45.1 ms, 0.812 ms).
QString stepLabelText(double ms) { return QString::number(ms, 'f', ms >= 100 ? 0 : ms >= 10 ? 1 : 3) + QStringLiteral(" ms"); }

// Colours as the single-run communication view's time chart: neutral light
// (hidden) and dark (exposed), none of the collectives' colours.
const QColor kCompareHidden(0xC9, 0xD3, 0xDD);
const QColor kCompareExposed(0x3A, 0x3A, 0x3A);
const QColor kCompareRest(0x8F, 0xA9, 0xC4);

QCPBars* timeBars(QCustomPlot* plot, const QColor& c, const QString& name) {
  auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
  bars->setBrush(c);
  bars->setPen(QPen(c.darker(125), 0.8));
  bars->setWidth(0.34);
  bars->setStackingGap(0);
  bars->setName(name);
  return bars;
}

void styleCompareLegend(QCustomPlot* plot, const QFont& base) {
  plot->legend->setVisible(false);
  plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot->legend->setBorderPen(Qt::NoPen);
  QFont legend_font = base;
  legend_font.setPointSizeF(8);
  plot->legend->setFont(legend_font);
  plot->legend->setIconSize(12, 9);
}

// A bar label shows only where it fits its run's slot: with many runs in a
// narrow dock, labels of neighbouring runs never overlap (the table has the numbers).
void fitBarLabels(QCustomPlot* plot) {
  const double slot = std::abs(plot->xAxis->coordToPixel(1) - plot->xAxis->coordToPixel(0));
  for (int i = 0; i < plot->itemCount(); ++i)
    if (auto* label = qobject_cast<QCPItemText*>(plot->item(i))) {
      const QFontMetricsF metrics(label->font());
      double widest = 0;
      for (const QString& line : label->text().split(QLatin1Char('\n'))) widest = std::max(widest, metrics.horizontalAdvance(line));
      label->setVisible(widest + 4 <= slot * 0.95);
    }
}

QCPItemText* barLabel(QCustomPlot* plot, double x, double y, const QString& text) {
  auto* label = new QCPItemText(plot);
  label->position->setCoords(x, y);
  label->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
  label->setTextAlignment(Qt::AlignHCenter);
  label->setText(text);
  QFont font = plot->font();
  font.setPointSizeF(8);
  font.setBold(true);
  label->setFont(font);
  label->setColor(QColor(0x22, 0x22, 0x22));
  label->setPadding(QMargins(0, 0, 0, 3));
  label->setClipToAxisRect(false);
  return label;
}

}  // namespace

CompareCommView::CompareCommView(QWidget* parent) : QWidget(parent) {
  m_table = new QTableWidget(this);
  m_table->setObjectName(QStringLiteral("compareCommTable"));
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setAlternatingRowColors(true);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  m_table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 4);

  m_plot = new QCustomPlot(this);
  m_plot->setObjectName(QStringLiteral("compareCommBytes"));
  m_plot->setMinimumHeight(180);
  PlotStyle::styleAxes(m_plot);
  m_plot->yAxis->setLabel(tr("MiB rank 0 sent in the step"));
  PlotStyle::styleCategoryAxis(m_plot->xAxis);
  for (int k = 0; k <= kCommViewKindCount; ++k) {
    auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    const bool tp = k == kCommViewKindCount;
    const QColor c = tp ? Palette::kind(EventKind::AllReduce).lighter(150) : Palette::kind(kCommViewKinds[k]);
    bars->setBrush(tp ? QBrush(c, Qt::BDiagPattern) : QBrush(c));
    bars->setPen(QPen(c.darker(130), 0.8));
    bars->setWidth(0.34);
    bars->setStackingGap(0);
    bars->setName(tp ? tr("tensor-parallel group") : Palette::kindTitle(kCommViewKinds[k]));
    if (k > 0) bars->moveAbove(m_kindBars[k - 1]);
    m_kindBars[k] = bars;
  }
  m_expected = new QCPBars(m_plot->xAxis, m_plot->yAxis);
  m_expected->setWidth(0.34);
  m_expected->setPen(QPen(QColor(0x22, 0x22, 0x22), 1.6));
  m_expected->setBrush(Qt::NoBrush);
  m_expected->setName(tr("formula (ring collectives)"));
  styleCompareLegend(m_plot, font());

  m_timePlot = new QCustomPlot(this);
  m_timePlot->setObjectName(QStringLiteral("compareCommTime"));
  m_timePlot->setMinimumHeight(180);
  PlotStyle::styleAxes(m_timePlot);
  m_timePlot->yAxis->setLabel(tr("ms in the step (rank 0)"));
  PlotStyle::styleCategoryAxis(m_timePlot->xAxis);
  m_rest = timeBars(m_timePlot, kCompareRest, tr("step without exposed communication"));
  m_exposed = timeBars(m_timePlot, kCompareExposed, tr("exposed communication (compute waits)"));
  m_exposed->moveAbove(m_rest);
  m_hidden = timeBars(m_timePlot, kCompareHidden, tr("communication hidden behind compute"));
  styleCompareLegend(m_timePlot, font());

  // The two charts side by side under the table: time first, as the figure.
  for (QCustomPlot* plot : {m_timePlot, m_plot}) {
    connect(plot, &QCustomPlot::afterLayout, plot, [plot] { fitBarLabels(plot); });
    // Side by side the two ask no more width of the dock than one chart did:
    // the form beside it keeps its width at 1280×720 (labels that do not fit hide).
    plot->setMinimumWidth(90);
  }
  auto* charts = m_charts = new QSplitter(Qt::Horizontal, this);
  charts->addWidget(m_timePlot);
  charts->addWidget(m_plot);
  charts->setChildrenCollapsible(false);
  charts->setStretchFactor(0, 1);
  charts->setStretchFactor(1, 1);
  charts->setSizes({1000, 1000});  // half each, whatever their size hints
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_table);
  split->addWidget(charts);
  split->setChildrenCollapsible(false);
  // The charts (a lecture's picture) get the larger share; the table scrolls.
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->addWidget(split);
}

void CompareCommView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  // Side by side in a narrow column (1280×720) each chart got ~200 px and the
  // runs' names under the bars ran into each other: there they stack.
  const Qt::Orientation wanted = width() < 760 ? Qt::Vertical : Qt::Horizontal;
  if (m_charts->orientation() == wanted) return;
  m_charts->setOrientation(wanted);
  m_charts->setSizes({1000, 1000});
}

QString CompareCommView::figureTitle() const {
  return tr("Step time (exposed and hidden communication) and bytes rank 0 sent per step, %1 runs compared").arg(m_runs);
}

void CompareCommView::setRuns(const std::vector<ComparedRun>& runs) {
  m_runs = static_cast<int>(runs.size());
  // Rows: ranks, step, one per collective of the data-parallel axis and the
  // TP groups' sends, then the formula's ratio and the times.
  QStringList row_names = {tr("ranks"), tr("step (last complete)")};
  for (EventKind k : kCommViewKinds) row_names << tr("%1 sent (MiB)").arg(Palette::kindTitle(k));
  row_names << tr("tensor-parallel sent (MiB)");
  // Which link the bytes cross (hybrid sharding keeps its gathers in the node).
  const int link_row = static_cast<int>(row_names.size());
  row_names << tr("sent within a node (MiB)") << tr("sent across nodes (MiB)");
  const int ratio_row = static_cast<int>(row_names.size());
  row_names << tr("sent / formula") << tr("step time (ms)") << tr("communication (ms)") << tr("exposed (ms)")
            << tr("hidden (ms)") << tr("overlap");
  m_table->clear();
  m_table->setRowCount(static_cast<int>(row_names.size()));
  m_table->setColumnCount(m_runs);
  m_table->setVerticalHeaderLabels(row_names);
  for (QCPBars* b : m_kindBars) b->data()->clear();
  m_expected->data()->clear();
  m_plot->clearItems();
  for (QCPBars* b : {m_rest, m_exposed, m_hidden}) b->data()->clear();
  m_timePlot->clearItems();
  m_stepMs.assign(static_cast<size_t>(m_runs), 0.0);
  m_exposedMs.assign(static_cast<size_t>(m_runs), 0.0);
  m_hiddenMs.assign(static_cast<size_t>(m_runs), 0.0);
  double time_top = 0;
  double first_step = 0;  // the first run's step: each bar says how many times it takes
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  double top = 0;
  int64_t first_sent = -1;  // the first run's total: each bar says how many times it sends
  bool any_expected = false;
  bool any_tp_formula = false;  // an outline includes a TP group's formula
  bool any_across = false;  // a run sent across nodes: its bar says how much
  for (int i = 0; i < m_runs; ++i) {
    const ComparedRun& run = runs[static_cast<size_t>(i)];
    CommStatsModel stats;
    stats.setRun(*run.store, run.result.get());
    const QString label = QString::fromStdString(run.label);
    m_table->setHorizontalHeaderItem(i, new QTableWidgetItem(label));
    ticker->addTick(i, PlotStyle::wrappedText(label, 14));  // several short lines: neighbours' names stay apart
    const auto cell = [&](int row, const QString& text) {
      auto* item = new QTableWidgetItem(text);
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      m_table->setItem(row, i, item);
    };
    cell(0, QString::number(run.store->meta().ranks));
    cell(1, stats.step() >= 0 ? QString::number(stats.step()) : QStringLiteral("–"));
    int64_t sent[kCommViewKindCount + 1] = {};  // the last: the TP groups'
    for (const CommStatsModel::Row& r : stats.statRows()) {
      if (r.rank != 0) continue;
      if (r.tensor_parallel) {
        sent[kCommViewKindCount] += r.sent;
        continue;
      }
      for (int k = 0; k < kCommViewKindCount; ++k)
        if (r.kind == kCommViewKinds[k]) sent[k] += r.sent;
    }
    double stacked = 0;
    int64_t total = 0;
    for (int k = 0; k <= kCommViewKindCount; ++k) {
      cell(2 + k, commMibText(sent[k]));
      m_kindBars[k]->addData(i - 0.18, toMiB(sent[k]));
      stacked += toMiB(sent[k]);
      total += sent[k];
    }
    if (first_sent < 0) first_sent = total;
    const CommStatsModel::LinkSent link = stats.linkSent(0);
    const bool link_known = link.intra + link.inter > 0;
    cell(link_row, link_known ? commMibText(link.intra) : QStringLiteral("–"));
    cell(link_row + 1, link_known ? commMibText(link.inter) : QStringLiteral("–"));
    auto* text = new QCPItemText(m_plot);
    text->position->setCoords(i - 0.18, stacked);
    text->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
    text->setTextAlignment(Qt::AlignHCenter);
    // Each bar after the first as a multiple of the first run's (the x axis names it).
    QString bar_text = i > 0 && first_sent > 0 ? tr("%1\n%2×").arg(quantity_text::sizeText(double(total), 2, ByteUnit::MiB))
                                                     .arg(static_cast<double>(total) / static_cast<double>(first_sent), 0, 'f', 2)
                                               : quantity_text::sizeText(double(total), 2, ByteUnit::MiB);
    if (link.inter > 0) bar_text += tr("\n%1 across").arg(commMibText(link.inter));
    any_across = any_across || link.inter > 0;
    text->setText(bar_text);
    QFont font = m_plot->font();
    font.setPointSizeF(8);
    font.setBold(true);
    text->setFont(font);
    text->setColor(QColor(0x22, 0x22, 0x22));
    text->setPadding(QMargins(0, 0, 0, 3));
    text->setClipToAxisRect(false);
    // The outline: the strategy's ring formula plus, under tensor
    // parallelism, the TP group's (Megatron-LM), as the bar stacks both.
    const int64_t expected_tp = stats.expectedTensorParallelTotal();
    const int64_t expected = stats.expectedTotal() + expected_tp;
    any_tp_formula = any_tp_formula || expected_tp > 0;
    const int64_t compared = expected_tp > 0 ? total : stats.sentTotal(0);
    cell(ratio_row, expected > 0 ? QString::number(static_cast<double>(compared) / static_cast<double>(expected), 'f', 3) +
                               QStringLiteral("×")
                         : QStringLiteral("–"));
    if (expected > 0) {
      m_expected->addData(i + 0.18, toMiB(expected));
      any_expected = true;
    }
    top = std::max({top, stacked, toMiB(expected)});
    const auto timing = std::find_if(stats.timing().begin(), stats.timing().end(),
                                     [](const CommStatsModel::RankTiming& t) { return t.rank == 0; });
    if (timing != stats.timing().end()) {
      cell(ratio_row + 1, commMsText(timing->step_ns));
      cell(ratio_row + 2, commMsText(timing->comm_ns));
      cell(ratio_row + 3, commMsText(timing->exposed_ns));
      cell(ratio_row + 4, commMsText(timing->comm_ns - timing->exposed_ns));
      cell(ratio_row + 5, QString::number(timing->overlap, 'f', 0) + QStringLiteral(" %"));
      const double step = static_cast<double>(timing->step_ns) * 1e-6;
      const double exposed = static_cast<double>(timing->exposed_ns) * 1e-6;
      const double hidden = static_cast<double>(timing->comm_ns - timing->exposed_ns) * 1e-6;
      const size_t at = static_cast<size_t>(i);
      m_stepMs[at] = step;
      m_exposedMs[at] = exposed;
      m_hiddenMs[at] = hidden;
      m_rest->addData(i - 0.18, std::max(0.0, step - exposed));
      m_exposed->addData(i - 0.18, exposed);
      m_hidden->addData(i + 0.18, hidden);
      if (i == 0) first_step = step;
      barLabel(m_timePlot, i - 0.18, step,
               i > 0 && first_step > 0 ? tr("%1\n%2×").arg(stepLabelText(step)).arg(step / first_step, 0, 'f', 2)
                                       : stepLabelText(step));
      time_top = std::max({time_top, step, hidden});
    } else {
      for (int row = ratio_row + 1; row <= ratio_row + 5; ++row) cell(row, QStringLiteral("–"));
    }
  }
  for (QCPBars* b : m_kindBars) {
    if (b->data()->isEmpty() || std::all_of(b->data()->begin(), b->data()->end(), [](const QCPBarsData& d) { return d.value <= 0; }))
      b->removeFromLegend();
    else
      b->addToLegend();
  }
  m_expected->setName(any_tp_formula ? tr("formula (ring collectives; TP group: Megatron-LM)") : tr("formula (ring collectives)"));
  if (any_expected)
    m_expected->addToLegend();
  else
    m_expected->removeFromLegend();
  for (QCPBars* b : {m_rest, m_exposed, m_hidden}) b->addToLegend();
  const QString against = m_runs > 1 ? tr("× = against %1").arg(QString::fromStdString(runs.front().label)) : QString();
  m_timePlot->xAxis->setLabel(against);
  QStringList bytes_notes;
  if (!against.isEmpty()) bytes_notes << against;
  if (any_across) bytes_notes << tr("across: MiB sent across nodes");
  m_plot->xAxis->setLabel(bytes_notes.join(QStringLiteral("; ")));
  PlotStyle::updateLegendRow(m_timePlot, false);
  m_timePlot->xAxis->setTicker(ticker);
  m_timePlot->xAxis->setRange(-0.6, std::max(0.6, m_runs - 0.4));
  m_timePlot->yAxis->setRange(0, time_top > 0 ? time_top * 1.35 : 1.0);
  m_timePlot->replot(QCustomPlot::rpQueuedReplot);
  PlotStyle::updateLegendRow(m_plot, false);
  m_plot->xAxis->setTicker(ticker);
  m_plot->xAxis->setRange(-0.6, std::max(0.6, m_runs - 0.4));
  // Room above the tallest bar for its label (three lines when it says what crossed nodes).
  m_plot->yAxis->setRange(0, top > 0 ? top * (any_across ? 1.45 : 1.3) : 1.0);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope
