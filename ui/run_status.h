// The status bar's readout of the run on screen: where it came from, steps,
// loss, wall time, backend, clock and a progress bar; updated from the
// Inspection and the engine bridge (five times a second while a run goes).
#pragma once

#include <QObject>
#include <QString>

class QLabel;
class QProgressBar;
class QStatusBar;
class QTimer;

namespace shardscope {

class EngineBridge;
class Inspection;

class RunStatus : public QObject {
  Q_OBJECT
 public:
  RunStatus(const Inspection* inspection, const EngineBridge* bridge, QStatusBar* bar);

  void update();
  void setProgress(int done, int steps);
  void startClock();  // a run started: the wall time ticks
  void stopClock();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void elideSource();  // m_source, elided to the label's width

  const Inspection* m_inspection;
  QString m_source;
  const EngineBridge* m_bridge;
  QLabel* m_sourceLabel = nullptr;
  QLabel* m_stepLabel = nullptr;
  QLabel* m_lossLabel = nullptr;
  QLabel* m_elapsedLabel = nullptr;
  QLabel* m_backendLabel = nullptr;
  QLabel* m_clockLabel = nullptr;
  QProgressBar* m_progress = nullptr;
  QTimer* m_elapsedTimer = nullptr;
};

}  // namespace shardscope
