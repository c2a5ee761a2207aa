#include "schedule_compare_table.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "analysis/capacity.h"
#include "analysis/schedule_comparison.h"
#include "config/kinds.h"

namespace shardscope {

ScheduleCompareTable::ScheduleCompareTable(QWidget* parent)
    : QWidget(parent), m_status(new QLabel(this)), m_table(new QTableWidget(0, ColumnCount, this)) {
  setObjectName(QStringLiteral("scheduleCompare"));
  m_table->setObjectName(QStringLiteral("scheduleCompareTable"));
  m_table->setHorizontalHeaderLabels({tr("schedule"), tr("step (ms)"), tr("bubble, measured"), tr("bubble, formula"),
                                      tr("most loaded"), tr("peak GB, measured"), tr("peak GB, plan")});
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->setToolTip(tr("Each schedule run once on the meta backend (modeled clock): the bubble from the run's "
                         "events beside (S - 1)/(V·M + S - 1), the most loaded stage's peak from its ledger beside "
                         "the stage plan"));
  m_status->setWordWrap(true);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(0, 0, 0, 0);
  box->addWidget(m_status);
  box->addWidget(m_table);
  m_table->hide();
}

void ScheduleCompareTable::setStatus(const QString& text) {
  m_status->setText(text);
  m_status->setVisible(!text.isEmpty());
  m_table->setRowCount(0);
  m_table->hide();
}

int ScheduleCompareTable::rowCount() const { return m_table->rowCount(); }

QString ScheduleCompareTable::cell(int row, int column) const {
  const QTableWidgetItem* item = m_table->item(row, column);
  return item ? item->text() : QString();
}

void ScheduleCompareTable::setComparison(const ScheduleComparison& comparison) {
  m_status->clear();
  m_status->hide();
  m_table->setRowCount(static_cast<int>(comparison.rows.size()));
  const auto put = [this](int row, int column, const QString& text) {
    auto* item = new QTableWidgetItem(text);
    if (column != Schedule) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_table->setItem(row, column, item);
  };
  for (int r = 0; r < m_table->rowCount(); ++r) {
    const ScheduleRow& row = comparison.rows[static_cast<size_t>(r)];
    QString name = QString::fromStdString(pipelineScheduleName(row.schedule));
    if (row.schedule == PipelineSchedule::Interleaved) name += tr(", %1 chunks per stage").arg(row.virtual_stages);
    put(r, Schedule, name);
    if (!row.refused.empty()) {
      put(r, StepMs, tr("refused: %1").arg(QString::fromStdString(row.refused)));
      m_table->setSpan(r, StepMs, 1, ColumnCount - StepMs);
      continue;
    }
    const ScheduleStageRow& loaded = row.stages.at(static_cast<size_t>(row.most_loaded));
    put(r, StepMs, QString::number(row.step_ms, 'f', 1));
    put(r, Bubble, QStringLiteral("%1 %").arg(100.0 * row.bubble_measured, 0, 'f', 1));
    put(r, BubbleFormula, QStringLiteral("%1 %").arg(100.0 * row.bubble_formula, 0, 'f', 1));
    put(r, MostLoaded, tr("stage %1").arg(row.most_loaded));
    put(r, PeakMeasured, QString::number(double(loaded.peak_measured) / kBytesPerGb, 'f', 2));
    put(r, PeakPlanned, QString::number(double(loaded.peak_planned) / kBytesPerGb, 'f', 2));
  }
  m_table->show();
}

}  // namespace shardscope
