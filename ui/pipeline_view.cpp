#include "pipeline_view.h"

#include <QLabel>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>

#include "common/units.h"
#include "inspect/event_store.h"
#include "palette.h"
#include "pipeline_plottable.h"
#include "plot_style.h"
#include "quantity_text.h"

namespace shardscope {

namespace {

constexpr int kPipelineThrottleMs = 250;

// A no-break space: a wrapped caption never leaves "%" alone on a line.
QString pipelinePercent(double share) { return QString::number(100.0 * share, 'f', 1) + QChar(0x00A0) + QLatin1Char('%'); }

QString pipelineScheduleTitle(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::GPipe: return QStringLiteral("GPipe");
    case PipelineSchedule::OneFOneB: return QStringLiteral("1F1B");
    case PipelineSchedule::Interleaved: return QStringLiteral("interleaved 1F1B");
  }
  return {};
}

}  // namespace

PipelineView::PipelineView(const EventStore* store, QWidget* parent)
    : QWidget(parent), m_store(store), m_throttle(new QTimer(this)), m_plot(new QCustomPlot(this)) {
  setObjectName(QStringLiteral("pipelineView"));
  m_throttle->setSingleShot(true);
  m_throttle->setInterval(kPipelineThrottleMs);
  connect(m_throttle, &QTimer::timeout, this, &PipelineView::rebuild);

  m_plot->setObjectName(QStringLiteral("pipelinePlot"));
  m_plot->setMinimumHeight(180);
  PlotStyle::styleAxes(m_plot);
  PlotStyle::styleAxis(m_plot->yAxis2, m_plot->font());
  for (QCPAxis* a : {m_plot->yAxis, m_plot->yAxis2}) {
    a->setRangeReversed(true);  // stage 0 on top
    a->setSubTicks(false);
    a->setTickLength(0, 0);
    a->grid()->setVisible(false);
    a->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  }
  m_plot->yAxis2->setVisible(true);
  m_plot->yAxis2->setBasePen(Qt::NoPen);
  m_plot->yAxis2->setLabel(tr("peak activations · in flight (schedule)"));
  m_plot->xAxis->setLabel(tr("ms into the step's pipeline"));
  m_schedule = new PipelinePlottable(m_plot->xAxis, m_plot->yAxis, &m_boxes);
  m_schedule->removeFromLegend();

  m_caption = new QCPTextElement(m_plot, QString());
  QFont caption_font = font();
  caption_font.setPointSizeF(8.5);
  m_caption->setFont(caption_font);
  m_caption->setTextColor(QColor(0x33, 0x33, 0x33));
  m_caption->setTextFlags(Qt::AlignLeft | Qt::AlignVCenter);
  m_caption->setMargins(QMargins(8, 4, 8, 2));
  m_plot->plotLayout()->insertRow(0);
  m_plot->plotLayout()->addElement(0, 0, m_caption);
  m_plot->plotLayout()->setRowStretchFactor(0, 0.001);

  // Legend entries: empty plottables whose only job is an icon and a name.
  const auto entry = [this](const QString& name, const QColor& fill, const QPen& pen) {
    auto* b = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    b->setBrush(fill);
    b->setPen(pen);
    b->setName(name);
    return b;
  };
  const QColor fwd = Palette::kind(EventKind::Forward), bwd = Palette::kind(EventKind::Backward);
  entry(tr("forward (microbatch)"), fwd, QPen(fwd.darker(140)));
  entry(tr("backward"), bwd, QPen(bwd.darker(140)));
  m_recomputeEntry = entry(tr("recompute (in backward, striped)"), fwd.lighter(115), QPen(bwd, 1.5));
  entry(tr("idle (the bubble)"), QColor(0xE4, 0xE4, 0xE4), QPen(QColor(0xCC, 0xCC, 0xCC)));
  auto* sends = new QCPGraph(m_plot->xAxis, m_plot->yAxis);
  sends->setPen(QPen(Palette::kind(EventKind::Send), 1.5));
  sends->setName(tr("activations sent → received"));
  auto* grads = new QCPGraph(m_plot->xAxis, m_plot->yAxis);
  grads->setPen(QPen(Palette::kind(EventKind::Recv).darker(120), 1.5, Qt::DashLine));
  grads->setName(tr("gradients sent → received"));
  m_plot->legend->setVisible(false);
  m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_plot->legend->setBorderPen(Qt::NoPen);
  QFont legend_font = font();
  legend_font.setPointSizeF(7.5);
  m_plot->legend->setFont(legend_font);
  m_plot->legend->setIconSize(14, 9);
  m_plot->legend->setRowSpacing(0);
  PlotStyle::followTheme(m_plot);

  m_empty = PlotStyle::emptyMessage(m_plot, tr("A run with pipeline stages (--pp 2 or more) shows its schedule "
                                               "here: each stage's forward and backward passes per microbatch."));
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->addWidget(m_plot, 1);
  rebuild();
}

void PipelineView::refresh(bool now) {
  if (now) {
    m_throttle->stop();
    rebuild();
  } else if (!m_throttle->isActive()) {
    m_throttle->start();
  }
}

void PipelineView::setCaptionWrap(int chars) {
  m_wrap = chars;
  rebuild();
}

void PipelineView::rebuild() {
  m_boxes.build(*m_store);
  const bool any = !m_boxes.boxes().empty();
  m_empty->setVisible(!any);
  auto left = qSharedPointerCast<QCPAxisTickerText>(m_plot->yAxis->ticker());
  auto right = qSharedPointerCast<QCPAxisTickerText>(m_plot->yAxis2->ticker());
  left->clear();
  right->clear();
  // Two lines a row, so a narrow dock keeps its width for the schedule.
  const QString middot = QStringLiteral(" · "), newline = QStringLiteral("\n");
  for (int s = 0; s < m_boxes.stages(); ++s) {
    left->addTick(s, stageLabel(s).replace(middot, newline));
    right->addTick(s, stageFigures(s).replace(middot, newline));
  }
  const QCPRange rows(-0.5, std::max(1, m_boxes.stages()) - 0.5);
  m_plot->yAxis->setRange(rows);
  m_plot->yAxis2->setRange(rows);
  const double span = static_cast<double>(m_boxes.windowEnd() - m_boxes.windowBegin()) / kNsPerMs;
  m_plot->xAxis->setRange(-0.01 * span, any ? 1.01 * span : 1.0);
  m_plot->xAxis->setLabel(any ? tr("ms into step %1's pipeline (first forward to last backward)").arg(m_boxes.step())
                              : tr("ms"));
  m_plot->yAxis2->setVisible(any);
  m_caption->setVisible(any);
  int chars = m_wrap;
  if (chars <= 0) {
    const double char_px = std::max(4.0, QFontMetricsF(m_caption->font()).averageCharWidth());
    chars = std::max(40, static_cast<int>((m_plot->width() - 24) / char_px));
  }
  m_caption->setText(PlotStyle::wrappedText(captionText(), chars));
  bool recomputes = false;
  for (const PipelineBox& b : m_boxes.boxes()) recomputes = recomputes || !b.recompute.empty();
  for (int i = 0; i < m_plot->plottableCount(); ++i) {
    QCPAbstractPlottable* p = m_plot->plottable(i);
    if (p == m_schedule) continue;
    const bool shown = any && (p != m_recomputeEntry || recomputes);  // a legend entry only for what is drawn
    p->setVisible(shown);
    if (shown) p->addToLegend();
    else p->removeFromLegend();
  }
  m_plot->legend->setVisible(any);
  PlotStyle::updateLegendRow(m_plot, false);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString PipelineView::stageLabel(int stage) const {
  if (stage < 0 || stage >= m_boxes.stages()) return {};
  const PipelineRow& row = m_boxes.rows()[static_cast<size_t>(stage)];
  const QString ranks = row.first_rank == row.last_rank
                            ? tr("rank %1").arg(row.first_rank)
                            : tr("ranks %1–%2").arg(row.first_rank).arg(row.last_rank);
  return tr("stage %1 · %2").arg(stage).arg(ranks);
}

QString PipelineView::stageFigures(int stage) const {
  if (stage < 0 || stage >= m_boxes.stages()) return {};
  const PipelineRow& row = m_boxes.rows()[static_cast<size_t>(stage)];
  return tr("%1 · %2 (%3)")
      .arg(quantity_text::sizeText(double(row.activation_peak_bytes)))
      .arg(row.in_flight)
      .arg(row.schedule_in_flight);
}

QString PipelineView::captionText() const {
  if (m_boxes.boxes().empty()) return {};
  const PipelineTiming& t = m_boxes.timing();
  const int S = m_boxes.stages(), M = m_boxes.microbatches(), V = m_boxes.virtualStages();
  const QString formula = V > 1 ? tr("(S − 1)/(V·M + S − 1) = %1/(%2·%3 + %1)").arg(S - 1).arg(V).arg(M)
                                : tr("(S − 1)/(M + S − 1) = %1/(%2 + %1)").arg(S - 1).arg(M);
  QString text = tr("%1 · %2 stages · %3 microbatches%4 · bubble measured %5 (mean idle share of the stages' "
                    "compute) · formula %6 = %7")
                     .arg(pipelineScheduleTitle(m_boxes.schedule()))
                     .arg(S)
                     .arg(M)
                     .arg(V > 1 ? tr(" · %1 chunks per stage").arg(V) : QString())
                     .arg(pipelinePercent(t.bubble), formula, pipelinePercent(t.formula_bubble));
  // Tensor parallelism's collectives inside a pass idle the compute lane but are no pipeline bubble.
  if (t.bubble - m_boxes.idleShare() >= 0.005)
    text += tr(" · between passes (shaded) %1; the rest is communication inside the passes")
                .arg(pipelinePercent(m_boxes.idleShare()));
  if (m_boxes.arrows().size() < static_cast<size_t>(m_boxes.sends()))
    text += tr(" · %1 of %2 sends never received").arg(m_boxes.sends() - static_cast<int>(m_boxes.arrows().size()))
                .arg(m_boxes.sends());
  return text;
}

QString PipelineView::figureTitle() const {
  return tr("Pipeline schedule: each stage's forward and backward passes per microbatch, the bubble shaded");
}

}  // namespace shardscope
