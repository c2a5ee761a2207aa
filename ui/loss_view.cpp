#include "loss_view.h"

#include <QLabel>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>

#include "event_store.h"
#include "palette.h"
#include "plot_style.h"

namespace shardscope {

LossView::LossView(const EventStore* store, QWidget* parent)
    : QWidget(parent), m_store(store), m_plot(new QCustomPlot(this)) {
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->addWidget(m_plot);
  m_plot->setObjectName(QStringLiteral("lossPlot"));
  m_plot->setMinimumHeight(120);
  PlotStyle::styleAxes(m_plot);
  m_plot->xAxis->setLabel(tr("step"));
  m_plot->yAxis->setLabel(tr("loss"));
  QSharedPointer<QCPAxisTickerFixed> steps(new QCPAxisTickerFixed);
  steps->setTickStep(1.0);
  steps->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // whole steps, thinned when many
  m_plot->xAxis->setTicker(steps);
  m_plot->xAxis->setSubTicks(false);

  m_graph = m_plot->addGraph();
  m_graph->setPen(QPen(QColor(0x00, 0x72, 0xB2), 1.8));
  m_graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QColor(0x00, 0x72, 0xB2), Qt::white, 6));
  m_graph->setAntialiased(true);

  m_plot->yAxis->setTickLabelPadding(3);
  m_plot->setToolTip(tr("Mean over ranks of each rank's local loss, per completed step"));
  m_empty = new QLabel(m_plot);
  m_empty->setAlignment(Qt::AlignCenter);
  m_empty->setStyleSheet(QStringLiteral("color: #777;"));
  m_empty->setAttribute(Qt::WA_TransparentForMouseEvents);
  auto* overlay = new QVBoxLayout(m_plot);  // keeps the message centred as the plot resizes
  overlay->addWidget(m_empty);
  refresh();
}

int LossView::pointCount() const { return m_graph->dataCount(); }

void LossView::refresh() {
  const std::vector<double>& losses = m_store->losses();
  // Called at the bridge's poll rate: replot only when a step completed.
  if (losses.size() == m_shown && m_store->generation() == m_generation && !losses.empty()) return;
  m_shown = losses.size();
  m_generation = m_store->generation();
  QVector<double> keys, values;
  for (size_t s = 0; s < losses.size(); ++s) {
    keys << static_cast<double>(s);
    values << losses[s];
  }
  m_graph->setData(keys, values, true);
  if (losses.empty()) {
    m_empty->setText(m_store->empty() ? tr("Loss per step appears while a run trains.")
                     : m_fromTrace    ? tr("No losses recorded in this trace.")
                                      : tr("No training step has completed yet."));
    m_plot->xAxis->setRange(-0.5, 2.5);
    m_plot->yAxis->setRange(0, 1);
  } else {
    const auto [lo, hi] = std::minmax_element(losses.begin(), losses.end());
    const double pad = std::max((*hi - *lo) * 0.15, std::abs(*hi) * 0.02 + 1e-6);
    m_plot->xAxis->setRange(-0.5, std::max(2.5, static_cast<double>(losses.size()) - 0.5));
    m_plot->yAxis->setRange(*lo - pad, *hi + pad);
  }
  // An empty plot with made-up axes reads as data: show only the message.
  m_plot->xAxis->setVisible(!losses.empty());
  m_plot->yAxis->setVisible(!losses.empty());
  m_empty->setVisible(losses.empty());
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope
