// Loss per training step, the mean over ranks of each rank's local loss as
// the core reports it. Every finished run can be kept as a labelled curve
// ("ddp · 4 ranks"), so runs overlay: DDP and ZeRO-3 on the same data and
// random seed draw the same curve (later curves dashed and marked differently, so
// coinciding curves stay visible). The live run draws on top until it is kept.
#pragma once

#include <QWidget>
#include <cstddef>
#include <cstdint>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QLabel;
class QPushButton;

namespace shardscope {

class EventStore;

class LossView : public QWidget {
  Q_OBJECT
 public:
  explicit LossView(const EventStore* store, QWidget* parent = nullptr);

  void refresh();
  // Traces carry no losses: the empty state says so instead of "not yet".
  void setFromTrace(bool from_trace);
  // A run without losses (the meta backend runs no math): why, or "" to clear.
  void setNoLossReason(const QString& reason);
  // Keeps the store's current losses as a curve; the live curve then hides.
  void keepRun(const QString& label);
  void appendRun(const QString& label, const std::vector<double>& losses);
  // The store holds a run already kept as a curve: hide the live one.
  void markKept();
  void clearRuns();
  // Rows in the Runs table: "Clear runs" removes them too (MainWindow, on
  // runsCleared), so the button is enabled while there are any.
  void setTableRuns(int rows);
  // A live run of lesson `preset` starts: the kept curves of another lesson go
  // (a lecture moving on must not overlay the last lesson's curves); a run of
  // no lesson keeps them, to compare an edited form with the lesson's runs.
  void startLessonRun(const QString& preset);
  int runCount() const { return static_cast<int>(m_runs.size()); }
  QString runLabel(int i) const;
  QCustomPlot* plot() const { return m_plot; }
  int pointCount() const;  // points of the live curve
  QString figureTitle() const;

 signals:
  void runsCleared();  // the user pressed "Clear runs" (the curves are gone already)

 private:
  void rescale();
  void updateClearButton();

  struct Curve {
    QString label;
    QCPGraph* graph;
  };
  const EventStore* m_store;
  QCustomPlot* m_plot;
  QCPGraph* m_graph;
  QLabel* m_empty;
  QPushButton* m_clear;
  std::vector<Curve> m_runs;
  QString m_noLoss;
  QString m_lesson;  // the lesson whose runs the kept curves are
  bool m_fromTrace = false;
  int m_tableRuns = 0;
  bool m_kept = false;             // the store's losses are already a kept curve
  size_t m_shown = ~size_t{0};     // losses plotted at the last refresh
  uint64_t m_generation = ~0ull;   // store generation at the last refresh
};

}  // namespace shardscope
