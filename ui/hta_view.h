// An imported PyTorch job's Holistic Trace Analysis tables, one rank at a
// time: idle time by stream, launch queue length by stream, kernel breakdown
// and launch statistics. The numbers are core's (kineto/hta_analyses.h), the
// same `analyze` prints; this view only lays them out.
#pragma once

#include <QWidget>
#include <memory>

class QComboBox;
class QLabel;
class QTabWidget;
class QTableWidget;

namespace shardscope {

class Inspection;

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
};

// The view follows the run on screen: an imported job's analyses, else none.
void followHtaAnalyses(HtaView* view, Inspection& inspection);

}  // namespace shardscope
