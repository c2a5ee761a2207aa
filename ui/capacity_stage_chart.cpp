#include "capacity_stage_chart.h"

#include <QCoreApplication>
#include <qcustomplot.h>

#include "analysis/capacity.h"
#include "analysis/parallel_capacity.h"
#include "plot_style.h"

namespace shardscope {

namespace {

// Okabe–Ito: model states blue, activations orange, buffers grey.
const QColor kStageModel(0x00, 0x72, 0xB2);
const QColor kStageActivations(0xE6, 0x9F, 0x00);
const QColor kStageBuffers(0x99, 0x99, 0x99);

QString stageChartTr(const char* text) { return QCoreApplication::translate("CapacityPage", text); }

}  // namespace

void drawStagePlan(QCustomPlot* plot, const ParallelPlan& plan) {
  plot->clearPlottables();
  plot->clearItems();
  const double capacity = plan.capacity_bytes / kBytesPerGb;
  QVector<double> ticks, model, activations, buffers;
  QVector<QString> labels;
  double top = capacity;
  for (const StagePlan& s : plan.stages) {
    const double m = double(s.model_state_bytes) / kBytesPerGb, a = double(s.activation_bytes) / kBytesPerGb;
    const double total = double(s.peakBytes()) / kBytesPerGb;
    ticks << s.stage + 1;
    labels << stageChartTr("stage %1").arg(s.stage);
    model << m;
    activations << a;
    buffers << std::max(0.0, total - m - a);  // what the peak adds beside the activation peak
    top = std::max(top, total);
  }
  const auto layer = [&](const QVector<double>& values, const QColor& colour, const QString& name, QCPBars* below) {
    auto* b = new QCPBars(plot->xAxis, plot->yAxis);
    b->setData(ticks, values);
    b->setWidth(0.6);
    b->setBrush(colour);
    b->setPen(QPen(colour.darker(130)));
    b->setName(name);
    if (below) b->moveAbove(below);
    return b;
  };
  QCPBars* bottom = layer(model, kStageModel, stageChartTr("model states"), nullptr);
  QCPBars* middle = layer(activations, kStageActivations, stageChartTr("activations in flight"), bottom);
  layer(buffers, kStageBuffers, stageChartTr("buffers at the peak"), middle);
  const StagePlan& loaded = plan.mostLoaded();
  auto* value = new QCPItemText(plot);
  const double peak = double(loaded.peakBytes()) / kBytesPerGb;
  value->position->setCoords(loaded.stage + 1, peak);
  value->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
  value->setText(stageChartTr("%1 GB\nmost loaded").arg(peak, 0, 'f', 1));
  value->setFont(QFont(plot->font().family(), 8));
  value->setClipToAxisRect(false);
  auto* line = new QCPGraph(plot->xAxis, plot->yAxis);
  line->setData(QVector<double>{0.4, ticks.size() + 0.6}, QVector<double>{capacity, capacity});
  line->setPen(QPen(QColor(0x33, 0x33, 0x33), 1.5, Qt::DashLine));
  line->setName(stageChartTr("capacity %1 GB").arg(capacity));
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  ticker->addTicks(ticks, labels);
  plot->xAxis->setTicker(ticker);
  PlotStyle::styleCategoryAxis(plot->xAxis);
  plot->xAxis->setRange(0.4, ticks.size() + 0.6);
  plot->yAxis->setRange(0, top * 1.3);
  plot->yAxis->setLabel(stageChartTr("GB per GPU"));
  plot->legend->setVisible(true);
  PlotStyle::styleLegendRow(plot, plot->font());
  PlotStyle::updateLegendRow(plot, true);
  plot->replot();
}

}  // namespace shardscope
