// An imported PyTorch job's Holistic Trace Analysis tables, one rank at a
// time: idle time by stream, launch queue length by stream, kernel breakdown
// and launch statistics. The numbers are core's (kineto/hta_analyses.h), the
// same `analyze` prints; this view only lays them out.
#pragma once

#include <QWidget>
#include <memory>

class QComboBox;
class QCustomPlot;
class QLabel;
class QTabWidget;
class QTableWidget;

namespace shardscope {

namespace kineto {
struct JobAnalysis;
}

class HtaView : public QWidget {
  Q_OBJECT
 public:
  explicit HtaView(QWidget* parent = nullptr);

  // nullptr: nothing imported (the view says what it is for).
  void setAnalysis(std::shared_ptr<const kineto::JobAnalysis> analysis);
  void showRank(int index);  // index into the analysis' ranks
  QTableWidget* idleTable() const { return m_idle; }
  QTableWidget* queueTable() const { return m_queue; }
  QTableWidget* kernelTable() const { return m_kernels; }
  QTableWidget* launchTable() const { return m_launch; }
  QString launchNote() const;
  // HTA's idle-time breakdown as stacked bars (host wait, kernel wait, other)
  // per rank and stream: every rank's streams, or the shown rank's when a job
  // has more than kMaxIdleBars of them. The page's figure.
  QCustomPlot* idlePlot() const { return m_idlePlot; }
  QString idleFigureTitle() const;
  static constexpr int kMaxIdleBars = 48;

 private:
  std::shared_ptr<const kineto::JobAnalysis> m_analysis;
  QLabel* m_empty;
  QComboBox* m_rank;
  QTabWidget* m_tabs;
  QTableWidget* m_idle;
  QTableWidget* m_queue;
  QTableWidget* m_kernels;
  QTableWidget* m_launch;
  QLabel* m_launchNote;
  QCustomPlot* m_idlePlot;
  bool m_idleAllRanks = true;  // the chart holds every rank's streams

  void drawIdle(int rank_index);  // -1: every rank
};

}  // namespace shardscope
