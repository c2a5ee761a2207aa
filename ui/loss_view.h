// Loss per training step: the mean over ranks of each rank's local loss, as the
// core reports it (Run::losses() while live). Traces carry no losses, so an
// opened trace shows an explanatory empty state instead of a blank plot.
#pragma once

#include <QWidget>
#include <cstddef>
#include <cstdint>

class QCustomPlot;
class QCPGraph;
class QLabel;

namespace shardscope {

class EventStore;

class LossView : public QWidget {
  Q_OBJECT
 public:
  explicit LossView(const EventStore* store, QWidget* parent = nullptr);

  void refresh();
  // Traces carry no losses: the empty state says so instead of "not yet".
  void setFromTrace(bool from_trace) { m_fromTrace = from_trace; }
  QCustomPlot* plot() const { return m_plot; }
  int pointCount() const;

 private:
  const EventStore* m_store;
  QCustomPlot* m_plot;
  QCPGraph* m_graph;
  QLabel* m_empty;
  bool m_fromTrace = false;
  size_t m_shown = ~size_t{0};      // losses plotted at the last refresh
  uint64_t m_generation = ~0ull;  // store generation at the last refresh
};

}  // namespace shardscope
