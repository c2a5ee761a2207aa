#include "straggler_view.h"

#include <QLabel>
#include <QSharedPointer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

#include "plot_style.h"

namespace shardscope {

StragglerView::StragglerView(QWidget* parent)
    : QWidget(parent), m_summary(new QLabel(this)), m_plot(new QCustomPlot(this)) {
  setObjectName(QStringLiteral("stragglerView"));
  m_summary->setObjectName(QStringLiteral("stragglerSummary"));
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(4, 4, 4, 4);
  box->addWidget(m_summary);
  box->addWidget(m_plot, 1);
  PlotStyle::styleAxes(m_plot);
  m_plot->xAxis->setLabel(tr("collective (by first arrival)"));
  m_plot->yAxis->setLabel(tr("rank"));
  m_plot->yAxis->setRangeReversed(true);  // rank 0 on top, as in the timeline
  m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
  m_map->setInterpolate(false);
  m_map->setTightBoundary(false);
  m_scale = new QCPColorScale(m_plot);
  m_plot->plotLayout()->addElement(0, 1, m_scale);
  m_scale->setType(QCPAxis::atRight);
  m_scale->axis()->setLabel(tr("wait (ms)"));
  m_map->setColorScale(m_scale);
  // No wait white, the longest dark red; a rank not in a collective blank.
  QCPColorGradient gradient;
  gradient.clearColorStops();
  gradient.setColorStopAt(0.0, QColor(0xff, 0xff, 0xff));
  gradient.setColorStopAt(0.5, QColor(0xf4, 0xa5, 0x82));
  gradient.setColorStopAt(1.0, QColor(0xb2, 0x18, 0x2b));
  gradient.setNanHandling(QCPColorGradient::nhTransparent);
  m_map->setGradient(gradient);
  auto* margins = new QCPMarginGroup(m_plot);
  m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  m_last = m_plot->addGraph();
  m_last->setName(tr("last to arrive"));
  m_last->setLineStyle(QCPGraph::lsNone);
  m_last->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangle, QPen(Qt::black, 1.5), Qt::NoBrush, 8));
  m_plot->legend->setVisible(true);
  m_plot->legend->removeItem(m_plot->legend->itemWithPlottable(m_map));
  PlotStyle::followTheme(m_plot);
  m_empty = PlotStyle::emptyMessage(m_plot, tr("An imported PyTorch profiler job of two or more ranks shows here: "
                                               "which rank each collective waited for."));
  setTable(nullptr);
}

void StragglerView::setTable(const StragglerTable* table) {
  m_table = table ? *table : StragglerTable{};
  const int nx = static_cast<int>(m_table.labels.size());
  const int ny = static_cast<int>(m_table.ranks.size());
  m_map->data()->clear();
  m_last->data()->clear();
  m_empty->setVisible(nx == 0);
  m_summary->setText(summaryText());
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int y = 0; y < ny; ++y) ticker->addTick(y, QString::number(m_table.ranks[static_cast<size_t>(y)]));
  m_plot->yAxis->setTicker(ticker);
  if (nx > 0 && ny > 0) {
    m_map->data()->setSize(nx, ny);
    m_map->data()->setRange(QCPRange(0, nx - 1), QCPRange(0, ny - 1));
    double longest = 0;
    for (int x = 0; x < nx; ++x)
      for (int y = 0; y < ny; ++y) {
        const double us = m_table.wait_us[static_cast<size_t>(x)][static_cast<size_t>(y)];
        m_map->data()->setCell(x, y, us / 1000.0);  // NaN (no part): drawn blank
        if (!std::isnan(us)) longest = std::max(longest, us / 1000.0);
      }
    m_map->setDataRange(QCPRange(0, longest > 0 ? longest : 1.0));
    for (int x = 0; x < nx; ++x) {
      const auto row = std::find(m_table.ranks.begin(), m_table.ranks.end(), m_table.last_rank[static_cast<size_t>(x)]);
      if (row != m_table.ranks.end()) m_last->addData(x, static_cast<double>(row - m_table.ranks.begin()));
    }
    m_plot->xAxis->setRange(-0.5, nx - 0.5);
    m_plot->yAxis->setRange(-0.5, ny - 0.5);
  }
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString StragglerView::summaryText() const {
  QStringList lines;
  for (const std::string& line : m_table.summary) lines << QString::fromStdString(line);
  return lines.join(QLatin1Char('\n'));
}

QString StragglerView::figureTitle() const {
  return tr("Stragglers: each rank's wait per collective (the last to arrive marked)");
}

}  // namespace shardscope
