// The communication page in compare mode: the pinned runs in columns — bytes
// rank 0 sent per collective in the last step beside the formula's, step and
// communication time, exposed and hidden, overlap — a chart of each run's
// step time (the communication that compute did not hide stacked on the rest,
// the hidden communication beside it: what a slow link or a layout costs)
// and a chart of the bytes sent per run (stacked by collective, the
// formula's total outlined). The figure is both charts, time first.
#pragma once

#include <QWidget>
#include <vector>

#include "comm_stats_model.h"
#include "inspect/run_comparison.h"

class QCustomPlot;
class QCPBars;
class QSplitter;
class QTableWidget;

namespace shardscope {

class CompareCommView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareCommView(QWidget* parent = nullptr);

  void setRuns(const std::vector<ComparedRun>& runs);

  QTableWidget* table() const { return m_table; }  // one column per run
  QCustomPlot* plot() const { return m_plot; }          // bytes sent
  QCustomPlot* timePlot() const { return m_timePlot; }  // step time, exposed vs hidden communication
  // Per run, as drawn (ms): the step time, its exposed and its hidden communication.
  const std::vector<double>& stepMs() const { return m_stepMs; }
  const std::vector<double>& exposedMs() const { return m_exposedMs; }
  const std::vector<double>& hiddenMs() const { return m_hiddenMs; }
  QString figureTitle() const;

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  QTableWidget* m_table;
  QSplitter* m_charts = nullptr;  // the two charts: side by side, or one above the other when narrow
  QCustomPlot* m_plot;
  QCPBars* m_kindBars[kCommViewKindCount + 1] = {};  // the data-parallel collectives, then the TP groups
  QCPBars* m_expected = nullptr;
  QCustomPlot* m_timePlot;
  QCPBars* m_rest = nullptr;     // step time less exposed communication
  QCPBars* m_exposed = nullptr;  // stacked on it: the step is the bar's top
  QCPBars* m_hidden = nullptr;   // beside: communication compute hid
  std::vector<double> m_stepMs, m_exposedMs, m_hiddenMs;
  int m_runs = 0;
};

}  // namespace shardscope
