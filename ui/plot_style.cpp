#include "plot_style.h"

#include <qcustomplot.h>

#include "palette.h"

namespace shardscope {

void PlotStyle::styleAxes(QCustomPlot* plot) {
  QFont tick = plot->font();
  tick.setPointSizeF(8);
  const QPen axis_pen(QColor(0xB0, 0xB5, 0xBC));
  for (QCPAxis* a : {plot->xAxis, plot->yAxis}) {
    a->setTickLabelFont(tick);
    a->setLabelFont(tick);
    a->setBasePen(axis_pen);
    a->setTickPen(axis_pen);
    a->setSubTickPen(axis_pen);
    a->grid()->setPen(QPen(Palette::grid(), 1, Qt::DotLine));
  }
  plot->setBackground(Palette::background());
}

void PlotStyle::updateLegendRow(QCustomPlot* plot, bool top) {
  QCPLegend* legend = plot->legend;
  QCPLayoutGrid* grid = plot->plotLayout();
  const bool want = legend->itemCount() > 0;
  const bool in_grid = legend->layout() == grid;
  if (want == in_grid) return;
  if (want) {
    plot->axisRect()->insetLayout()->take(legend);
    if (top) {
      grid->insertRow(0);
      grid->addElement(0, 0, legend);
      grid->setRowStretchFactor(0, 0.001);
    } else {
      const int row = grid->rowCount();
      grid->addElement(row, 0, legend);
      grid->setRowStretchFactor(row, 0.001);
    }
  } else {
    grid->take(legend);
    grid->simplify();
    plot->axisRect()->insetLayout()->addElement(legend, Qt::AlignTop | Qt::AlignRight);
  }
  legend->setVisible(want);
}

}  // namespace shardscope
