#include "compare_comm_view.h"

#include <QHeaderView>
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

namespace shardscope {

namespace {


QString commMibText(int64_t bytes) { return QString::number(toMiB(bytes), 'f', 2); }
QString commMsText(int64_t ns) { return QString::number(static_cast<double>(ns) * 1e-6, 'f', 3); }

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
  m_plot->legend->setVisible(false);
  m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_plot->legend->setBorderPen(Qt::NoPen);
  QFont legend_font = font();
  legend_font.setPointSizeF(8);
  m_plot->legend->setFont(legend_font);
  m_plot->legend->setIconSize(12, 9);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_table);
  split->addWidget(m_plot);
  split->setChildrenCollapsible(false);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->addWidget(split);
}

QString CompareCommView::figureTitle() const {
  return tr("Bytes rank 0 sent per step, %1 runs compared, beside the formula").arg(m_runs);
}

void CompareCommView::setRuns(const std::vector<ComparedRun>& runs) {
  m_runs = static_cast<int>(runs.size());
  // Rows: ranks, step, one per collective of the data-parallel axis and the
  // TP groups' sends, then the formula's ratio and the times.
  QStringList row_names = {tr("ranks"), tr("step (last complete)")};
  for (EventKind k : kCommViewKinds) row_names << tr("%1 sent (MiB)").arg(Palette::kindTitle(k));
  row_names << tr("tensor-parallel sent (MiB)");
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
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  double top = 0;
  int64_t first_sent = -1;  // the first run's total: each bar says how many times it sends
  bool any_expected = false;
  for (int i = 0; i < m_runs; ++i) {
    const ComparedRun& run = runs[static_cast<size_t>(i)];
    CommStatsModel stats;
    stats.setRun(*run.store, run.result.get());
    const QString label = QString::fromStdString(run.label);
    m_table->setHorizontalHeaderItem(i, new QTableWidgetItem(label));
    ticker->addTick(i, label);
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
    auto* text = new QCPItemText(m_plot);
    text->position->setCoords(i - 0.18, stacked);
    text->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
    text->setTextAlignment(Qt::AlignHCenter);
    text->setText(first_sent > 0 ? tr("%1 MiB\n%2× %3").arg(commMibText(total))
                                       .arg(static_cast<double>(total) / static_cast<double>(first_sent), 0, 'f', 2)
                                       .arg(QString::fromStdString(runs.front().label))
                                 : tr("%1 MiB").arg(commMibText(total)));
    QFont font = m_plot->font();
    font.setPointSizeF(8);
    font.setBold(true);
    text->setFont(font);
    text->setColor(QColor(0x22, 0x22, 0x22));
    text->setPadding(QMargins(0, 0, 0, 3));
    text->setClipToAxisRect(false);
    const int64_t expected = stats.expectedTotal();
    cell(ratio_row, expected > 0 ? QString::number(static_cast<double>(stats.sentTotal(0)) / static_cast<double>(expected), 'f', 3) +
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
  if (any_expected)
    m_expected->addToLegend();
  else
    m_expected->removeFromLegend();
  PlotStyle::updateLegendRow(m_plot, false);
  m_plot->xAxis->setTicker(ticker);
  m_plot->xAxis->setRange(-0.6, std::max(0.6, m_runs - 0.4));
  m_plot->yAxis->setRange(0, top > 0 ? top * 1.25 : 1.0);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope
