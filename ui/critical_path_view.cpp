#include "critical_path_view.h"

#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QSharedPointer>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <sstream>

#include "common/units.h"
#include "kineto/trace_analysis.h"
#include "palette.h"
#include "plot_style.h"
#include "qcustomplot.h"

namespace shardscope {

namespace {

using kineto::PathCategory;

QString cpvTitle(PathCategory c) {
  switch (c) {
    case PathCategory::Compute: return QObject::tr("compute");
    case PathCategory::Communication: return QObject::tr("communication");
    case PathCategory::LaunchCpu: return QObject::tr("launch / CPU");
    case PathCategory::Idle: return QObject::tr("idle");
    case PathCategory::WaitingForRank: return QObject::tr("waiting for another rank");
  }
  return {};
}

QColor cpvColor(PathCategory c) {
  switch (c) {
    case PathCategory::Compute: return Palette::themed(QColor(0x2b, 0x8c, 0xbe));
    case PathCategory::Communication: return Palette::themed(QColor(0xf0, 0x8c, 0x1e));
    case PathCategory::LaunchCpu: return Palette::themed(QColor(0x8e, 0x6b, 0xbf));
    case PathCategory::Idle: return Palette::themed(QColor(0xbd, 0xbd, 0xbd));
    case PathCategory::WaitingForRank: return Palette::themed(QColor(0xd7, 0x30, 0x27));
  }
  return {};
}

QString cpvMicros(int64_t ns) { return QString::number(double(ns) / kNsPerUs, 'f', 3); }

}  // namespace

CriticalPathView::CriticalPathView(QWidget* parent)
    : QWidget(parent), m_summary(new QLabel(this)), m_plot(new QCustomPlot(this)) {
  setObjectName(QStringLiteral("criticalPathView"));
  m_summary->setObjectName(QStringLiteral("criticalPathSummary"));
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_summary->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_summary->setWordWrap(true);  // the headline is long; the category lines are short and stay aligned
  m_table = new QTableWidget(0, 6, this);
  m_table->setObjectName(QStringLiteral("criticalPathTable"));
  m_table->setHorizontalHeaderLabels(
      {tr("start µs"), tr("duration µs"), tr("category"), tr("rank"), tr("kind"), tr("name")});
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setAlternatingRowColors(true);
  m_table->verticalHeader()->setVisible(false);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setToolTip(tr("The shown rank's critical path, segment by segment: what bounded its step's end, back to "
                         "the step's start"));
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_plot);
  split->addWidget(m_table);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(4, 4, 4, 4);
  box->addWidget(m_summary);
  box->addWidget(split, 1);
  PlotStyle::styleAxes(m_plot);
  m_plot->xAxis->setLabel(tr("time on the critical path of the step (µs)"));
  m_plot->yAxis->setLabel(tr("rank"));
  m_plot->yAxis->setRangeReversed(true);  // rank 0 on top, as in the timeline
  PlotStyle::styleCategoryAxis(m_plot->yAxis);
  QCPBars* below = nullptr;
  for (size_t c = 0; c < m_bars.size(); ++c) {
    auto* bars = new QCPBars(m_plot->yAxis, m_plot->xAxis);
    bars->setName(cpvTitle(PathCategory(c)));
    bars->setPen(Qt::NoPen);
    bars->setBrush(cpvColor(PathCategory(c)));
    bars->setWidth(0.6);
    if (below) bars->moveAbove(below);
    below = bars;
    m_bars[c] = bars;
  }
  m_plot->legend->setVisible(true);
  PlotStyle::styleLegendRow(m_plot, m_plot->font());  // a row above the bars, clear of them
  PlotStyle::followTheme(m_plot);
  m_empty = PlotStyle::emptyMessage(m_plot, tr("An imported PyTorch profiler job shows here: each rank's step on its "
                                               "critical path, by what held it up."));
  setAnalysis(nullptr);
}

void CriticalPathView::setAnalysis(std::shared_ptr<const kineto::JobAnalysis> analysis) {
  m_analysis = std::move(analysis);
  const kineto::CriticalPath* cp = m_analysis ? &m_analysis->critical_path : nullptr;
  const kineto::RankCriticalPath* shown = cp && cp->unavailable.empty() ? cp->shownPath() : nullptr;
  for (QCPBars* b : m_bars) b->data()->clear();
  m_table->setRowCount(0);
  m_empty->setVisible(!shown);
  m_summary->setText(summaryText());
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  if (shown) {
    double longest = 0;
    for (size_t r = 0; r < cp->ranks.size(); ++r) {
      const kineto::RankCriticalPath& p = cp->ranks[r];
      ticker->addTick(double(r), QString::number(p.rank));
      for (size_t c = 0; c < m_bars.size(); ++c) m_bars[c]->addData(double(r), double(p.by_category[c]) / kNsPerUs);
      longest = std::max(longest, double(p.totalNs()) / kNsPerUs);
    }
    m_plot->yAxis->setRange(-0.5, double(cp->ranks.size()) - 0.5);
    m_plot->xAxis->setRange(0, longest > 0 ? longest * 1.05 : 1.0);
    // The longest segments, in time order (a path can have many thousands).
    std::vector<const kineto::PathSegment*> rows;
    for (const kineto::PathSegment& s : shown->segments) rows.push_back(&s);
    if (rows.size() > size_t(kMaxRows)) {
      std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->dur_ns > b->dur_ns; });
      rows.resize(size_t(kMaxRows));
      std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
    }
    m_table->setRowCount(static_cast<int>(rows.size()));
    for (int i = 0; i < m_table->rowCount(); ++i) {
      const kineto::PathSegment& s = *rows[size_t(i)];
      QString category = cpvTitle(s.category);
      if (s.peer_rank >= 0) category += tr(" (rank %1)").arg(s.peer_rank);
      const QStringList cells = {cpvMicros(s.start_ns), cpvMicros(s.dur_ns), category, QString::number(s.rank),
                                 QString::fromStdString(s.kind), QString::fromStdString(s.name)};
      for (int c = 0; c < cells.size(); ++c) {
        auto* item = new QTableWidgetItem(cells[c]);
        item->setTextAlignment((c < 2 || c == 3 ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
        if (c == 2) item->setBackground(cpvColor(s.category).lighter(150));
        m_table->setItem(i, c, item);
      }
    }
  }
  m_plot->yAxis->setTicker(ticker);
  PlotStyle::updateLegendRow(m_plot, true);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString CriticalPathView::summaryText() const {
  if (!m_analysis) return {};
  std::ostringstream text;
  kineto::printCriticalPathText(m_analysis->critical_path, text);
  QString s = QString::fromStdString(text.str()).trimmed();
  // The text's segment list is the table below.
  const int longest = s.indexOf(QStringLiteral("\n  longest of its"));
  return longest >= 0 ? s.left(longest) : s;
}

QString CriticalPathView::figureTitle() const {
  const kineto::CriticalPath* cp = m_analysis ? &m_analysis->critical_path : nullptr;
  if (!cp || cp->step < 0) return tr("Critical path: each rank's step by what held it up");
  return tr("Critical path of ProfilerStep#%1: each rank's step by what held it up").arg(cp->step);
}

}  // namespace shardscope
