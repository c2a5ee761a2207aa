// An imported PyTorch job's critical path (kineto/critical_path.h): the time of
// every rank's step by category as stacked bars (compute, communication,
// launch/CPU, idle, waiting for another rank), and the shown rank's path as a
// table of segments. The numbers are core's, the same `analyze` prints.
#pragma once

#include <QWidget>
#include <array>
#include <memory>

class QCPBars;
class QCustomPlot;
class QLabel;
class QTableWidget;

namespace shardscope {

namespace kineto {
struct JobAnalysis;
}

class CriticalPathView : public QWidget {
  Q_OBJECT
 public:
  explicit CriticalPathView(QWidget* parent = nullptr);

  // nullptr: nothing imported (the view says what it is for).
  void setAnalysis(std::shared_ptr<const kineto::JobAnalysis> analysis);
  QCustomPlot* plot() const { return m_plot; }
  QCPBars* bars(int category) const { return m_bars[static_cast<size_t>(category)]; }  // a kineto::PathCategory
  QTableWidget* segmentTable() const { return m_table; }
  QString summaryText() const;
  QString figureTitle() const;
  // Rows the table shows at most (the path's longest segments, in time order).
  static constexpr int kMaxRows = 2000;

 private:
  std::shared_ptr<const kineto::JobAnalysis> m_analysis;
  QLabel* m_summary;
  QCustomPlot* m_plot;
  std::array<QCPBars*, 5> m_bars{};
  QTableWidget* m_table;
  QLabel* m_empty;
};

}  // namespace shardscope
