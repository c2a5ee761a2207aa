#include "hta_view.h"

#include <QComboBox>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

#include "common/units.h"
#include "kineto/trace_analysis.h"
#include "palette.h"
#include "plot_style.h"
#include "qcustomplot.h"

namespace shardscope {

namespace {

// Up to this many idle-time bars their labels sit flat under them, two lines each; beyond, upright.
constexpr int kIdleBarsLabelledFlat = 12;

QTableWidget* htaTable(const QString& name, const QStringList& headers, QWidget* parent) {
  auto* t = new QTableWidget(0, static_cast<int>(headers.size()), parent);
  t->setObjectName(name);
  t->setHorizontalHeaderLabels(headers);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->setAlternatingRowColors(true);
  t->verticalHeader()->setVisible(false);
  t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  t->horizontalHeader()->setStretchLastSection(true);
  return t;
}

// A number as `analyze` prints it: fixed decimals, "n/a" where core has none (NaN).
QString htaNumber(double v, int decimals) { return std::isnan(v) ? QStringLiteral("n/a") : QString::number(v, 'f', decimals); }
QString htaMicros(double ns) { return htaNumber(ns / kNsPerUs, 3); }
QString htaPercent(double ratio) { return std::isnan(ratio) ? QStringLiteral("n/a") : htaNumber(100.0 * ratio, 2) + " %"; }

// Numbers right-aligned; text_column (a name or label) left.
void setHtaRow(QTableWidget* t, int row, const QStringList& cells, int text_column = -1) {
  for (int c = 0; c < cells.size(); ++c) {
    auto* item = new QTableWidgetItem(cells[c]);
    item->setTextAlignment((c == text_column ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter);
    t->setItem(row, c, item);
  }
}

QStringList htaStatsCells(const kineto::HtaStats& s, double scale, int decimals) {
  return {QString::number(s.count), htaNumber(s.mean * scale, decimals), htaNumber(s.stddev * scale, decimals),
          htaNumber(s.min * scale, decimals), htaNumber(s.p25 * scale, decimals), htaNumber(s.p50 * scale, decimals),
          htaNumber(s.p75 * scale, decimals), htaNumber(s.max * scale, decimals)};
}

QStringList htaStatsHeaders() {
  return {QObject::tr("count"), QObject::tr("mean"), QObject::tr("std"),  QObject::tr("min"),
          QObject::tr("25 %"),  QObject::tr("50 %"), QObject::tr("75 %"), QObject::tr("max")};
}

}  // namespace

HtaView::HtaView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("htaView"));
  auto* box = new QVBoxLayout(this);
  m_empty = new QLabel(tr("Holistic Trace Analysis' idle time, launch queue length, kernel breakdown and launch "
                          "statistics, for an imported PyTorch profiler job: File ▸ Open trace folder."),
                       this);
  m_empty->setWordWrap(true);
  m_rank = new QComboBox(this);
  m_rank->setObjectName(QStringLiteral("htaRank"));
  m_tabs = new QTabWidget(this);
  m_idle = htaTable(QStringLiteral("htaIdleTable"),
                     {tr("stream"), tr("GPU events"), tr("host wait µs"), tr("host wait"), tr("kernel wait µs"),
                      tr("kernel wait"), tr("other µs"), tr("other"), tr("gaps without launch")},
                     this);
  m_idle->setToolTip(tr("HTA's get_idle_time_breakdown: each gap before a GPU event is host wait when its launch "
                        "began after the previous event ended, kernel wait when under 30 µs, else other"));
  m_queue = htaTable(QStringLiteral("htaQueueTable"), QStringList{tr("stream")} + htaStatsHeaders(), this);
  m_queue->setToolTip(tr("HTA's get_queue_length_summary: launches not yet started on the stream, sampled at each "
                         "launch and each GPU event start"));
  m_kernels = htaTable(QStringLiteral("htaKernelTable"),
                        {tr("type"), tr("events"), tr("sum µs"), tr("mean µs"), tr("max µs"), tr("min µs"),
                         tr("std µs"), tr("kernel")},
                        this);
  m_kernels->setToolTip(tr("HTA's get_gpu_kernel_breakdown: per type the top 10 names within 80 % of the time; "
                           "once grouped, a name's max, min and mean are its sum and \"others\" is over the names' sums"));
  m_launch = htaTable(QStringLiteral("htaLaunchTable"), QStringList{tr("µs")} + htaStatsHeaders(), this);
  m_launch->setToolTip(tr("HTA's get_cuda_kernel_launch_stats: every launch call HTA knows (cudaLaunchKernel, "
                          "cudaLaunchKernelExC, cuLaunchKernel, cudaMemcpyAsync, ...) paired with its GPU events by "
                          "correlation; launch delay as HTA defines it since January 2025: "
                          "max(0, gpu ts - (cpu ts + cpu dur))"));
  auto* launchPage = new QWidget(this);
  auto* launchBox = new QVBoxLayout(launchPage);
  launchBox->setContentsMargins(0, 0, 0, 0);
  m_launchNote = new QLabel(launchPage);
  m_launchNote->setObjectName(QStringLiteral("htaLaunchNote"));
  m_launchNote->setWordWrap(true);
  launchBox->addWidget(m_launch, 1);
  launchBox->addWidget(m_launchNote);
  m_idlePlot = new QCustomPlot(this);
  m_idlePlot->setObjectName(QStringLiteral("htaIdlePlot"));
  m_idlePlot->setMinimumHeight(160);
  PlotStyle::styleAxes(m_idlePlot);
  PlotStyle::followTheme(m_idlePlot);
  auto* idlePage = new QSplitter(Qt::Vertical, this);
  idlePage->addWidget(m_idle);
  idlePage->addWidget(m_idlePlot);
  m_tabs->addTab(idlePage, tr("Idle time"));
  m_tabs->addTab(m_queue, tr("Queue length"));
  m_tabs->addTab(m_kernels, tr("Kernels"));
  m_tabs->addTab(launchPage, tr("Launch delay"));
  box->addWidget(m_empty);
  box->addWidget(m_rank);
  box->addWidget(m_tabs, 1);
  connect(m_rank, &QComboBox::currentIndexChanged, this, &HtaView::showRank);
  setAnalysis(nullptr);
}

void HtaView::setAnalysis(std::shared_ptr<const kineto::JobAnalysis> analysis) {
  m_analysis = std::move(analysis);
  const bool shown = m_analysis && !m_analysis->ranks.empty();
  m_empty->setVisible(!shown);
  m_rank->setVisible(shown);
  m_tabs->setVisible(shown);
  {
    const QSignalBlocker block(m_rank);
    m_rank->clear();
    if (shown)
      for (const kineto::RankAnalysis& r : m_analysis->ranks) m_rank->addItem(tr("rank %1").arg(r.rank));
  }
  int streams = 0;
  if (shown)
    for (const kineto::RankAnalysis& r : m_analysis->ranks) streams += static_cast<int>(r.hta_analyses.idle_time.streams.size());
  m_idleAllRanks = streams <= kMaxIdleBars;
  drawIdle(-1);
  showRank(shown ? 0 : -1);
}

QString HtaView::idleFigureTitle() const {
  if (!m_analysis || m_analysis->ranks.empty()) return tr("Idle time breakdown (HTA)");
  if (m_idleAllRanks) return tr("Idle time breakdown per rank and stream (HTA)");
  return tr("Idle time breakdown of %1's streams (HTA; the job has over %2 streams)").arg(m_rank->currentText()).arg(kMaxIdleBars);
}

void HtaView::drawIdle(int rank_index) {
  m_idlePlot->clearPlottables();
  m_idlePlot->legend->setVisible(false);
  if (!m_analysis) {
    m_idlePlot->replot();
    return;
  }
  QVector<double> ticks, host, kernel, other;
  QVector<QString> labels;
  int64_t top_ns = 0;
  for (size_t i = 0; i < m_analysis->ranks.size(); ++i) {
    if (rank_index >= 0 && static_cast<size_t>(rank_index) != i) continue;
    const kineto::RankAnalysis& r = m_analysis->ranks[i];
    for (const kineto::HtaStreamIdleTime& s : r.hta_analyses.idle_time.streams) {
      ticks << ticks.size() + 1;
      labels << QStringLiteral("rank %1 · stream %2").arg(r.rank).arg(s.stream);
      host << double(s.host_wait_ns);
      kernel << double(s.kernel_wait_ns);
      other << double(s.other_ns);
      top_ns = std::max(top_ns, s.idleNs());
    }
  }
  // µs for a job idle under a millisecond per stream, else ms: bars read as whole numbers.
  const bool micros = top_ns < static_cast<int64_t>(kNsPerMs);
  const double scale = micros ? 1.0 / kNsPerUs : 1.0 / kNsPerMs;
  for (QVector<double>* v : {&host, &kernel, &other})
    for (double& x : *v) x *= scale;
  QCPBars* below = nullptr;
  const auto stack = [&](const QVector<double>& values, const QColor& colour, const QString& name) {
    auto* b = new QCPBars(m_idlePlot->xAxis, m_idlePlot->yAxis);
    b->setData(ticks, values, true);
    b->setWidth(0.6);
    b->setBrush(colour);
    b->setPen(QPen(colour.darker(130)));
    b->setName(name);
    if (below) b->moveAbove(below);
    below = b;
  };
  stack(host, Palette::series(0), tr("host wait (launched after the previous event ended)"));
  stack(kernel, Palette::series(1), tr("kernel wait (gap under %1 µs)").arg(kineto::kHtaConsecutiveKernelDelayNs / kNsPerUs));
  stack(other, Palette::series(2), tr("other"));
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  ticker->addTicks(ticks, labels);
  m_idlePlot->xAxis->setTicker(ticker);
  PlotStyle::styleCategoryAxis(m_idlePlot->xAxis);
  // Beyond a few bars the labels would overprint side by side (32 streams did): upright, one line each.
  if (ticks.size() > kIdleBarsLabelledFlat) {
    m_idlePlot->xAxis->setTickLabelRotation(-90);
  } else {
    m_idlePlot->xAxis->setTickLabelRotation(0);
    for (QString& l : labels) l.replace(QStringLiteral(" · "), QStringLiteral("\n"));
    ticker->setTicks(ticks, labels);
  }
  m_idlePlot->xAxis->setRange(0.4, ticks.size() + 0.6);
  m_idlePlot->yAxis->setRange(0, std::max(1.0, double(top_ns) * scale * 1.15));
  m_idlePlot->yAxis->setLabel(micros ? tr("idle µs") : tr("idle ms"));
  m_idlePlot->legend->setVisible(!ticks.isEmpty());
  PlotStyle::styleLegendRow(m_idlePlot, m_idlePlot->font());
  PlotStyle::updateLegendRow(m_idlePlot, true);
  m_idlePlot->replot();
}

QString HtaView::launchNote() const { return m_launchNote->text(); }

void HtaView::showRank(int index) {
  for (QTableWidget* t : {m_idle, m_queue, m_kernels, m_launch}) t->setRowCount(0);
  m_launchNote->clear();
  if (!m_analysis || index < 0 || static_cast<size_t>(index) >= m_analysis->ranks.size()) return;
  if (m_rank->currentIndex() != index) m_rank->setCurrentIndex(index);
  if (!m_idleAllRanks) drawIdle(index);
  const kineto::HtaRankAnalyses& a = m_analysis->ranks[static_cast<size_t>(index)].hta_analyses;

  m_idle->setRowCount(static_cast<int>(a.idle_time.streams.size()));
  for (int i = 0; i < m_idle->rowCount(); ++i) {
    const kineto::HtaStreamIdleTime& s = a.idle_time.streams[static_cast<size_t>(i)];
    setHtaRow(m_idle, i,
           {QString::number(s.stream), QString::number(s.kernels), htaMicros(double(s.host_wait_ns)),
            htaPercent(s.ratio(s.host_wait_ns)), htaMicros(double(s.kernel_wait_ns)), htaPercent(s.ratio(s.kernel_wait_ns)),
            htaMicros(double(s.other_ns)), htaPercent(s.ratio(s.other_ns)), QString::number(s.without_launch)});
  }

  m_queue->setRowCount(static_cast<int>(a.queue_length.streams.size()));
  for (int i = 0; i < m_queue->rowCount(); ++i) {
    const kineto::HtaStreamQueueLength& q = a.queue_length.streams[static_cast<size_t>(i)];
    setHtaRow(m_queue, i, QStringList{QString::number(q.stream)} + htaStatsCells(q.length, 1.0, 4));
  }

  int rows = 0;
  for (const kineto::HtaKernelTypeBreakdown& b : a.kernel_breakdown.types) rows += static_cast<int>(b.rows.size());
  m_kernels->setRowCount(rows);
  int row = 0;
  for (const kineto::HtaKernelTypeBreakdown& b : a.kernel_breakdown.types)
    for (const kineto::HtaKernelRow& k : b.rows) {
      const QString name = k.names > 1 ? tr("%1 (%2 names)").arg(QString::fromStdString(k.name)).arg(k.names)
                                       : QString::fromStdString(k.name);
      setHtaRow(m_kernels, row, {QString::fromUtf8(kineto::htaKernelTypeName(b.type).data(),
                                                static_cast<qsizetype>(kineto::htaKernelTypeName(b.type).size())),
                              QString::number(k.kernels), htaMicros(k.sum_ns), htaMicros(k.mean_ns), htaMicros(k.max_ns),
                              htaMicros(k.min_ns), htaMicros(k.std_ns), name},
             7);
      m_kernels->item(row, 7)->setToolTip(QString::fromStdString(k.name));
      ++row;
    }

  const kineto::HtaLaunchStats& l = a.launch;
  const std::pair<QString, const kineto::HtaStats*> launchRows[] = {{tr("cpu duration"), &l.cpu_duration},
                                                                    {tr("gpu duration"), &l.gpu_duration},
                                                                    {tr("launch delay (HTA)"), &l.launch_delay},
                                                                    {tr("start after launch end"), &l.start_delay}};
  m_launch->setRowCount(l.pairs > 0 ? 4 : 0);
  for (int i = 0; i < m_launch->rowCount(); ++i)
    setHtaRow(m_launch, i, QStringList{launchRows[i].first} + htaStatsCells(*launchRows[i].second, 1.0 / kNsPerUs, 3), 0);
  const kineto::HtaCorrelationCheck& c = l.check;
  m_launchNote->setText(tr("%1 pairs; %2 launches over 50 µs, %3 launch delays over 100 µs, %4 GPU events shorter "
                           "than their launch. Unpaired: %5 GPU events without a correlation, %6 whose launch is not "
                           "in the trace, %7 launches without a correlation, %8 without a GPU event.")
                            .arg(l.pairs)
                            .arg(l.runtime_outliers)
                            .arg(l.launch_delay_outliers)
                            .arg(l.short_kernels)
                            .arg(c.kernels_without_correlation)
                            .arg(c.kernels_without_launch)
                            .arg(c.launches_without_correlation)
                            .arg(c.launches_without_kernel) +
                        (c.crowded_correlations > 0
                             ? tr(" %1 correlation ids shared by over %2 pairs were left out.")
                                   .arg(c.crowded_correlations)
                                   .arg(kineto::kHtaMaxPairsPerCorrelation)
                             : QString()));
}

}  // namespace shardscope
