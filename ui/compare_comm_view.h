// The communication page in compare mode: the pinned runs in columns — bytes
// rank 0 sent per collective in the last step beside the formula's, step and
// communication time, exposed and hidden, overlap — and a chart of the bytes
// sent per run (stacked by collective, the formula's total outlined).
#pragma once

#include <QWidget>
#include <vector>

#include "comm_stats_model.h"
#include "inspect/run_comparison.h"

class QCustomPlot;
class QCPBars;
class QTableWidget;

namespace shardscope {

class CompareCommView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareCommView(QWidget* parent = nullptr);

  void setRuns(const std::vector<ComparedRun>& runs);

  QTableWidget* table() const { return m_table; }  // one column per run
  QCustomPlot* plot() const { return m_plot; }
  QString figureTitle() const;

 private:
  QTableWidget* m_table;
  QCustomPlot* m_plot;
  QCPBars* m_kindBars[kCommViewKindCount + 1] = {};  // the data-parallel collectives, then the TP groups
  QCPBars* m_expected = nullptr;
  int m_runs = 0;
};

}  // namespace shardscope
