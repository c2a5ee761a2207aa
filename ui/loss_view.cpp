#include "loss_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

#include "theme.h"
#include "inspect/event_store.h"
#include "palette.h"
#include "plot_style.h"

namespace shardscope {

namespace {
const QCPScatterStyle::ScatterShape kShapes[] = {QCPScatterStyle::ssCircle, QCPScatterStyle::ssCross,
                                                 QCPScatterStyle::ssSquare, QCPScatterStyle::ssPlus,
                                                 QCPScatterStyle::ssDiamond, QCPScatterStyle::ssTriangle};
}

LossView::LossView(const EventStore* store, QWidget* parent)
    : QWidget(parent), m_store(store), m_plot(new QCustomPlot(this)) {
  m_clear = new QPushButton(tr("Clear runs"), this);
  m_clear->setObjectName(QStringLiteral("clearLossRuns"));
  m_clear->setToolTip(tr("Remove the earlier runs: their curves, their rows in the Runs table and the memory they "
                          "hold (the run on screen stays)"));
  m_clear->setEnabled(false);
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(6, 2, 6, 0);
  auto* hint = new QLabel(tr("Each finished run adds a curve; same data and random seed, same curve."), this);
  setTone(hint, Tone::Muted);
  hint->setWordWrap(true);  // a narrow dock wraps it instead of widening the window
  bar->addWidget(hint, 1);
  bar->addWidget(m_clear);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->setSpacing(0);
  box->addLayout(bar);
  box->addWidget(m_plot, 1);
  m_plot->setObjectName(QStringLiteral("lossPlot"));
  m_plot->setMinimumHeight(160);  // a curve of a few steps stays readable at 1280×720
  PlotStyle::styleAxes(m_plot);
  m_plot->xAxis->setLabel(tr("step"));
  m_plot->yAxis->setLabel(tr("loss"));
  QSharedPointer<QCPAxisTickerFixed> steps(new QCPAxisTickerFixed);
  steps->setTickStep(1.0);
  steps->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // whole steps, thinned when many
  m_plot->xAxis->setTicker(steps);
  m_plot->xAxis->setSubTicks(false);

  m_graph = m_plot->addGraph();
  m_graph->setPen(QPen(QColor(0x33, 0x33, 0x33), 1.6));
  m_graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QColor(0x33, 0x33, 0x33), Qt::white, 6));
  m_graph->setAntialiased(true);
  m_graph->setName(tr("live run"));

  // Legend in its own row above the curves (PlotStyle::updateLegendRow), so it never hides a point.
  m_plot->legend->setVisible(false);
  m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_plot->legend->setWrap(6);
  m_plot->legend->setBorderPen(Qt::NoPen);
  m_plot->legend->setBrush(Qt::NoBrush);
  m_plot->legend->setMargins(QMargins(4, 2, 4, 0));
  QFont legend_font = font();
  legend_font.setPointSizeF(7.5);
  m_plot->legend->setFont(legend_font);
  m_plot->legend->setRowSpacing(0);
  m_plot->legend->setIconSize(22, 9);

  m_plot->yAxis->setTickLabelPadding(3);
  m_plot->setToolTip(tr("Mean over ranks of each rank's local loss, per completed step"));
  m_empty = PlotStyle::emptyMessage(m_plot, QString());
  connect(m_clear, &QPushButton::clicked, this, [this] {
    clearRuns();
    emit runsCleared();
  });
  refresh();
}

int LossView::pointCount() const { return m_graph->dataCount(); }

QString LossView::runLabel(int i) const {
  return i >= 0 && i < runCount() ? m_runs[static_cast<size_t>(i)].label : QString();
}

QString LossView::figureTitle() const {
  return m_runs.size() > 1 ? tr("Loss per step, %1 runs overlaid").arg(m_runs.size()) : tr("Loss per step");
}

void LossView::setFromTrace(bool from_trace) {
  m_fromTrace = from_trace;
  m_shown = ~size_t{0};
  refresh();
}

void LossView::setNoLossReason(const QString& reason) {
  m_noLoss = reason;
  m_shown = ~size_t{0};
  refresh();
}

void LossView::appendRun(const QString& label, const std::vector<double>& losses) {
  if (losses.empty()) return;
  const int n = runCount();
  const QColor c = Palette::series(n);
  auto* g = m_plot->addGraph();
  // Later curves thinner, dashed and marked differently, drawn on top: a curve
  // that coincides with an earlier one stays visible.
  QPen pen(c, std::max(1.2, 3.2 - 0.5 * n));
  if (n % 2 == 1) pen.setStyle(Qt::DashLine);
  g->setPen(pen);
  g->setScatterStyle(QCPScatterStyle(kShapes[static_cast<size_t>(n) % std::size(kShapes)], c, Qt::white, 7 + (n % 3)));
  g->setAntialiased(true);
  g->setName(label);
  g->addToLegend();
  QVector<double> keys, values;
  for (size_t s = 0; s < losses.size(); ++s) {
    keys << static_cast<double>(s);
    values << losses[s];
  }
  g->setData(keys, values, true);
  m_runs.push_back({label, g});
  updateClearButton();
  m_shown = ~size_t{0};
  refresh();
}

void LossView::keepRun(const QString& label) {
  if (m_store->losses().empty()) return;
  appendRun(label, m_store->losses());
  m_kept = true;
  m_shown = ~size_t{0};
  refresh();
}

void LossView::markKept() {
  refresh();  // adopt the store's generation first
  m_kept = true;
  m_shown = ~size_t{0};
  refresh();
}

void LossView::clearRuns() {
  for (const Curve& c : m_runs) m_plot->removeGraph(c.graph);
  m_runs.clear();
  updateClearButton();
  m_shown = ~size_t{0};
  refresh();
}

void LossView::setTableRuns(int rows) {
  m_tableRuns = rows;
  updateClearButton();
}

void LossView::updateClearButton() { m_clear->setEnabled(!m_runs.empty() || m_tableRuns > 0); }

void LossView::startLessonRun(const QString& preset) {
  if (preset.isEmpty() || preset == m_lesson) return;
  m_lesson = preset;
  if (!m_runs.empty()) clearRuns();
}

void LossView::refresh() {
  const std::vector<double>& losses = m_store->losses();
  if (m_store->generation() != m_generation) {  // a new run, or another one shown
    m_generation = m_store->generation();
    m_kept = false;
    m_shown = ~size_t{0};
  }
  // Called at the bridge's poll rate: replot only when a step completed.
  if (losses.size() == m_shown) return;
  m_shown = losses.size();
  QVector<double> keys, values;
  if (!m_kept && m_noLoss.isEmpty()) {  // a lossless run reports zeros: draw nothing
    for (size_t s = 0; s < losses.size(); ++s) {
      keys << static_cast<double>(s);
      values << losses[s];
    }
  }
  m_graph->setData(keys, values, true);
  rescale();
}

void LossView::rescale() {
  double lo = INFINITY, hi = -INFINITY;
  int steps = 0;
  for (int i = 0; i < m_plot->graphCount(); ++i) {
    QCPGraph* g = m_plot->graph(i);
    steps = std::max(steps, g->dataCount());
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) {
      lo = std::min(lo, it->value);
      hi = std::max(hi, it->value);
    }
  }
  const bool any = steps > 0;
  if (!any) {
    m_empty->setText(!m_noLoss.isEmpty() ? m_noLoss
                     : m_store->empty()  ? tr("Loss per step appears while a run trains.")
                     : m_fromTrace       ? tr("No losses recorded in this trace.")
                                         : tr("No training step has completed yet."));
    m_plot->xAxis->setRange(-0.5, 2.5);
    m_plot->yAxis->setRange(0, 1);
  } else {
    const double pad = std::max((hi - lo) * 0.15, std::abs(hi) * 0.02 + 1e-6);
    m_plot->xAxis->setRange(-0.5, std::max(2.5, steps - 0.5));
    m_plot->yAxis->setRange(lo - pad, hi + pad);
  }
  if (m_graph->dataCount() > 0)
    m_graph->addToLegend();
  else
    m_graph->removeFromLegend();
  PlotStyle::updateLegendRow(m_plot, true);
  // An empty plot with made-up axes reads as data: show only the message.
  m_plot->xAxis->setVisible(any);
  m_plot->yAxis->setVisible(any);
  m_empty->setVisible(!any);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope
