#include "trace_diff_page.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <qcustomplot.h>
#include <exception>
#include <new>

#include "common/errors.h"
#include "figure_export.h"
#include "kineto/trace_diff.h"
#include "kineto/trace_set.h"
#include "off_thread.h"
#include "plot_style.h"
#include "trace_diff_model.h"

namespace shardscope {

TraceDiffPage::TraceDiffPage(QWidget* parent)
    : m_widget(new QWidget(parent)),
      m_header(new QLabel(m_widget)),
      m_table(new QTableView(m_widget)),
      m_plot(new QCustomPlot(m_widget)),
      m_model(new TraceDiffModel(m_widget)) {
  m_widget->setObjectName(QStringLiteral("traceDiffPage"));
  m_header->setWordWrap(true);
  m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_table->setModel(m_model);
  m_table->setObjectName(QStringLiteral("traceDiffTable"));
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setSectionResizeMode(TraceDiffModel::Name, QHeaderView::Stretch);
  PlotStyle::styleAxes(m_plot);
  m_plot->setMinimumHeight(160);
  auto* split = new QSplitter(Qt::Vertical, m_widget);
  split->addWidget(m_table);
  split->addWidget(m_plot);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* box = new QVBoxLayout(m_widget);
  box->setContentsMargins(4, 4, 4, 4);
  box->addWidget(m_header);
  box->addWidget(split, 1);
  setDiff(nullptr);
}

TraceDiffPage::~TraceDiffPage() = default;

QString TraceDiffPage::title() const { return tr("Trace diff"); }

QString TraceDiffPage::unavailable() const {
  if (!m_diff)
    return tr("no jobs compared yet: File > Compare PyTorch jobs… opens a CONTROL and a TEST job (a trace or a folder "
              "of per-rank traces each)");
  return {};
}

bool TraceDiffPage::openJobs(const QString& control, const QString& test, QString* error) {
  // Read off the GUI thread (two jobs of many ranks take a while), with a progress dialog and Cancel.
  std::shared_ptr<const kineto::TraceDiff> diff;
  QString why;
  QWidget* window = m_widget->window();
  const bool finished = runOffUiThread(
      window && window->isVisible() ? window : nullptr, tr("Compare PyTorch jobs"),
      tr("Reading %1 and %2…").arg(QFileInfo(control).fileName(), QFileInfo(test).fileName()),
      QStringLiteral("traceDiffProgress"), [&](const std::atomic<bool>& cancel, const OffThreadProgress& progress) {
        m_loadThread = std::this_thread::get_id();
        kineto::TraceSetOptions options;
        options.progress = [&progress](const std::string& line) { progress(QString::fromStdString(line)); };
        options.cancelled = [&cancel] { return cancel.load(); };
        try {
          diff = std::make_shared<const kineto::TraceDiff>(
              kineto::loadTraceDiff(control.toStdString(), test.toStdString(), options, nullptr, "Compare PyTorch jobs:"));
        } catch (const kineto::CancelledLoad&) {
          // finished is false: said below
        } catch (const std::bad_alloc&) {
          why = tr("out of memory reading the two jobs: compare fewer ranks");
        } catch (const std::exception& e) {
          why = QString::fromUtf8(e.what());
        }
      });
  if (!finished || (!diff && why.isEmpty())) {
    if (error) *error = tr("comparing %1 and %2 was cancelled").arg(control, test);
    return false;
  }
  if (!diff) {
    if (error) *error = why;
    return false;
  }
  setDiff(std::move(diff));
  return true;
}

QString TraceDiffPage::header() const {
  if (!m_diff) return unavailable();
  const auto side = [](const QString& label, const kineto::TraceDiffSide& s) {
    QString text = label + QStringLiteral(" ") + QString::fromStdString(s.inputs.empty() ? std::string() : s.inputs.front()) +
                   tr(": %n rank(s), ", nullptr, int(s.ranks.size())) + tr("%1 rank-steps").arg(s.rank_steps);
    if (s.ranks_without_steps > 0) text += tr(" (%1 without ProfilerStep spans, counted whole)").arg(s.ranks_without_steps);
    return text;
  };
  return tr("Per profiled step of one rank: each side's totals in its ProfilerStep spans ÷ its rank-steps; the "
            "biggest regression (TEST slower) first.") +
         QStringLiteral("\n") + side(tr("CONTROL"), m_diff->control) + QStringLiteral("\n") + side(tr("TEST"), m_diff->test);
}

void TraceDiffPage::setDiff(std::shared_ptr<const kineto::TraceDiff> diff) {
  m_diff = std::move(diff);
  m_model->setDiff(m_diff);
  m_header->setText(header());
  m_table->resizeColumnsToContents();
  m_table->horizontalHeader()->setSectionResizeMode(TraceDiffModel::Name, QHeaderView::Stretch);
  drawBars();
}

void TraceDiffPage::drawBars() {
  m_plot->clearPlottables();
  m_plot->clearItems();
  if (!m_diff || m_diff->kernels.empty()) {
    m_plot->replot();
    return;
  }
  // Core's order: the first rows are the biggest regressions, the last the biggest improvements.
  const auto& rows = m_diff->kernels;
  std::vector<size_t> shown;
  for (size_t i = 0; i < rows.size() && i < size_t(kBarsEachEnd); ++i) shown.push_back(i);
  for (size_t i = rows.size() > size_t(2 * kBarsEachEnd) ? rows.size() - kBarsEachEnd : shown.size(); i < rows.size(); ++i)
    shown.push_back(i);
  QVector<double> ticks, slower, faster;
  QVector<QString> labels;
  double low = 0, high = 0;
  for (size_t k = 0; k < shown.size(); ++k) {
    const kineto::TraceDiffRow& r = rows[shown[k]];
    const double us = r.deltaNsPerStep() / 1000.0;
    ticks << double(shown.size() - k);  // the biggest regression on top
    QString name = QString::fromStdString(r.name);
    if (name.size() > 48) name = name.left(47) + QStringLiteral("…");
    labels << name;
    slower << (us > 0 ? us : 0.0);
    faster << (us < 0 ? us : 0.0);
    low = std::min(low, us);
    high = std::max(high, us);
  }
  const auto bars = [&](const QVector<double>& values, const QColor& colour, const QString& label) {
    auto* b = new QCPBars(m_plot->yAxis, m_plot->xAxis);  // horizontal: categories on the left axis
    b->setData(ticks, values);
    b->setWidth(0.6);
    b->setBrush(colour);
    b->setPen(QPen(colour.darker(130)));
    b->setName(label);
  };
  bars(slower, QColor(0xe7, 0x4c, 0x3c), tr("slower in TEST"));
  bars(faster, QColor(0x27, 0xae, 0x60), tr("faster in TEST"));
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  ticker->addTicks(ticks, labels);
  m_plot->yAxis->setTicker(ticker);
  PlotStyle::styleCategoryAxis(m_plot->yAxis);
  m_plot->yAxis->setRange(0.4, double(shown.size()) + 0.6);
  const double pad = std::max(1e-3, (high - low) * 0.05);
  m_plot->xAxis->setRange(low - pad, high + pad);
  m_plot->xAxis->setLabel(tr("change in kernel time per step (µs, TEST − CONTROL)"));
  m_plot->legend->setVisible(true);
  PlotStyle::styleLegendRow(m_plot, m_plot->font());
  PlotStyle::updateLegendRow(m_plot, true);
  m_plot->replot();
}

bool TraceDiffPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  if (!m_diff) {
    if (error) *error = unavailable();
    return false;
  }
  return FigureExport::write(path, tr("GPU kernels: change per profiled step, TEST against CONTROL"), subtitle,
                             {{m_plot, 1.0}}, width, height, error);
}

}  // namespace shardscope
