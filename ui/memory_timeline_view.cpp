#include "memory_timeline_view.h"

#include <QLabel>
#include <QPen>
#include <QStringList>
#include <algorithm>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "common/units.h"
#include "memory_timeline_import.h"
#include "palette.h"
#include "plot_style.h"
#include "quantity_text.h"

namespace shardscope {

namespace {


// The profiler's figure colours categories in this order (tab10, as matplotlib's default cycle).
QColor mtvCategoryColor(int c) {
  static const QColor kColors[kineto::kMemoryTimelineCategories] = {
      QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
      QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f)};
  return kColors[c];
}

QString mtvMiB(int64_t bytes) { return quantity_text::sizeText(double(bytes), 2, ByteUnit::MiB); }

}  // namespace

MemoryTimelineView::MemoryTimelineView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("memoryTimelineView"));
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(6, 6, 6, 6);
  m_heading = new QLabel(this);
  m_heading->setObjectName(QStringLiteral("memoryTimelineHeading"));
  m_heading->setWordWrap(true);
  m_heading->setTextInteractionFlags(Qt::TextSelectableByMouse);
  box->addWidget(m_heading);
  m_plot = new QCustomPlot(this);
  m_plot->setObjectName(QStringLiteral("memoryTimelinePlot"));
  PlotStyle::styleAxes(m_plot);
  PlotStyle::followTheme(m_plot);
  m_plot->xAxis->setLabel(tr("time (ms since the first point)"));
  m_plot->yAxis->setLabel(tr("memory (MiB)"));
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
  m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
  PlotStyle::styleLegendRow(m_plot, font());
  box->addWidget(m_plot, 1);
  rebuild();
}

void MemoryTimelineView::setTimeline(std::shared_ptr<const MemoryTimelineFile> file) {
  m_file = std::move(file);
  rebuild();
}

void MemoryTimelineView::rebuild() {
  m_plot->clearGraphs();
  m_plot->clearItems();
  m_peakLine = nullptr;
  m_plot->legend->clearItems();
  if (!m_file || m_file->timeline.times_ns.empty()) {
    m_heading->setText(tr("No memory timeline is open: File ▸ Open a file written by the profiler's "
                          "export_memory_timeline (.json, .json.gz or .raw.json.gz)."));
    PlotStyle::updateLegendRow(m_plot, true);
    m_plot->replot();
    return;
  }
  const kineto::MemoryTimeline& t = m_file->timeline;
  const int64_t t0 = t.times_ns.front();
  const int n = static_cast<int>(t.times_ns.size());
  QVector<double> x(n), below(n, 0.0);
  for (int i = 0; i < n; ++i) x[i] = double(t.times_ns[size_t(i)] - t0) / double(kNsPerMs);
  QCPGraph* previous = nullptr;
  // Bottom to top: each graph is the sum of its category and those below, filled down to the one below.
  for (int c = 0; c < kineto::kMemoryTimelineCategories; ++c) {
    QVector<double> y(n);
    for (int i = 0; i < n; ++i) {
      below[i] += double(t.bytes[size_t(i)][size_t(c)]) / kMiB;
      y[i] = below[i];
    }
    QCPGraph* g = m_plot->addGraph();
    g->setName(QString::fromUtf8(kineto::memoryTimelineCategoryName(c).data(),
                                 int(kineto::memoryTimelineCategoryName(c).size())));
    g->setLineStyle(QCPGraph::lsStepLeft);  // a size holds until the next point
    const QColor color = mtvCategoryColor(c);
    g->setPen(QPen(color.darker(115), 1));
    QColor fill = color;
    fill.setAlpha(170);
    g->setBrush(fill);
    if (previous) g->setChannelFillGraph(previous);
    g->setData(x, y, true);
    previous = g;
  }
  const size_t p = t.peak();
  const double peak_ms = double(t.times_ns[p] - t0) / double(kNsPerMs);
  m_peakLine = new QCPItemStraightLine(m_plot);
  m_peakLine->point1->setCoords(peak_ms, 0);
  m_peakLine->point2->setCoords(peak_ms, 1);
  m_peakLine->setPen(QPen(Palette::cursor(), 1, Qt::DashLine));
  m_plot->rescaleAxes();
  m_plot->yAxis->setRangeLower(0);
  m_plot->yAxis->setRangeUpper(double(t.total(p)) / kMiB * 1.08 + 1e-9);
  PlotStyle::updateLegendRow(m_plot, true);
  QStringList parts;
  for (int c = 0; c < kineto::kMemoryTimelineCategories; ++c)
    if (t.bytes[p][size_t(c)] != 0)
      parts << QStringLiteral("%1 %2")
                   .arg(QString::fromUtf8(kineto::memoryTimelineCategoryName(c).data(),
                                          int(kineto::memoryTimelineCategoryName(c).size())),
                        mtvMiB(t.bytes[p][size_t(c)]));
  m_heading->setText(tr("%1 (%2): %3 points; peak %4 at %5 ms: %6")
                         .arg(m_file->name, t.raw ? tr("raw events") : tr("[times, sizes]"))
                         .arg(n)
                         .arg(mtvMiB(t.total(p)))
                         .arg(peak_ms, 0, 'f', 3)
                         .arg(parts.join(QStringLiteral(", "))));
  m_plot->replot();
}

QString MemoryTimelineView::headingText() const { return m_heading->text(); }

double MemoryTimelineView::drawnPeakBytes() const {
  if (m_plot->graphCount() == 0) return 0;
  double top = 0;
  const QCPGraph* g = m_plot->graph(m_plot->graphCount() - 1);
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) top = std::max(top, it->value);
  return top * kMiB;
}

QString MemoryTimelineView::figureTitle() const { return tr("Memory by category over time (PyTorch profiler)"); }

QString MemoryTimelineView::figureSubtitle() const { return m_file ? m_file->name : QString(); }

}  // namespace shardscope
