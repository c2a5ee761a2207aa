// The stepping controls: Pause, Step (by op, action, unit, phase or training
// step), Continue, and breakpoints before every forward / backward / optimizer
// step, free of gathered parameters or collective launch, or before one unit
// (FSDP) or block. They drive EngineBridge's gate; Step
// with no run in progress asks the window to start the experiment paused, so
// the first press stops every rank before its first op.
#pragma once

#include <QObject>
#include <QString>
#include <functional>
#include <set>

#include "config/run_config.h"
#include "rank/step_gate.h"

class QAction;
class QComboBox;
class QMenu;
class QToolBar;
class QToolButton;

namespace shardscope {

class EngineBridge;
class EventStore;

class SteppingControls : public QObject {
  Q_OBJECT
 public:
  // config: the run the unit list describes (the live run's, or the form's).
  SteppingControls(EngineBridge* bridge, std::function<RunConfig()> config, QWidget* parent);

  // Puts the controls on a toolbar and the Run menu.
  void addTo(QToolBar* bar, QMenu* menu);
  void updateEnabled(bool can_start);

  QAction* pauseAction() const { return m_pause; }
  QAction* stepAction() const { return m_step; }
  QAction* continueAction() const { return m_continue; }
  StepMode granularity() const;
  void setGranularity(StepMode mode);  // NextOp, NextAction, NextUnit, NextPhase or NextStep
  // Breakpoints as the gate takes them (also set by the menu).
  void setBreakpoints(std::set<EventKind> kinds, std::set<int> units_or_blocks);
  const std::set<EventKind>& breakKinds() const { return m_kinds; }
  const std::set<int>& breakUnits() const { return m_units; }

  // "step 1 · before forward of unit 2 (block1) · all 4 ranks": where a stop is.
  static QString describe(const std::vector<GatePoint>& points, bool lockstep, const EventStore& store);

 signals:
  void startPausedRequested();  // Step pressed with no run in progress

 private:
  void onStep();
  void rebuildUnitMenu();
  void pushBreakpoints();

  EngineBridge* m_bridge;
  std::function<RunConfig()> m_config;
  QAction* m_pause;
  QAction* m_step;
  QAction* m_continue;
  QComboBox* m_granularity;
  QMenu* m_breakMenu;
  QToolButton* m_breakButton = nullptr;
  QMenu* m_unitMenu;
  QAction* m_breakForward;
  QAction* m_breakBackward;
  QAction* m_breakOptimizer;
  QAction* m_breakFree;
  QAction* m_breakGather;
  QAction* m_breakReduce;
  std::set<EventKind> m_kinds;
  std::set<int> m_units;
  bool m_canStart = false;
};

}  // namespace shardscope
