// The straggler view of an imported multi-rank PyTorch job: ranks x matched
// collectives (by first arrival), each cell coloured by that rank's wait (the
// last arrival's start minus its own, ms; blank where it took no part), the
// last rank to arrive marked in each column, analyze's straggler lines above.
#pragma once

#include <QWidget>

#include "trace/straggler_table.h"

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPGraph;
class QLabel;

namespace shardscope {

class StragglerView : public QWidget {
  Q_OBJECT
 public:
  explicit StragglerView(QWidget* parent = nullptr);

  // Draws `table` (copied); nullptr or an empty table clears the view.
  void setTable(const StragglerTable* table);
  const StragglerTable& table() const { return m_table; }
  QCustomPlot* plot() const { return m_plot; }
  QCPColorMap* waitMap() const { return m_map; }
  QCPGraph* lastArrivals() const { return m_last; }  // (collective, row) of each column's last arriver
  QString summaryText() const;
  QString figureTitle() const;

 private:
  StragglerTable m_table;
  QLabel* m_summary;
  QCustomPlot* m_plot;
  QCPColorMap* m_map;
  QCPColorScale* m_scale;
  QCPGraph* m_last;
  QLabel* m_empty;
};

}  // namespace shardscope
