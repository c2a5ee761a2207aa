#include "snapshot_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMouseEvent>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>

#include "common/units.h"
#include "palette.h"
#include "plot_style.h"
#include "postmortem/postmortem_report.h"
#include "postmortem/snapshot_series.h"
#include "snapshot_import.h"

namespace shardscope {

using postmortem::SnapshotCategory;
using postmortem::SnapshotDevice;
using postmortem::SnapshotLedger;

namespace {

constexpr int kColumnsPerRow = 4;

QString snapshotText(int64_t bytes) { return QString::fromStdString(postmortem::snapshotBytesText(bytes)); }

QString categoryLabel(SnapshotCategory c) {
  const std::string_view s = postmortem::snapshotCategoryLabel(c);
  return QString::fromLatin1(s.data(), static_cast<int>(s.size()));
}

// The ledger's colours for the categories a snapshot's stacks tell apart.
QColor snapshotCategoryColor(SnapshotCategory c) {
  switch (c) {
    case SnapshotCategory::Gathered: return Palette::category(Category::Gathered);
    case SnapshotCategory::Grad: return Palette::category(Category::Grad);
    case SnapshotCategory::Optimizer: return Palette::category(Category::AdamM);
    case SnapshotCategory::Activation: return Palette::category(Category::Activation);
    case SnapshotCategory::Other: break;
  }
  return QColor(0xD2, 0xD5, 0xDA);  // lighter than activations' grey: what no rule claimed
}

void styleRect(QCPAxisRect* rect, const QFont& base) {
  for (QCPAxis* a : rect->axes()) PlotStyle::styleAxis(a, base);
  rect->axis(QCPAxis::atTop)->setVisible(false);
  rect->axis(QCPAxis::atRight)->setVisible(false);
}

QString entryMoment(const SnapshotDevice& d, int64_t entry) {
  if (entry < 0) return QObject::tr("before the first entry");
  if (d.time_axis)
    return QObject::tr("entry %1, %2 ms").arg(entry).arg(postmortem::snapshotX(d, entry) / 1000.0, 0, 'f', 3);
  return QObject::tr("entry %1").arg(entry);
}

}  // namespace

SnapshotView::SnapshotView(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this)) {
  setObjectName(QStringLiteral("snapshotView"));
  m_plot->setObjectName(QStringLiteral("snapshotPlot"));
  PlotStyle::styleAxes(m_plot);
  // The layout is rebuilt per snapshot set; the legend survives it, outside any layout.
  m_plot->axisRect()->insetLayout()->take(m_plot->legend);
  m_plot->plotLayout()->clear();
  m_plot->legend->setVisible(false);
  QFont legend_font = font();
  legend_font.setPointSizeF(8);
  m_plot->legend->setFont(legend_font);
  m_plot->legend->setBrush(QColor(255, 255, 255, 220));
  m_plot->legend->setBorderPen(QPen(QColor(0xD0, 0xD3, 0xD8)));
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  m_plot->setMinimumHeight(260);
  m_plot->setToolTip(tr("Click the chart to see the ledger after that entry; drag or wheel to pan and zoom along the trace"));
  m_empty = PlotStyle::emptyMessage(m_plot, tr("Open a PyTorch memory snapshot (File ▸ Open, or shardscope snap.pickle)"));

  m_tableTitle = new QLabel(this);
  m_tableTitle->setContentsMargins(6, 2, 6, 0);
  m_tableTitle->setWordWrap(true);
  m_table = new QTableWidget(this);
  m_table->setObjectName(QStringLiteral("snapshotLargest"));
  m_table->setColumnCount(5);
  m_table->setHorizontalHeaderLabels({tr("Size"), tr("Category"), tr("Innermost frame"), tr("Allocated at"), tr("Address")});
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->verticalHeader()->setVisible(false);
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_frames = new QListWidget(this);
  m_frames->setObjectName(QStringLiteral("snapshotFrames"));
  m_frames->setToolTip(tr("The selected allocation's stack, innermost frame first"));

  auto* bottom = new QSplitter(Qt::Horizontal, this);
  auto* table_box = new QWidget(bottom);
  auto* table_layout = new QVBoxLayout(table_box);
  table_layout->setContentsMargins(0, 0, 0, 0);
  table_layout->setSpacing(2);
  table_layout->addWidget(m_tableTitle);
  table_layout->addWidget(m_table, 1);
  bottom->addWidget(table_box);
  bottom->addWidget(m_frames);
  bottom->setStretchFactor(0, 3);
  bottom->setStretchFactor(1, 2);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_plot);
  split->addWidget(bottom);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);
  // At least four rows of the table stay in view.
  m_table->setMinimumHeight(m_table->horizontalHeader()->sizeHint().height() + 4 * m_table->verticalHeader()->defaultSectionSize() + 4);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);

  connect(m_table, &QTableWidget::currentCellChanged, this, [this](int row) { showFrames(row); });
  connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) { m_pressAt = e->pos(); });
  connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* e) {
    if ((e->pos() - m_pressAt).manhattanLength() <= 4) plotClicked(e);
  });
  rebuild();
}

void SnapshotView::setSnapshots(std::shared_ptr<const SnapshotSet> set) {
  m_set = std::move(set);
  m_tableColumn = 0;
  rebuild();
}

QString SnapshotView::columnTitle(int column) const { return m_columns[static_cast<size_t>(column)].title; }

const SnapshotDevice& SnapshotView::device(int column) const { return *m_columns[static_cast<size_t>(column)].device; }

void SnapshotView::rebuild() {
  if (QCPLayout* holder = m_plot->legend->layout()) holder->take(m_plot->legend);
  m_plot->legend->setVisible(false);
  m_plot->clearItems();
  m_plot->clearPlottables();
  m_plot->plotLayout()->clear();
  m_columns.clear();
  if (m_set) {
    for (const SnapshotFile& f : m_set->files)
      for (const SnapshotDevice& d : f.snapshot.devices) {
        Column c;
        c.device = &d;
        c.title = m_set->files.size() > 1 ? tr("rank %1 · cuda:%2 · %3").arg(f.rank).arg(d.device).arg(f.name)
                                          : tr("cuda:%1").arg(d.device);
        m_columns.push_back(std::move(c));
      }
  }
  m_empty->setVisible(m_columns.empty());
  if (m_set && m_columns.empty())
    m_empty->setText(tr("%1 has no device with segments or trace entries: nothing was allocated").arg(m_set->source()));
  // Row 0: the chart's legend across the top; row 1: the columns.
  m_grid = new QCPLayoutGrid;
  m_plot->plotLayout()->addElement(0, 0, m_grid);
  // Ledgers line up with ledgers and charts with charts, whatever their labels' widths.
  auto* ledger_margins = m_columns.empty() ? nullptr : new QCPMarginGroup(m_plot);
  auto* chart_margins = m_columns.empty() ? nullptr : new QCPMarginGroup(m_plot);
  for (size_t i = 0; i < m_columns.size(); ++i) {
    buildColumn(m_columns[i], static_cast<int>(i), static_cast<int>(m_columns.size()));
    m_columns[i].ledgerRect->setMarginGroup(QCP::msLeft | QCP::msRight | QCP::msTop | QCP::msBottom, ledger_margins);
    m_columns[i].chartRect->setMarginGroup(QCP::msLeft | QCP::msRight | QCP::msTop | QCP::msBottom, chart_margins);
  }
  if (!m_columns.empty()) {
    // The legend at the top left: its row holds it and a stretch beside it.
    auto* row = new QCPLayoutGrid;
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, row);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    row->addElement(0, 0, m_plot->legend);
    row->addElement(0, 1, new QCPLayoutElement(m_plot));
    row->setColumnStretchFactors({0.001, 1.0});
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setWrap(0);
    m_plot->legend->setMargins(QMargins(6, 2, 6, 0));
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->legend->setBrush(Qt::NoBrush);
    m_plot->legend->setVisible(true);
  }
  m_tableColumn = std::clamp(m_tableColumn, 0, std::max(0, columnCount() - 1));
  fillTable();
  m_plot->replot();
}

void SnapshotView::buildColumn(Column& c, int index, int columns) {
  const SnapshotDevice& d = *c.device;
  // The axis in the unit its peak's text uses, MiB at least.
  const ByteUnit unit = std::max(byteUnitFor(double(std::max(d.peak_reserved, d.peak_allocated))), ByteUnit::MiB);
  c.unit = byteUnitSize(unit);
  c.unitName = QString::fromLatin1(byteUnitName(unit));
  c.xScale = d.time_axis ? 1000.0 : 1.0;

  // A device is a row: its heading over the ledger (left) and the chart
  // (right); more than three devices go in two columns of rows.
  auto* cell = new QCPLayoutGrid;
  const int per_row = columns > 3 ? 2 : 1;
  m_grid->addElement(index / per_row, index % per_row, cell);
  QFont heading_font = font();
  heading_font.setPointSizeF(8);
  c.heading = new QCPTextElement(m_plot, QString(), heading_font);
  c.heading->setTextFlags(Qt::AlignLeft | Qt::AlignVCenter);
  c.heading->setMargins(QMargins(8, 6, 4, 0));
  c.ledgerRect = new QCPAxisRect(m_plot);
  c.chartRect = new QCPAxisRect(m_plot);
  auto* pair = new QCPLayoutGrid;
  cell->addElement(0, 0, c.heading);
  cell->addElement(1, 0, pair);
  cell->setRowStretchFactors({0.001, 1.0});
  cell->setRowSpacing(0);
  pair->addElement(0, 0, c.ledgerRect);
  pair->addElement(0, 1, c.chartRect);
  pair->setColumnStretchFactors({1.3, 2.0});
  pair->setColumnSpacing(8);
  styleRect(c.ledgerRect, font());
  styleRect(c.chartRect, font());
  c.ledgerRect->setRangeDrag(Qt::Orientations());
  c.ledgerRect->setRangeZoom(Qt::Orientations());
  c.chartRect->setRangeDrag(Qt::Horizontal);
  c.chartRect->setRangeZoom(Qt::Horizontal);

  // Ledger: one bar per category, top to bottom in the ledger's order.
  QCPAxis* cats = c.ledgerRect->axis(QCPAxis::atLeft);
  QCPAxis* bytes = c.ledgerRect->axis(QCPAxis::atBottom);
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int k = 0; k < postmortem::kSnapshotCategoryCount; ++k) ticker->addTick(k, categoryLabel(static_cast<SnapshotCategory>(k)));
  cats->setTicker(ticker);
  cats->setRangeReversed(true);
  cats->setRange(-0.6, postmortem::kSnapshotCategoryCount - 0.4);
  cats->grid()->setVisible(false);
  cats->setTickLength(0, 0);
  cats->setSubTicks(false);
  bytes->setLabel(c.unitName);
  bytes->ticker()->setTickCount(3);  // a narrow ledger keeps its tick labels apart
  c.bars.clear();
  for (int k = 0; k < postmortem::kSnapshotCategoryCount; ++k) {
    // One QCPBars has one brush: a bar per category, in the ledger's colour.
    auto* bar = new QCPBars(cats, bytes);
    bar->setWidth(0.7);
    bar->setPen(Qt::NoPen);
    bar->setBrush(snapshotCategoryColor(static_cast<SnapshotCategory>(k)));
    bar->removeFromLegend();
    c.bars.push_back(bar);
  }
  c.barLabels.clear();
  for (int k = 0; k < postmortem::kSnapshotCategoryCount; ++k) {
    auto* label = new QCPItemText(m_plot);
    label->position->setAxes(bytes, cats);
    label->setClipToAxisRect(false);  // a narrow ledger's label may run into the gap before the chart
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    label->setPadding(QMargins(4, 0, 0, 0));
    QFont f = font();
    f.setPointSizeF(7.5);
    label->setFont(f);
    c.barLabels.push_back(label);
  }

  // Chart: allocated (filled) and reserved bytes along the trace.
  QCPAxis* x = c.chartRect->axis(QCPAxis::atBottom);
  QCPAxis* y = c.chartRect->axis(QCPAxis::atLeft);
  x->setLabel(d.time_axis ? tr("ms since the first entry") : tr("trace entry (no time_us)"));
  y->setLabel(c.unitName);
  c.reserved = new QCPGraph(x, y);
  c.reserved->setName(tr("reserved"));
  c.reserved->setLineStyle(QCPGraph::lsStepLeft);
  c.reserved->setPen(QPen(QColor(0x44, 0x44, 0x44), 1.2));
  c.allocated = new QCPGraph(x, y);
  c.allocated->setName(tr("allocated"));
  c.allocated->setLineStyle(QCPGraph::lsStepLeft);
  c.allocated->setPen(QPen(QColor(0x00, 0x72, 0xB2), 1.2));
  c.allocated->setBrush(QColor(0x56, 0xB4, 0xE9, 90));
  if (index > 0) {
    c.reserved->removeFromLegend();
    c.allocated->removeFromLegend();
  }
  const double first = d.entries() > 0 ? postmortem::snapshotX(d, 0) : 0.0;
  const double last = d.entries() > 0 ? postmortem::snapshotX(d, static_cast<int64_t>(d.entries()) - 1) : 1.0;
  const double pad = std::max((last - first) * 0.02, d.time_axis ? 1.0 : 0.5);
  x->setRange((first - pad) / c.xScale, (last + pad) / c.xScale);
  y->setRange(0, static_cast<double>(std::max<int64_t>({d.peak_reserved, d.peak_allocated, 1})) * 1.35 / c.unit);  // room above the peak for its label
  thin(c);
  connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this, index] {
    thin(m_columns[static_cast<size_t>(index)]);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
  });

  // The allocated peak: a dot and its size.
  auto* peak = new QCPGraph(x, y);
  peak->setName(tr("allocated peak"));
  peak->setLineStyle(QCPGraph::lsNone);
  peak->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QColor(0xD5, 0x5E, 0x00), QColor(0xD5, 0x5E, 0x00), 7));
  const double peak_x = postmortem::snapshotX(d, d.peak_allocated_index) / c.xScale;
  peak->addData(peak_x, static_cast<double>(d.peak_allocated) / c.unit);
  if (index > 0) peak->removeFromLegend();
  auto* peak_text = new QCPItemText(m_plot);
  peak_text->position->setAxes(x, y);
  peak_text->setClipAxisRect(c.chartRect);
  peak_text->position->setCoords(peak_x, static_cast<double>(d.peak_allocated) / c.unit);
  const bool right_half = d.entries() > 0 && peak_x * c.xScale > (first + last) / 2;
  peak_text->setPositionAlignment((right_half ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignBottom);
  peak_text->setPadding(QMargins(4, 0, 4, 4));
  peak_text->setText(tr("peak %1").arg(snapshotText(d.peak_allocated)));
  peak_text->setColor(QColor(0xD5, 0x5E, 0x00));

  // Each OOM: a dashed line and what the allocator asked for and CUDA had free.
  for (const postmortem::SnapshotOom& o : d.ooms) {
    const double ox = postmortem::snapshotX(d, static_cast<int64_t>(o.index)) / c.xScale;
    auto* line = new QCPItemStraightLine(m_plot);
    line->point1->setAxes(x, y);
    line->point2->setAxes(x, y);
    line->point1->setCoords(ox, 0);
    line->point2->setCoords(ox, 1);
    line->setClipAxisRect(c.chartRect);
    line->setPen(QPen(QColor(0xCC, 0x22, 0x22), 1.5, Qt::DashLine));
    auto* text = new QCPItemText(m_plot);
    text->position->setAxisRect(c.chartRect);
    text->position->setAxes(x, y);
    text->position->setTypeX(QCPItemPosition::ptPlotCoords);
    text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(ox, 0.4);
    const bool right = ox * c.xScale > (first + last) / 2;
    text->setPositionAlignment((right ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
    text->setPadding(QMargins(4, 2, 4, 2));
    text->setClipAxisRect(c.chartRect);
    text->setColor(QColor(0xCC, 0x22, 0x22));
    text->setBrush(QColor(255, 255, 255, 200));
    text->setText(tr("OOM: asked %1\ndevice_free %2").arg(snapshotText(o.requested_bytes), snapshotText(o.device_free_bytes)));
    if (!c.oomText) c.oomText = text;
  }

  c.cursor = new QCPItemStraightLine(m_plot);
  c.cursor->point1->setAxes(x, y);
  c.cursor->point2->setAxes(x, y);
  c.cursor->setClipAxisRect(c.chartRect);
  c.cursor->setPen(QPen(Palette::cursor(), 1));
  c.cursor->setVisible(false);

  c.ledger = postmortem::snapshotLedgerAt(d, d.peak_allocated_index);
  drawLedger(c);
}

void SnapshotView::drawLedger(Column& c) {
  const SnapshotDevice& d = *c.device;
  const SnapshotLedger& l = c.ledger;
  int64_t widest = 1;
  for (int k = 0; k < postmortem::kSnapshotCategoryCount; ++k) widest = std::max(widest, l.by_category[static_cast<size_t>(k)]);
  for (int k = 0; k < postmortem::kSnapshotCategoryCount; ++k) {
    const int64_t b = std::max<int64_t>(l.bytes(static_cast<SnapshotCategory>(k)), 0);
    c.bars[static_cast<size_t>(k)]->data()->clear();
    c.bars[static_cast<size_t>(k)]->addData(k, static_cast<double>(b) / c.unit);
    QCPItemText* label = c.barLabels[static_cast<size_t>(k)];
    label->position->setCoords(static_cast<double>(b) / c.unit, k);
    label->setText(snapshotText(l.bytes(static_cast<SnapshotCategory>(k))));
  }
  QCPAxis* bytes = c.ledgerRect->axis(QCPAxis::atBottom);
  bytes->setRange(0, static_cast<double>(widest) * 1.45 / c.unit);

  const QString moment = l.entry == d.peak_allocated_index ? tr("ledger at the allocated peak (%1)").arg(entryMoment(d, l.entry))
                                                           : tr("ledger after %1").arg(entryMoment(d, l.entry));
  QStringList lines;
  lines << tr("%1 — peak %2 allocated, %3 reserved").arg(c.title, snapshotText(d.peak_allocated), snapshotText(d.peak_reserved));
  lines << moment + tr(": %1 allocated, %2 reserved").arg(snapshotText(l.allocated), snapshotText(l.reserved));
  QString share = tr("unattributed %1 %").arg(100.0 * l.unattributedShare(), 0, 'f', 1);
  if (l.bytes(SnapshotCategory::Other) > 0)
    share += tr(" (other: %1 with no stack, %2 from before the trace)").arg(snapshotText(l.no_stack_bytes), snapshotText(l.before_trace_bytes));
  lines << share;
  c.heading->setText(lines.join(QLatin1Char('\n')));
}

void SnapshotView::thin(Column& c) {
  const SnapshotDevice& d = *c.device;
  const QCPRange range = c.chartRect->axis(QCPAxis::atBottom)->range();
  const int per_row = std::min(columnCount() > 0 ? columnCount() : 1, kColumnsPerRow);
  const int pixels = std::max(200, m_plot->width() / std::max(1, per_row));
  const postmortem::SnapshotSeries s = postmortem::snapshotSeries(d, range.lower * c.xScale, range.upper * c.xScale, pixels);
  const auto fill = [&c](QCPGraph* g, const postmortem::SnapshotCurve& curve) {
    QVector<QCPGraphData> data(static_cast<int>(curve.x.size()));
    for (size_t i = 0; i < curve.x.size(); ++i)
      data[static_cast<int>(i)] = QCPGraphData(curve.x[i] / c.xScale, static_cast<double>(curve.bytes[i]) / c.unit);
    g->data()->set(data, true);
  };
  fill(c.allocated, s.allocated);
  fill(c.reserved, s.reserved);
}

void SnapshotView::showEntry(int column, int64_t entry) {
  if (column < 0 || column >= columnCount()) return;
  Column& c = m_columns[static_cast<size_t>(column)];
  c.ledger = postmortem::snapshotLedgerAt(*c.device, entry);
  const double x = postmortem::snapshotX(*c.device, c.ledger.entry) / c.xScale;
  c.cursor->point1->setCoords(x, 0);
  c.cursor->point2->setCoords(x, 1);
  c.cursor->setVisible(true);
  drawLedger(c);
  m_plot->replot();
  emit entryPicked(column, c.ledger.entry);
}

void SnapshotView::plotClicked(QMouseEvent* event) {
  for (int i = 0; i < columnCount(); ++i) {
    const Column& c = m_columns[static_cast<size_t>(i)];
    if (c.chartRect->rect().contains(event->pos())) {
      const double x = c.chartRect->axis(QCPAxis::atBottom)->pixelToCoord(event->pos().x()) * c.xScale;
      setTableColumn(i);
      showEntry(i, postmortem::snapshotEntryAt(*c.device, x));
      return;
    }
    if (c.ledgerRect->rect().contains(event->pos())) {
      setTableColumn(i);
      return;
    }
  }
}

void SnapshotView::setTableColumn(int column) {
  if (column < 0 || column >= columnCount() || column == m_tableColumn) return;
  m_tableColumn = column;
  fillTable();
}

void SnapshotView::fillTable() {
  m_table->setRowCount(0);
  m_frames->clear();
  if (m_columns.empty()) {
    m_tableTitle->setText(tr("The largest live allocations at the peak appear here once a snapshot is open."));
    return;
  }
  const Column& c = m_columns[static_cast<size_t>(m_tableColumn)];
  const SnapshotDevice& d = *c.device;
  m_tableTitle->setText(tr("<b>Largest live allocations at the allocated peak</b> of %1 (%2): %3 of %4 live · click a "
                           "chart to pick a device, a row for its stack")
                            .arg(c.title.toHtmlEscaped(), entryMoment(d, d.peak_allocated_index))
                            .arg(d.peak_largest.size())
                            .arg(d.peak_live_allocations));
  m_table->setRowCount(static_cast<int>(d.peak_largest.size()));
  for (size_t r = 0; r < d.peak_largest.size(); ++r) {
    const postmortem::SnapshotAllocation& a = d.peak_largest[r];
    const int row = static_cast<int>(r);
    auto* size = new QTableWidgetItem(snapshotText(a.size));
    size->setData(Qt::UserRole, QVariant::fromValue<qint64>(a.size));
    size->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_table->setItem(row, 0, size);
    m_table->setItem(row, 1, new QTableWidgetItem(categoryLabel(a.category)));
    m_table->setItem(row, 3, new QTableWidgetItem(a.entry >= 0 ? entryMoment(d, a.entry) : tr("before the trace")));
    m_table->setItem(row, 4, new QTableWidgetItem(QStringLiteral("0x%1").arg(static_cast<qulonglong>(a.addr), 0, 16)));
    // The first frame memory_viz shows that is the user's Python, not the unwinder's `??:0 torch::unwind::unwind()`.
    m_table->setItem(row, 2, new QTableWidgetItem(QString::fromStdString(postmortem::snapshotUserFrameText(a))));
  }
  m_table->resizeColumnsToContents();
  if (!d.peak_largest.empty()) m_table->selectRow(0);
}

void SnapshotView::showFrames(int row) {
  m_frames->clear();
  if (m_columns.empty() || row < 0) return;
  const SnapshotDevice& d = *m_columns[static_cast<size_t>(m_tableColumn)].device;
  if (row >= static_cast<int>(d.peak_largest.size())) return;
  const postmortem::SnapshotAllocation& a = d.peak_largest[static_cast<size_t>(row)];
  if (a.frames.empty()) m_frames->addItem(tr("(no stack recorded for this allocation)"));
  if (a.frames_omitted > 0)
    m_frames->addItem(tr("(%n unwinder / interpreter frame(s) left out, as memory_viz does)", nullptr, a.frames_omitted));
  for (const postmortem::SnapshotFrame& f : a.frames)
    m_frames->addItem(QStringLiteral("%1:%2  %3").arg(QString::fromStdString(f.filename)).arg(f.line).arg(QString::fromStdString(f.name)));
}

QString SnapshotView::oomMarkerText(int column) const {
  const Column& c = m_columns[static_cast<size_t>(column)];
  return c.oomText ? c.oomText->text() : QString();
}

QString SnapshotView::headingText(int column) const { return m_columns[static_cast<size_t>(column)].heading->text(); }

double SnapshotView::barBytes(int column, SnapshotCategory category) const {
  const Column& c = m_columns[static_cast<size_t>(column)];
  const QCPBars* bar = c.bars[static_cast<size_t>(category)];
  return bar->data()->isEmpty() ? 0.0 : bar->data()->begin()->value * c.unit;
}

double SnapshotView::chartX(int column, int64_t entry) const {
  const Column& c = m_columns[static_cast<size_t>(column)];
  return postmortem::snapshotX(*c.device, entry) / c.xScale;
}

int SnapshotView::chartPoints(int column) const {
  return m_columns[static_cast<size_t>(column)].allocated->dataCount();
}

QString SnapshotView::figureTitle() const {
  return tr("Memory snapshot: the ledger by category and allocated / reserved bytes over the trace");
}

QString SnapshotView::figureSubtitle() const {
  if (!m_set) return {};
  size_t entries = 0;
  for (const Column& c : m_columns) entries += c.device->entries();
  return tr("%1 · %2 device(s) · %3 trace entries · categories from the stack frames (docs/postmortem.md)")
      .arg(m_set->source())
      .arg(columnCount())
      .arg(entries);
}

void SnapshotView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  for (Column& c : m_columns) thin(c);
}

}  // namespace shardscope
