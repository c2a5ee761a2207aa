// The Capacity page's schedule comparison: GPipe, 1F1B and interleaved 1F1B
// as one row each — step time, the bubble measured from the run beside the
// formula's, the most loaded stage and its peak as the run's ledger measured
// it beside the stage plan. Shows what core's compareSchedules returned
// (analysis/schedule_comparison.h); computes nothing.
#pragma once

#include <QString>
#include <QWidget>

class QLabel;
class QTableWidget;

namespace shardscope {

struct ScheduleComparison;

class ScheduleCompareTable : public QWidget {
  Q_OBJECT
 public:
  explicit ScheduleCompareTable(QWidget* parent);
  void setComparison(const ScheduleComparison& comparison);
  // A line instead of the rows: "running …", an error, or "" to clear.
  void setStatus(const QString& text);
  int rowCount() const;
  QString cell(int row, int column) const;
  enum Column { Schedule, StepMs, Bubble, BubbleFormula, MostLoaded, PeakMeasured, PeakPlanned, ColumnCount };

 private:
  QLabel* m_status;
  QTableWidget* m_table;
};

}  // namespace shardscope
