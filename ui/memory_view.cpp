#include "memory_view.h"

#include <QComboBox>
#include <QStandardItemModel>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QSplitter>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>

#include "common/units.h"
#include "inspect/rank_symmetry.h"
#include "inspect/run_prediction.h"
#include "prediction_text.h"
#include "inspect/event_store.h"
#include "memory/memory_ledger.h"
#include "palette.h"
#include "plot_style.h"
#include "quantity_text.h"

namespace shardscope {

namespace {

constexpr double kBarWidth = 0.36;
constexpr double kMeasuredOffset = -0.19;  // measured bar left of the rank tick,
constexpr double kPredictedOffset = 0.19;  // the ZeRO paper's prediction right of it
constexpr int kThrottleMs = 250;
constexpr int kCategoriesButtonTextPx = 200;  // the Categories button's text, elided past it

QString categoryTitle(Category c, bool imported = false) {
  // An imported PyTorch trace books the allocator's bytes: what the ledger cannot name is unattributed.
  if (imported && c == Category::Workspace) return QObject::tr("unattributed (allocated)");
  if (imported && c == Category::Gathered) return QObject::tr("gathered (under FSDP all-gather)");
  const std::string_view n = categoryName(c);
  return QString::fromLatin1(n.data(), static_cast<int>(n.size()));
}

}  // namespace

MemoryView::MemoryView(const EventStore* store, QWidget* parent)
    : QWidget(parent), m_store(store), m_throttle(new QTimer(this)) {
  m_throttle->setSingleShot(true);
  m_throttle->setInterval(kThrottleMs);
  connect(m_throttle, &QTimer::timeout, this, &MemoryView::rebuild);

  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 4, 6, 0);
  m_momentCombo = new QComboBox(this);
  m_momentCombo->addItem(tr("at peak model state"));
  m_momentCombo->addItem(tr("at timeline cursor"));
  m_momentCombo->setToolTip(tr("Which moment the bars show. Click the timeline to place the cursor."));
  m_rankCombo = new QComboBox(this);
  m_rankCombo->setObjectName(QStringLiteral("memoryRank"));
  m_rankCombo->setToolTip(tr("Rank shown in the memory-over-time plot"));
  controls->addWidget(new QLabel(tr("Bars"), this));
  controls->addWidget(m_momentCombo);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(tr("Over time"), this));
  controls->addWidget(m_rankCombo);
  controls->addSpacing(12);
  m_categoriesButton = new QToolButton(this);
  m_categoriesButton->setObjectName(QStringLiteral("memoryCategories"));
  m_categoriesButton->setText(tr("Categories: all"));
  m_categoriesButton->setPopupMode(QToolButton::InstantPopup);
  m_categoriesButton->setToolTip(tr("Which ledger categories the bars and the over-time chart draw "
                                    "(hide activations to see model state and the gathered slice)"));
  buildCategoryMenu();
  controls->addWidget(m_categoriesButton);
  controls->addStretch(1);

  m_summary = new QLabel(this);
  m_summary->setObjectName(QStringLiteral("memorySummary"));
  m_summary->setWordWrap(true);
  m_summary->setTextFormat(Qt::RichText);
  m_summary->setContentsMargins(6, 2, 6, 2);
  m_summary->setText(tr("<span style='color:#777'>Memory appears once a run allocates.</span>"));

  // Bars: one QCPBars per category, stacked in ledger order.
  m_bars = new QCustomPlot(this);
  m_bars->setObjectName(QStringLiteral("memoryBars"));
  m_bars->setMinimumHeight(200);
  PlotStyle::styleAxes(m_bars);
  m_bars->yAxis->setLabel(tr("MiB per rank"));
  PlotStyle::styleCategoryAxis(m_bars->xAxis);
  for (int c = 0; c < kCategoryCount; ++c) {
    auto* bars = new QCPBars(m_bars->xAxis, m_bars->yAxis);
    const QColor color = Palette::category(static_cast<Category>(c));
    bars->setName(categoryTitle(static_cast<Category>(c)));
    bars->setBrush(color);
    bars->setPen(QPen(color.darker(125), 0.8));
    bars->setWidth(kBarWidth);
    bars->setStackingGap(0);
    if (c > 0) bars->moveAbove(m_stack[static_cast<size_t>(c - 1)]);
    m_stack[static_cast<size_t>(c)] = bars;
  }
  m_predicted = new QCPBars(m_bars->xAxis, m_bars->yAxis);
  m_predicted->setWidth(kBarWidth);
  m_predicted->setPen(QPen(QColor(0x22, 0x22, 0x22), 1.6));
  m_predicted->setBrush(Qt::NoBrush);
  m_predicted->setName(tr("predicted (ZeRO paper), model state"));
  // Legend below the bars while it has items (PlotStyle::updateLegendRow).
  for (int i = 0; i < m_bars->plottableCount(); ++i) m_bars->plottable(i)->removeFromLegend();
  m_bars->legend->setVisible(false);
  m_bars->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_bars->legend->setWrap(4);
  m_bars->legend->setBorderPen(Qt::NoPen);
  QFont legend_font = font();
  legend_font.setPointSizeF(7.5);
  m_bars->legend->setFont(legend_font);
  m_bars->legend->setIconSize(12, 9);
  m_bars->legend->setRowSpacing(0);
  m_bars->legend->setColumnSpacing(6);

  // Over time: cumulative step graphs, each filled down to zero and drawn
  // from the top category down, so each paints over the one above it
  // (QCustomPlot's fill between graphs costs far more per point).
  m_time = new QCustomPlot(this);
  m_time->setObjectName(QStringLiteral("memoryTime"));
  m_time->setMinimumHeight(160);
  PlotStyle::styleAxes(m_time);
  m_time->xAxis->setLabel(tr("time (ms)"));
  m_time->yAxis->setLabel(tr("MiB"));
  m_time->setAutoAddPlottableToLegend(false);  // legend rows in category order, set in rebuildTime()
  for (int c = kCategoryCount - 1; c >= 0; --c) {
    auto* g = new QCPGraph(m_time->xAxis, m_time->yAxis);
    QColor fill = Palette::category(static_cast<Category>(c));
    g->setPen(Qt::NoPen);
    g->setBrush(fill);
    g->setLineStyle(QCPGraph::lsStepLeft);
    g->setName(categoryTitle(static_cast<Category>(c)));
    m_areas[static_cast<size_t>(c)] = g;
  }
  // Its own legend (the categories over time differ from the model-state bars).
  m_time->legend->setVisible(false);
  m_time->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_time->legend->setWrap(5);
  m_time->legend->setBorderPen(Qt::NoPen);
  m_time->legend->setFont(legend_font);
  m_time->legend->setIconSize(12, 9);
  m_time->legend->setRowSpacing(0);
  m_time->legend->setColumnSpacing(6);
  m_timeTitle = new QCPTextElement(m_time, QString());
  QFont title_font = font();
  title_font.setPointSizeF(8);
  m_timeTitle->setFont(title_font);
  m_timeTitle->setTextColor(QColor(0x33, 0x33, 0x33));
  m_time->plotLayout()->insertRow(0);
  m_time->plotLayout()->addElement(0, 0, m_timeTitle);
  m_time->plotLayout()->setRowStretchFactor(0, 0.001);
  m_totalLine = new QCPGraph(m_time->xAxis, m_time->yAxis);
  m_totalLine->setName(tr("total"));
  m_totalLine->setPen(QPen(QColor(0x33, 0x33, 0x33), 1));
  m_totalLine->setLineStyle(QCPGraph::lsStepLeft);
  m_reservedLine = new QCPGraph(m_time->xAxis, m_time->yAxis);
  m_reservedLine->setName(tr("reserved (allocator cache)"));
  m_reservedLine->setPen(QPen(QColor(0x33, 0x33, 0x33), 1.4, Qt::DashLine));
  m_reservedLine->setLineStyle(QCPGraph::lsStepLeft);
  m_peakDot = new QCPItemTracer(m_time);
  m_peakDot->setStyle(QCPItemTracer::tsCircle);
  m_peakDot->setSize(7);
  m_peakDot->setPen(QPen(Palette::cursor(), 1.5));
  m_peakDot->setBrush(Qt::white);
  m_peakDot->setVisible(false);
  m_peakText = new QCPItemText(m_time);
  m_peakText->position->setParentAnchor(m_peakDot->position);
  m_peakText->position->setCoords(0, -12);
  m_peakText->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
  m_peakText->setColor(Palette::cursor());
  m_peakText->setFont(legend_font);
  m_peakText->setBrush(QColor(255, 255, 255, 220));
  m_peakText->setClipToAxisRect(false);
  m_peakText->setVisible(false);
  m_cursorLine = new QCPItemStraightLine(m_time);
  m_cursorLine->setPen(QPen(Palette::cursor(), 1, Qt::DashLine));
  m_cursorLine->setVisible(false);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_bars);
  split->addWidget(m_time);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);

  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->setSpacing(2);
  box->addLayout(controls);
  box->addWidget(m_summary);
  box->addWidget(split, 1);

  connect(m_momentCombo, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  connect(m_rankCombo, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index >= 0) m_rank = m_rankCombo->itemData(index).toInt();
    rebuild();
  });
  rebuild();
}

void MemoryView::refresh(bool now) {
  if (now) {
    m_throttle->stop();
    rebuild();
  } else if (!m_throttle->isActive()) {
    m_throttle->start();
  }
}

void MemoryView::setCursorTime(std::optional<int64_t> ns) {
  m_cursor = ns;
  {
    const QSignalBlocker block(m_momentCombo);
    m_momentCombo->setCurrentIndex(ns ? 1 : 0);
  }
  rebuild();
}

void MemoryView::setSelectedRank(int rank) {
  m_rank = std::max(0, rank);
  if (const int index = m_rankCombo->findData(m_rank); index >= 0) m_rankCombo->setCurrentIndex(index);
  rebuild();
}

void MemoryView::buildCategoryMenu() {
  auto* menu = new QMenu(m_categoriesButton);
  menu->addAction(tr("All categories"), this, [this] { setShownCategories(CategoryFilter::all()); });
  menu->addAction(tr("Model state only"), this, [this] { setShownCategories(CategoryFilter::modelState()); });
  menu->addSeparator();
  for (int c = 0; c < kCategoryCount; ++c) {
    const auto cat = static_cast<Category>(c);
    QAction* a = menu->addAction(categoryTitle(cat));
    a->setCheckable(true);
    a->setChecked(m_shown.shows(cat));
    a->setData(c);
    connect(a, &QAction::toggled, this, [this, cat](bool on) {
      CategoryFilter shown = m_shown;
      shown.set(cat, on);
      setShownCategories(shown);
    });
  }
  m_categoriesButton->setMenu(menu);
}

void MemoryView::setShownCategories(const CategoryFilter& shown) {
  m_shown = shown;
  for (QAction* a : m_categoriesButton->menu()->actions()) {
    if (!a->isCheckable()) continue;
    const QSignalBlocker block(a);
    a->setChecked(m_shown.shows(static_cast<Category>(a->data().toInt())));
  }
  // Elided: a long choice must not widen the dock past a 1280-px screen; the
  // tooltip names every category shown.
  const QString shown_text = tr("Categories: %1").arg(QString::fromStdString(m_shown.describe()));
  m_categoriesButton->setText(m_categoriesButton->fontMetrics().elidedText(shown_text, Qt::ElideRight, kCategoriesButtonTextPx));
  m_categoriesButton->setToolTip(tr("%1\n\nWhich ledger categories the bars and the over-time chart draw "
                                    "(hide activations to see model state and the gathered slice)")
                                     .arg(shown_text));
  rebuild();
  emit shownCategoriesChanged();
}

void MemoryView::setActivationFigures(std::optional<ActivationFigures> figures) {
  m_activations = std::move(figures);
  rebuild();
}

QString MemoryView::chartPeakLabel() const { return m_peakText->visible() ? m_peakText->text() : QString(); }
QString MemoryView::summaryText() const { return m_summary->text(); }

bool MemoryView::atCursor() const { return m_momentCombo->currentIndex() == 1 && m_cursor.has_value(); }

std::array<int64_t, kCategoryCount> MemoryView::ledgerBytes(int rank) const {
  if (atCursor()) return m_series.at(rank, *m_cursor).bytes;
  // An imported trace books no model state: its bars are at the peak of what was allocated.
  const MemorySample* peak = m_store->meta().imported ? m_series.peakTotal(rank) : m_series.peakModelState(rank);
  return peak ? peak->bytes : std::array<int64_t, kCategoryCount>{};
}

std::array<int64_t, kCategoryCount> MemoryView::barBytes(int rank) const {
  auto bytes = ledgerBytes(rank);
  for (int c = 0; c < kCategoryCount; ++c)
    if (!m_shown.shows(static_cast<Category>(c))) bytes[static_cast<size_t>(c)] = 0;
  return bytes;
}

bool MemoryView::showsPrediction() const {
  // The prediction is of model state: beside a bar missing part of it, it would mislead.
  const CategoryFilter state = CategoryFilter::modelState();
  for (int c = 0; c < kCategoryCount; ++c)
    if (state.shows(static_cast<Category>(c)) && !m_shown.shows(static_cast<Category>(c))) return false;
  return true;
}

double MemoryView::predictedBytes() const {
  const std::optional<RunPrediction> p = predictRun(*m_store);
  return p ? p->model_state_bytes : 0.0;  // an unknown strategy: no prediction bar
}

void MemoryView::rebuild() {
  m_series.sync(*m_store);
  const bool imported = m_store->meta().imported != nullptr;
  if (imported != m_importedTitles) {
    m_importedTitles = imported;
    for (int c = 0; c < kCategoryCount; ++c) {
      m_stack[static_cast<size_t>(c)]->setName(categoryTitle(static_cast<Category>(c), imported));
      m_areas[static_cast<size_t>(c)]->setName(categoryTitle(static_cast<Category>(c), imported));
    }
    m_momentCombo->setItemText(0, imported ? tr("at peak allocated") : tr("at peak model state"));
  }
  // The ranks the trace has: one rank's file of a 300-rank job lists rank 34
  // alone, and the plot opens on it.
  const std::vector<int> shown = m_store->meta().shownRanks();
  if (m_rankCombo->count() != static_cast<int>(shown.size()) || m_store->meta().imported.get() != m_rankSource) {
    m_rankSource = m_store->meta().imported.get();
    const QSignalBlocker block(m_rankCombo);
    m_rankCombo->clear();
    for (int r : shown) m_rankCombo->addItem(tr("rank %1").arg(r), r);
    if (!shown.empty() && !std::binary_search(shown.begin(), shown.end(), m_rank)) m_rank = shown.front();
    m_rankCombo->setCurrentIndex(m_rankCombo->findData(m_rank));
  }
  rebuildBars();
  rebuildTime();
}

void MemoryView::rebuildBars() {
  const int ranks = m_series.rankCount();
  const double predicted = showsPrediction() ? predictedBytes() : 0.0;
  m_bars->clearItems();
  std::array<bool, kCategoryCount> used{};
  double top = predicted / kMiB;
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int c = 0; c < kCategoryCount; ++c) m_stack[static_cast<size_t>(c)]->data()->clear();
  m_predicted->data()->clear();
  // Many ranks: the ranks whose bars equal an earlier rank's (rank 0's, or
  // their pipeline stage's first) share one column (as the timeline's bands),
  // and only some columns carry a tick label.
  std::vector<int> shown = m_store->meta().shownRanks();
  std::erase_if(shown, [ranks](int r) { return r >= ranks; });  // the series not yet synced to a bigger run
  if (shown.empty()) shown.push_back(0);
  // Equal ledgers give equal bars (the bars are the ledger, filtered); each
  // rank's is looked up once, as a rank is compared with every class's first.
  std::vector<std::array<int64_t, kCategoryCount>> ledger_of(static_cast<size_t>(ranks));
  if (shown.size() > kFoldAboveRanks)
    for (int r : shown) ledger_of[static_cast<size_t>(r)] = ledgerBytes(r);
  const std::vector<RankColumn> columns = rankColumns(
      shown, [&](int a, int b) { return ledger_of[static_cast<size_t>(a)] == ledger_of[static_cast<size_t>(b)]; });
  const int column_count = static_cast<int>(columns.size());
  for (int x = 0; x < column_count; ++x) {
    const RankColumn& column = columns[static_cast<size_t>(x)];
    const int r = column.rank;
    const auto bytes = barBytes(r);
    const auto ledger = ledgerBytes(r);
    int64_t total = 0, state = 0;
    for (int c = 0; c < kCategoryCount; ++c) {
      const auto b = bytes[static_cast<size_t>(c)];
      m_stack[static_cast<size_t>(c)]->addData(x + kMeasuredOffset, static_cast<double>(b) / kMiB);
      used[static_cast<size_t>(c)] = used[static_cast<size_t>(c)] || b > 0;
      total += b;
      if (isModelState(static_cast<Category>(c))) state += ledger[static_cast<size_t>(c)];
    }
    if (predicted > 0) m_predicted->addData(x + kPredictedOffset, predicted / kMiB);
    top = std::max(top, static_cast<double>(total) / kMiB);
    if (!column.folded.empty())
      ticker->addTick(x, PlotStyle::foldedRanksTick(column.folded, column.source));
    else if (shown.size() <= 8)
      ticker->addTick(x, tr("rank %1").arg(r));
    else if (labelsColumn(static_cast<size_t>(x), columns.size()))
      ticker->addTick(x, QString::number(r));
    // Measured bytes/param over the model-state part: the number the ZeRO paper predicts.
    if (column_count <= 8 && m_store->meta().params > 0 && state > 0) {
      auto* t = new QCPItemText(m_bars);
      t->position->setCoords(x + kMeasuredOffset, static_cast<double>(total) / kMiB);
      t->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
      t->setText(QString::number(static_cast<double>(state) / static_cast<double>(m_store->meta().params), 'f', 2) +
                 QStringLiteral(" B/p"));
      QFont f = m_bars->font();
      f.setPointSizeF(7);
      t->setFont(f);
      t->setColor(QColor(0x33, 0x33, 0x33));
      t->setPadding(QMargins(0, 0, 0, 2));
    }
  }
  const std::optional<RunPrediction> prediction = predicted > 0 ? predictRun(*m_store) : std::nullopt;
  if (prediction) m_predicted->setName(predictionLegend(*prediction));
  for (int c = 0; c < kCategoryCount; ++c) {
    QCPBars* b = m_stack[static_cast<size_t>(c)];
    if (used[static_cast<size_t>(c)])
      b->addToLegend();
    else
      b->removeFromLegend();
  }
  if (predicted > 0)
    m_predicted->addToLegend();
  else
    m_predicted->removeFromLegend();
  PlotStyle::updateLegendRow(m_bars, false);
  // Without data the axes would only show made-up ranges.
  for (QCustomPlot* plot : {m_bars, m_time}) {
    plot->xAxis->setVisible(ranks > 0);
    plot->yAxis->setVisible(ranks > 0);
  }
  m_bars->xAxis->setTicker(ticker);
  m_bars->xAxis->setLabel(ranks > kFoldAboveRanks ? tr("rank") : QString());
  m_bars->xAxis->setRange(-0.6, std::max(0.6, column_count - 0.4));
  m_bars->yAxis->setRange(0, top > 0 ? top * 1.18 : 1.0);

  // Summary for the selected rank: the ZeRO paper's prediction next to the measurement.
  if (ranks == 0) {
    m_summary->setText(tr("<span style='color:#777'>Memory appears once a run allocates.</span>"));
  } else {
    const int r = std::clamp(m_rank, 0, ranks - 1);
    const auto bytes = ledgerBytes(r);
    int64_t state = 0, total = 0;
    for (int c = 0; c < kCategoryCount; ++c) {
      total += bytes[static_cast<size_t>(c)];
      if (isModelState(static_cast<Category>(c))) state += bytes[static_cast<size_t>(c)];
    }
    const int64_t params = m_store->meta().params;
    QString moment = atCursor() ? tr("at cursor %1 ms").arg(static_cast<double>(*m_cursor) * 1e-6, 0, 'f', 3)
                                : tr("at peak model state");
    QString text = tr("<b>rank %1</b> %2: model state <b>%3</b>")
                       .arg(r)
                       .arg(moment, quantity_text::sizeText(double(state), 2, ByteUnit::MiB));
    if (params > 0)
      text += tr(" = <b>%1 B/param</b> × %2 M").arg(static_cast<double>(state) / static_cast<double>(params), 0, 'f', 2)
                  .arg(static_cast<double>(params) * 1e-6, 0, 'f', 2);
    if (prediction)
      text += tr(" · predicted (%1, %2): %3 = %4 B/param, %5")
                  .arg(QString::fromStdString(formulaSource(prediction->config)))
                  .arg(QString::fromStdString(strategyName(prediction->config.strategy)))
                  .arg(QString::fromStdString(prediction->model_state_formula))
                  .arg(prediction->bytes_per_param, 0, 'g', 4)
                  .arg(quantity_text::sizeText(prediction->model_state_bytes, 2, ByteUnit::MiB));
    text += tr(" · all categories then %1").arg(quantity_text::sizeText(double(total), 2, ByteUnit::MiB));
    if (prediction && prediction->gathered.bytes > 0) {
      int64_t gathered_peak = 0;
      for (const MemorySample& s : m_series.samples(r))
        gathered_peak = std::max(gathered_peak, s.bytes[static_cast<size_t>(Category::Gathered)]);
      text += tr("<br>gathered parameters at their peak <b>%1</b>; formula: %2")
                  .arg(quantity_text::sizeText(double(gathered_peak), 2, ByteUnit::MiB))
                  .arg(QString::fromStdString(prediction->gathered.text));
    }
    if (m_activations) {
      // The lesson's numbers, from the summary's own function (the CLI prints the same line).
      text += QStringLiteral("<br>") + QString::fromStdString(activationFiguresText(*m_activations)).toHtmlEscaped();
      if (m_activations->mfu > 0) text += tr(" · MFU %1 %").arg(100.0 * m_activations->mfu, 0, 'f', 1);
      if (m_activations->hfu > m_activations->mfu)
        text += tr(", HFU %1 % (the recompute counted)").arg(100.0 * m_activations->hfu, 0, 'f', 1);
    }
    if (const auto& imported = m_store->meta().imported) text = importedSummary(*imported, r, bytes);
    if (!m_shown.showsAll())
      text += tr(" · <span style='color:#777'>drawn: %1 only</span>").arg(QString::fromStdString(m_shown.describe()));
    m_summary->setText(text);
  }
  m_bars->replot(QCustomPlot::rpQueuedReplot);
}

QString MemoryView::importedSummary(const ImportedSource& imported, int r,
                                    const std::array<int64_t, kCategoryCount>& bytes) const {
  int64_t total = 0;
  for (int64_t b : bytes) total += b;
  const int64_t gathered = bytes[static_cast<size_t>(Category::Gathered)];
  const MemorySample* peak = m_series.peakTotal(r);
  int64_t reserved_then = -1, reserved_peak = -1;
  if (static_cast<size_t>(r) < imported.reserved.size())
    for (const auto& [t, b] : imported.reserved[static_cast<size_t>(r)]) {
      reserved_peak = std::max(reserved_peak, b);
      const int64_t when = atCursor() ? *m_cursor : (peak ? peak->t_ns : 0);
      if (t <= when) reserved_then = b;
    }
  if (m_series.samples(r).empty() && reserved_peak < 0)
    return tr("<b>rank %1</b>: no memory samples — this PyTorch profiler trace holds no [memory] events (the "
              "profiler records them with profile_memory=True)").arg(r);
  QString text = tr("<b>rank %1</b> %2: allocated <b>%3</b>")
                     .arg(r)
                     .arg(atCursor() ? tr("at cursor %1 ms").arg(static_cast<double>(*m_cursor) * 1e-6, 0, 'f', 3)
                                     : tr("at peak allocated"))
                     .arg(quantity_text::sizeText(double(total), 2, ByteUnit::MiB));
  if (gathered > 0)
    text += tr(" (gathered under FSDP all-gathers %1)").arg(quantity_text::sizeText(double(gathered), 2, ByteUnit::MiB));
  if (reserved_then >= 0) text += tr(" · reserved then %1").arg(quantity_text::sizeText(double(reserved_then), 2, ByteUnit::MiB));
  if (reserved_peak >= 0) text += tr(" · peak reserved %1").arg(quantity_text::sizeText(double(reserved_peak), 2, ByteUnit::MiB));
  if (static_cast<size_t>(r) < imported.out_of_memory.size() && imported.out_of_memory[static_cast<size_t>(r)] > 0)
    text += tr(" · <span style='color:#C00000'><b>%n [OutOfMemory] event(s)</b></span>", nullptr,
               imported.out_of_memory[static_cast<size_t>(r)]);
  return text + tr(" <span style='color:#777'>(allocated = tensors alive; reserved = what the caching allocator holds)</span>");
}

void MemoryView::rebuildTime() {
  const int ranks = m_series.rankCount();
  const bool have = ranks > 0 && !m_series.samples(std::clamp(m_rank, 0, ranks - 1)).empty();
  for (QCPGraph* g : m_areas) g->data()->clear();
  m_totalLine->data()->clear();
  m_reservedLine->data()->clear();
  m_reservedLine->removeFromLegend();
  m_peakDot->setVisible(false);
  m_peakText->setVisible(false);
  m_chartPeak = -1;
  if (!have) {
    for (QCPGraph* g : m_areas) g->removeFromLegend();
    m_totalLine->removeFromLegend();
    PlotStyle::updateLegendRow(m_time, false);
    PlotStyle::setWrappedTitle(m_timeTitle, QString());
    m_cursorLine->setVisible(false);
    m_time->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  const int r = std::clamp(m_rank, 0, ranks - 1);
  const auto& all = m_series.samples(r);
  // A stacked, channel-filled step chart costs QCustomPlot time per point:
  // keep at most two samples per pixel column, the column's highest total
  // (peaks stay visible) and its last (the level it leaves).
  const int columns = std::max(200, m_time->axisRect()->width());
  std::vector<const MemorySample*> kept;
  kept.reserve(std::min(all.size(), static_cast<size_t>(2 * columns)));
  if (all.size() <= static_cast<size_t>(2 * columns)) {
    for (const MemorySample& s : all) kept.push_back(&s);
  } else {
    const double t0 = static_cast<double>(all.front().t_ns);
    const double span = std::max(1.0, static_cast<double>(all.back().t_ns) - t0);
    size_t i = 0;
    while (i < all.size()) {
      const auto column = static_cast<int64_t>((static_cast<double>(all[i].t_ns) - t0) / span * columns);
      const MemorySample* highest = &all[i];
      size_t j = i;
      for (; j < all.size() && static_cast<int64_t>((static_cast<double>(all[j].t_ns) - t0) / span * columns) == column; ++j)
        if (all[j].sumOf(m_shown) > highest->sumOf(m_shown)) highest = &all[j];
      kept.push_back(highest);
      if (&all[j - 1] != highest) kept.push_back(&all[j - 1]);
      i = j;
    }
  }
  const size_t n = kept.size() + 1;  // plus one at the run's end: steps need a right edge
  QVector<double> keys(static_cast<qsizetype>(n));
  std::array<QVector<double>, kCategoryCount> values;
  for (auto& v : values) v.resize(static_cast<qsizetype>(n));
  for (size_t i = 0; i < n; ++i) {
    const MemorySample& s = *kept[std::min(i, kept.size() - 1)];
    const int64_t t = i < kept.size() ? s.t_ns : std::max(m_store->endNs(), s.t_ns);
    keys[static_cast<qsizetype>(i)] = static_cast<double>(t) * 1e-6;
    double running = 0;
    for (int c = 0; c < kCategoryCount; ++c) {
      if (m_shown.shows(static_cast<Category>(c))) running += static_cast<double>(s.bytes[static_cast<size_t>(c)]) / kMiB;
      values[static_cast<size_t>(c)][static_cast<qsizetype>(i)] = running;
    }
  }
  for (int c = 0; c < kCategoryCount; ++c) m_areas[static_cast<size_t>(c)]->setData(keys, values[static_cast<size_t>(c)], true);
  // Legend: the categories this rank ever held, in stacking order.
  for (QCPGraph* g : m_areas) g->removeFromLegend();
  for (int c = 0; c < kCategoryCount; ++c) {
    bool used = false;
    if (!m_shown.shows(static_cast<Category>(c))) continue;
    for (const MemorySample& sample : all) used = used || sample.bytes[static_cast<size_t>(c)] > 0;
    if (used) m_areas[static_cast<size_t>(c)]->addToLegend();
  }
  m_totalLine->removeFromLegend();
  // An imported trace: the allocator's reserved bytes beside what was allocated.
  double reserved_top = 0;
  if (const auto& imported = m_store->meta().imported; imported && static_cast<size_t>(r) < imported->reserved.size()) {
    const auto& reserved = imported->reserved[static_cast<size_t>(r)];
    QVector<double> rk, rv;
    const size_t step = std::max<size_t>(1, reserved.size() / static_cast<size_t>(2 * columns));
    for (size_t i = 0; i < reserved.size(); i += step) {
      rk << static_cast<double>(reserved[i].first) * 1e-6;
      rv << static_cast<double>(reserved[i].second) / kMiB;
      reserved_top = std::max(reserved_top, rv.back());
    }
    if (!rk.isEmpty()) {
      rk << keys.back();
      rv << rv.back();
      m_reservedLine->setData(rk, rv, true);
      m_reservedLine->addToLegend();
    }
  }
  PlotStyle::updateLegendRow(m_time, false);
  PlotStyle::setWrappedTitle(m_timeTitle, m_store->meta().imported
                           ? tr("rank %1 over time: allocated (stacked) and reserved, from the trace's [memory] events").arg(r)
                           : m_shown.showsAll() ? tr("rank %1 over time: every category, stacked").arg(r)
                                                : tr("rank %1 over time: %2, stacked").arg(r).arg(QString::fromStdString(m_shown.describe())));
  m_totalLine->setData(keys, values[kCategoryCount - 1], true);

  // The peak of what is drawn (this rank, these categories): named for what
  // it is, since the compare readout's peak is all categories on the most-loaded rank.
  const MemorySample* peak = m_series.peakOf(r, m_shown);
  m_chartPeak = peak->sumOf(m_shown);
  const double peak_mib = static_cast<double>(m_chartPeak) / kMiB;
  // Placed by coordinates, not on the graph: several samples can share the
  // peak's time (a modeled clock stamps many ops alike) and the graph would
  // pick the first of them.
  m_peakDot->position->setCoords(static_cast<double>(peak->t_ns) * 1e-6, peak_mib);
  m_peakDot->setVisible(true);
  const QString peak_text = quantity_text::sizeText(double(m_chartPeak), 1, ByteUnit::MiB);
  m_peakText->setText(m_store->meta().imported ? tr("rank %1 peak allocated %2").arg(r).arg(peak_text)
                     : m_shown.showsAll()
                         ? tr("rank %1 peak, all categories: %2").arg(r).arg(peak_text)
                         : tr("rank %1 peak of %2: %3").arg(r).arg(QString::fromStdString(m_shown.describe()), peak_text));
  m_peakText->setVisible(true);
  m_time->xAxis->setRange(keys.front(), std::max(keys.back(), keys.front() + 1e-3));
  m_time->yAxis->setRange(0, std::max(std::max(peak_mib, reserved_top) * 1.22, 1e-3));
  // A peak near either end keeps its label inside the plot.
  const QCPRange span = m_time->xAxis->range();
  const double at = span.size() > 0 ? (static_cast<double>(peak->t_ns) * 1e-6 - span.lower) / span.size() : 0.5;
  m_peakText->setPositionAlignment(Qt::AlignBottom |
                                   (at > 0.85 ? Qt::AlignRight : at < 0.15 ? Qt::AlignLeft : Qt::AlignHCenter));
  if (m_cursor) {
    const double x = static_cast<double>(*m_cursor) * 1e-6;
    m_cursorLine->point1->setCoords(x, 0);
    m_cursorLine->point2->setCoords(x, 1);
    m_cursorLine->setVisible(true);
  } else {
    m_cursorLine->setVisible(false);
  }
  m_time->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope
