#include "comm_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>

#include "theme.h"
#include "inspect/collective_exposure.h"
#include "common/units.h"
#include "inspect/event_store.h"
#include "inspect/rank_symmetry.h"
#include "inspect/run_prediction.h"
#include "prediction_text.h"
#include "palette.h"
#include "plot_style.h"
#include "quantity_text.h"

namespace shardscope {

namespace {

constexpr double kBarWidth = 0.36;
constexpr int kPlotMinHeight = 230;  // px: title, legend, bars and rank labels each legible
// Hidden vs exposed time: neutral light and dark, none of the collectives'
// colours (all-gather green, reduce-scatter vermillion): each colour of the
// figure means one thing.
const QColor kHidden(0xC9, 0xD3, 0xDD);
const QColor kExposed(0x3A, 0x3A, 0x3A);

// Shows each per-rank label only where it fits its rank's slot, its long text
// first, else its short one: labels of neighbouring ranks never overlap.
void fitLabels(QCustomPlot* plot, const std::vector<std::pair<QCPItemText*, QStringList>>& labels) {
  const double slot = std::abs(plot->xAxis->coordToPixel(1) - plot->xAxis->coordToPixel(0));
  for (const auto& [item, texts] : labels) {
    item->setVisible(false);
    const QFontMetricsF metrics(item->font());
    for (const QString& text : texts)
      if (metrics.horizontalAdvance(text) + 6 <= slot * 0.9) {
        item->setText(text);
        item->setVisible(true);
        break;
      }
  }
}

void styleLegend(QCustomPlot* plot, const QFont& base) {
  plot->legend->setVisible(false);
  plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot->legend->setBorderPen(Qt::NoPen);
  QFont f = base;
  f.setPointSizeF(7.5);
  plot->legend->setFont(f);
  plot->legend->setIconSize(12, 9);
}

QCPTextElement* addTitle(QCustomPlot* plot, const QString& text, const QFont& base) {
  auto* title = new QCPTextElement(plot);
  QFont f = base;
  f.setPointSizeF(8.5);
  f.setBold(true);
  title->setFont(f);
  title->setTextColor(QColor(0x33, 0x33, 0x33));
  plot->plotLayout()->insertRow(0);
  plot->plotLayout()->addElement(0, 0, title);
  plot->plotLayout()->setRowStretchFactor(0, 0.001);
  PlotStyle::setWrappedTitle(title, text);
  return title;
}

}  // namespace

CommView::CommView(const EventStore* store, QWidget* parent)
    : QWidget(parent), m_store(store), m_model(new CommStatsModel(this)) {
  m_source = new QLabel(this);
  m_source->setWordWrap(true);
  m_source->setTextFormat(Qt::RichText);
  m_source->setContentsMargins(6, 4, 6, 2);

  m_bytes = new QCustomPlot(this);
  m_bytes->setObjectName(QStringLiteral("commBytes"));
  m_bytes->setMinimumHeight(kPlotMinHeight);
  PlotStyle::styleAxes(m_bytes);
  m_bytes->yAxis->setLabel(tr("MiB sent per step"));
  PlotStyle::styleCategoryAxis(m_bytes->xAxis);
  m_bytesTitle = addTitle(m_bytes, tr("bytes each rank sent in the step, by collective, beside the predicted bytes (ZeRO paper)"), font());
  for (int k = 0; k <= kCommViewKindCount; ++k) {
    auto* bars = new QCPBars(m_bytes->xAxis, m_bytes->yAxis);
    const bool tp = k == kCommViewKindCount;
    const QColor c = tp ? Palette::kind(EventKind::AllReduce).lighter(150) : Palette::kind(kCommViewKinds[k]);
    bars->setName(tp ? tr("tensor-parallel group (activation all-reduces)") : Palette::kindTitle(kCommViewKinds[k]));
    bars->setBrush(tp ? QBrush(c, Qt::BDiagPattern) : QBrush(c));
    bars->setPen(QPen(c.darker(125), 0.8));
    bars->setWidth(kBarWidth);
    bars->setStackingGap(0);
    if (k > 0) bars->moveAbove(m_kindBars[k - 1]);
    m_kindBars[k] = bars;
  }
  m_expected = new QCPBars(m_bytes->xAxis, m_bytes->yAxis);
  m_expected->setWidth(kBarWidth);
  m_expected->setPen(QPen(QColor(0x22, 0x22, 0x22), 1.6));
  m_expected->setBrush(Qt::NoBrush);
  m_expected->setName(tr("predicted (ZeRO paper)"));
  // The TP group's formula, stacked on the data-parallel one as the TP bytes
  // stack on the strategy's: the outline of the whole measured bar.
  m_expectedTp = new QCPBars(m_bytes->xAxis, m_bytes->yAxis);
  m_expectedTp->setWidth(kBarWidth);
  m_expectedTp->setPen(QPen(QColor(0x22, 0x22, 0x22), 1.6, Qt::DashLine));
  m_expectedTp->setBrush(Qt::NoBrush);
  m_expectedTp->setStackingGap(0);
  m_expectedTp->moveAbove(m_expected);
  m_expectedTp->setName(tr("predicted (Megatron-LM), TP group"));
  styleLegend(m_bytes, font());

  m_time = new QCustomPlot(this);
  m_time->setObjectName(QStringLiteral("commTime"));
  m_time->setMinimumHeight(kPlotMinHeight);
  PlotStyle::styleAxes(m_time);
  m_time->yAxis->setLabel(tr("ms in the step"));
  PlotStyle::styleCategoryAxis(m_time->xAxis);
  addTitle(m_time, tr("communication time: hidden behind compute vs exposed (labels: share hidden)"), font());
  m_hidden = new QCPBars(m_time->xAxis, m_time->yAxis);
  m_hidden->setName(tr("hidden (overlapped by compute)"));
  m_hidden->setBrush(kHidden);
  m_hidden->setPen(QPen(kHidden.darker(125), 0.8));
  m_hidden->setWidth(0.5);
  m_exposed = new QCPBars(m_time->xAxis, m_time->yAxis);
  m_exposed->setName(tr("exposed (compute idle or waiting)"));
  m_exposed->setBrush(kExposed);
  m_exposed->setPen(QPen(kExposed.darker(125), 0.8));
  m_exposed->setWidth(0.5);
  m_exposed->setStackingGap(0);
  m_exposed->moveAbove(m_hidden);
  styleLegend(m_time, font());
  connect(m_bytes, &QCustomPlot::afterLayout, this, [this] { fitLabels(m_bytes, m_ratioLabels); });
  connect(m_time, &QCustomPlot::afterLayout, this, [this] { fitLabels(m_time, m_hiddenLabels); });

  m_table = new QTableView(this);
  m_table->setModel(m_model);
  m_table->setAlternatingRowColors(true);
  m_table->verticalHeader()->setVisible(false);
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setMinimumHeight(110);
  QFont table_font = font();
  table_font.setPointSizeF(8);
  m_table->setFont(table_font);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_bytes);
  split->addWidget(m_time);
  split->addWidget(m_table);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 3);
  split->setStretchFactor(2, 2);
  split->setChildrenCollapsible(false);
  // A short dock (a 720-px screen) scrolls the plots rather than crushing
  // their titles, legends and bars into each other.
  auto* scroll = new QScrollArea(this);
  scroll->setObjectName(QStringLiteral("commScroll"));
  scroll->setWidget(split);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

  m_empty = new QLabel(this);
  m_empty->setAlignment(Qt::AlignCenter);
  m_empty->setWordWrap(true);
  setTone(m_empty, Tone::Muted);

  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->setSpacing(2);
  box->addWidget(m_source);
  box->addWidget(m_empty, 1);
  box->addWidget(scroll, 4);
  clear();
}

void CommView::clear() {
  m_model->clear();
  rebuildPlots();
}

void CommView::setRun(const RunResult* result) {
  m_model->setRun(*m_store, result);
  // An imported job has no strategy to predict from: its bytes are the trace's own.
  const std::optional<RunPrediction> p = m_store->meta().imported ? std::nullopt : predictRun(*m_store);
  PlotStyle::setWrappedTitle(m_bytesTitle, m_store->meta().imported
                            ? tr("bytes each rank sent in the step, by collective: elements × dtype size × ring factor")
                            : tr("bytes each rank sent in the step, by collective, beside the predicted bytes (%1)")
                                  .arg(p ? QString::fromStdString(formulaSource(p->config)) : tr("formula")));
  rebuildPlots();
}

QString CommView::sourceText() const {
  if (m_model->step() < 0) return {};
  const QString how = m_model->measuredAtSends()
                          ? tr("bytes <b>measured at the sends</b> by the run (its summary)")
                          : tr("bytes <b>computed from the trace</b>: Σ event bytes × ring factor, 2(n−1)/n for "
                               "all-reduce and (n−1)/n for reduce-scatter and all-gather (n = ranks in the group)");
  QString text = m_store->meta().imported
                     ? tr("Profiler step %1, the last but one every rank completed (the last is often cut short; "
                          "HTA leaves it out too) · %2.").arg(m_model->step()).arg(how)
                     : tr("Step %1, the last every rank completed · %2.").arg(m_model->step()).arg(how);
  // Over every rank: the number the Runs table's "comm hidden" shows.
  text += tr(" All ranks: <b>%1 % of communication hidden</b> behind compute.").arg(m_model->hiddenShare(), 0, 'f', 1);
  if (m_store->meta().imported) text += importedOrderText();
  if (const std::optional<RunPrediction> p = m_model->expectedTotal() > 0 ? predictRun(*m_store) : std::nullopt)
    text += tr(" Formula per rank (data-parallel axis): %1.").arg(trafficFormulaText(p->traffic));
  if (const std::optional<RunPrediction> p = m_model->expectedTensorParallelTotal() > 0 ? predictRun(*m_store) : std::nullopt)
    text += tr(" TP group per rank (Megatron-LM): %1 = %2.")
                .arg(QString::fromStdString(p->traffic.tp_step_notation).toHtmlEscaped(),
                     quantity_text::sizeText(static_cast<double>(p->traffic.tensorParallelTotal()), 2, ByteUnit::MiB));
  return text;
}

QString CommView::importedOrderText() const {
  // Rank 0 of a PyTorch job: which FSDP module's collectives were exposed, or
  // (no FSDP labels) the all-reduces in the order they fired, as DDP's buckets do.
  const std::vector<CollectiveExposure> all = collectiveExposure(*m_store, 0, m_model->step());
  const auto ms = [](int64_t ns) { return QString::number(static_cast<double>(ns) * 1e-6, 'f', 3); };
  const auto share = [](int64_t part, int64_t whole) { return whole > 0 ? 100.0 * static_cast<double>(part) / whole : 0.0; };
  std::vector<UnitExposure> units = unitExposure(*m_store, all);
  QStringList items;
  if (!units.empty()) {
    std::stable_sort(units.begin(), units.end(), [](const UnitExposure& a, const UnitExposure& b) { return a.exposed_ns > b.exposed_ns; });
    for (size_t i = 0; i < units.size() && i < 8; ++i) {
      const UnitExposure& u = units[i];
      items << tr("%1 %2 ×%3: %4 ms, <b>exposed %5 ms</b> (%6%)")
                   .arg(QString::fromStdString(u.name).toHtmlEscaped(), Palette::kindTitle(u.kind))
                   .arg(u.count)
                   .arg(ms(u.time_ns), ms(u.exposed_ns))
                   .arg(share(u.exposed_ns, u.time_ns), 0, 'f', 0);
    }
    return tr("<br><b>Rank 0 by FSDP module</b>, most exposed first: %1.").arg(items.join(QStringLiteral(" · ")));
  }
  int n = 0;
  for (const CollectiveExposure& c : all) {
    if (c.kind != EventKind::AllReduce) continue;
    if (++n > 10) break;
    const std::vector<Event>& events = m_store->events(0);
    const bool unknown = c.event >= 0 && static_cast<size_t>(c.event) < events.size() &&
                         (events[static_cast<size_t>(c.event)].flags & kEventSizeUnknown);
    items << tr("#%1 %2 %3 ms (exposed %4)")
                 .arg(n)
                 .arg(unknown ? tr("size unknown") : quantity_text::sizeText(double(c.bytes), 1, ByteUnit::MiB))
                 .arg(ms(c.dur_ns), ms(c.exposed_ns));
  }
  if (items.isEmpty()) return {};
  return tr("<br><b>Rank 0's all-reduces in firing order</b> (DDP's buckets): %1%2.")
      .arg(items.join(QStringLiteral(" · ")), n > 10 ? QStringLiteral(" …") : QString());
}

QString CommView::figureTitle() const {
  return m_model->step() >= 0 ? tr("Communication per rank, step %1").arg(m_model->step()) : tr("Communication per rank");
}

void CommView::rebuildPlots() {
  const int ranks = m_model->rankCount();
  const bool have = m_model->step() >= 0 && ranks > 0;
  m_empty->setVisible(!have);
  m_empty->setText(m_store->empty() ? tr("Bytes sent, busbw and exposed communication appear once a step completes.")
                                    : tr("No step has completed on every rank yet."));
  m_source->setVisible(have);
  m_source->setText(sourceText());
  for (QWidget* w : {static_cast<QWidget*>(m_bytes), static_cast<QWidget*>(m_time), static_cast<QWidget*>(m_table)})
    w->setVisible(have);
  for (QCPBars* b : m_kindBars) b->data()->clear();
  m_expected->data()->clear();
  m_expectedTp->data()->clear();
  m_hidden->data()->clear();
  m_exposed->data()->clear();
  m_bytes->clearItems();
  m_time->clearItems();
  m_ratioLabels.clear();
  m_hiddenLabels.clear();
  if (!have) {
    m_bytes->replot(QCustomPlot::rpQueuedReplot);
    m_time->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  bool used[kCommViewKindCount + 1] = {};
  const int64_t expected_tp = m_model->expectedTensorParallelTotal();
  double top = toMiB(static_cast<double>(m_model->expectedTotal() + expected_tp));
  QFont small = font();
  small.setPointSizeF(7);
  // Bytes per rank and kind (the TP group's last), in one pass over the rows.
  const size_t kinds = kCommViewKindCount + 1;
  std::vector<int64_t> sent_by(static_cast<size_t>(ranks) * kinds, 0);
  for (const CommStatsModel::Row& row : m_model->statRows()) {
    if (row.rank < 0 || row.rank >= ranks) continue;
    size_t k = kCommViewKindCount;  // the TP group's slot
    if (!row.tensor_parallel) {
      const auto* kind = std::find(std::begin(kCommViewKinds), std::end(kCommViewKinds), row.kind);
      if (kind == std::end(kCommViewKinds)) continue;  // a kind no bar shows
      k = static_cast<size_t>(kind - std::begin(kCommViewKinds));
    }
    sent_by[static_cast<size_t>(row.rank) * kinds + k] += row.sent;
  }
  std::vector<const CommStatsModel::RankTiming*> timing_of(static_cast<size_t>(ranks), nullptr);
  for (const CommStatsModel::RankTiming& t : m_model->timing())
    if (t.rank >= 0 && t.rank < ranks) timing_of[static_cast<size_t>(t.rank)] = &t;
  // Many ranks: those whose bars are the first's share one column (as the
  // timeline's band). An imported job's ranks without a file get none.
  std::vector<int> shown = m_store->meta().shownRanks();
  std::erase_if(shown, [ranks](int r) { return r >= ranks; });
  if (shown.empty()) shown.push_back(0);
  const std::vector<RankColumn> columns = rankColumns(shown, [&](int ra, int rb) {
    const auto* a = timing_of[static_cast<size_t>(ra)];
    const auto* b = timing_of[static_cast<size_t>(rb)];
    if ((a == nullptr) != (b == nullptr)) return false;
    if (a && (a->comm_ns != b->comm_ns || a->exposed_ns != b->exposed_ns)) return false;
    const auto row = [&](int rank) { return sent_by.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(rank) * kinds); };
    return std::equal(row(ra), row(ra) + static_cast<std::ptrdiff_t>(kinds), row(rb));
  });
  const int column_count = static_cast<int>(columns.size());
  for (int x = 0; x < column_count; ++x) {
    const RankColumn& column = columns[static_cast<size_t>(x)];
    const int r = column.rank;
    double stack = 0;
    for (int k = 0; k <= kCommViewKindCount; ++k) {
      const int64_t sent = sent_by[static_cast<size_t>(r) * kinds + static_cast<size_t>(k)];
      m_kindBars[k]->addData(x - 0.19, toMiB(sent));
      used[k] = used[k] || sent > 0;
      stack += toMiB(sent);
    }
    if (m_model->expectedTotal() > 0) m_expected->addData(x + 0.19, static_cast<double>(m_model->expectedTotal()) / kMiB);
    if (expected_tp > 0) m_expectedTp->addData(x + 0.19, toMiB(static_cast<double>(expected_tp)));
    top = std::max(top, stack);
    if (!column.folded.empty())
      ticker->addTick(x, PlotStyle::foldedRanksTick(column.folded, column.source));
    else if (shown.size() <= 8)
      ticker->addTick(x, tr("rank %1").arg(r));
    else if (labelsColumn(static_cast<size_t>(x), columns.size()))
      ticker->addTick(x, QString::number(r));
    if (column_count <= 16 && m_model->expectedTotal() > 0) {
      auto* t = new QCPItemText(m_bytes);
      t->position->setCoords(x - 0.19, stack);
      t->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
      const QString ratio = QString::number(static_cast<double>(m_model->sentTotal(r)) / m_model->expectedTotal(), 'f', 2);
      t->setText(ratio + QStringLiteral("×"));
      m_ratioLabels.push_back({t, {ratio + QStringLiteral("×"), ratio}});
      t->setFont(small);
      t->setColor(QColor(0x33, 0x33, 0x33));
      t->setPadding(QMargins(0, 0, 0, 2));
    }
  }
  for (int k = 0; k <= kCommViewKindCount; ++k) {
    if (used[k])
      m_kindBars[k]->addToLegend();
    else
      m_kindBars[k]->removeFromLegend();
  }
  if (const std::optional<RunPrediction> p = m_model->expectedTotal() > 0 ? predictRun(*m_store) : std::nullopt)
    m_expected->setName(tr("predicted (%1): %2")
                            .arg(QString::fromStdString(formulaSource(p->config)))
                            .arg(QString::fromStdString(p->traffic.notation)));
  if (m_model->expectedTotal() > 0)
    m_expected->addToLegend();
  else
    m_expected->removeFromLegend();
  if (const std::optional<RunPrediction> p = expected_tp > 0 ? predictRun(*m_store) : std::nullopt) {
    m_expectedTp->setName(tr("predicted (Megatron-LM), TP group: %1").arg(QString::fromStdString(p->traffic.tp_step_notation)));
    m_expectedTp->addToLegend();
  } else {
    m_expectedTp->removeFromLegend();
  }
  PlotStyle::updateLegendRow(m_bytes, false);
  m_bytes->xAxis->setTicker(ticker);
  m_bytes->xAxis->setLabel(ranks > kFoldAboveRanks ? tr("rank") : QString());
  m_bytes->xAxis->setRange(-0.6, column_count - 0.4);
  m_bytes->yAxis->setRange(0, top > 0 ? top * 1.2 : 1.0);

  double time_top = 0;
  for (int x = 0; x < column_count; ++x) {
    const CommStatsModel::RankTiming* timing = timing_of[static_cast<size_t>(columns[static_cast<size_t>(x)].rank)];
    if (!timing) continue;
    const CommStatsModel::RankTiming& t = *timing;
    const double hidden = static_cast<double>(t.comm_ns - t.exposed_ns) * 1e-6;
    const double exposed = static_cast<double>(t.exposed_ns) * 1e-6;
    m_hidden->addData(x, hidden);
    m_exposed->addData(x, exposed);
    time_top = std::max(time_top, hidden + exposed);
    if (column_count <= 16) {
      auto* label = new QCPItemText(m_time);
      label->position->setCoords(x, hidden + exposed);
      label->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
      label->setText(tr("%1% hidden").arg(t.overlap, 0, 'f', 0));
      m_hiddenLabels.push_back({label, {label->text(), tr("%1%").arg(t.overlap, 0, 'f', 0)}});
      label->setFont(small);
      label->setColor(QColor(0x33, 0x33, 0x33));
      label->setPadding(QMargins(0, 0, 0, 2));
    }
  }
  m_hidden->addToLegend();
  m_exposed->addToLegend();
  PlotStyle::updateLegendRow(m_time, false);
  m_time->xAxis->setTicker(ticker);
  m_time->xAxis->setLabel(ranks > kFoldAboveRanks ? tr("rank") : QString());
  m_time->xAxis->setRange(-0.6, column_count - 0.4);
  m_time->yAxis->setRange(0, time_top > 0 ? time_top * 1.25 : 1.0);
  m_bytes->replot(QCustomPlot::rpQueuedReplot);
  m_time->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope
