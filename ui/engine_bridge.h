// Owns the core Run behind the window and feeds its events to an EventStore:
// a ~30 Hz timer drains every rank's EventLog (lock-free for the recording threads) from a per-rank cursor.
// The UI thread never blocks on the run: Run::wait() is only called once
// Run::finished() is true, so it merely joins threads that have already ended.
// A modeled-clock run is swapped for its sorted, ledger-replayed trace at the
// end, stopped or not, so a failed run draws the same as its exported trace.
// Every run goes through the core's StepGate: Pause / Step / breakpoints stop
// all ranks in lockstep before a compute op, and the bridge reports the stop
// (where, and the run-clock time the views should show) once per stop. An
// attached run (run --serve elsewhere) is a Run fed over the network: the
// same drain, and its stepping goes to the served run's gate.
#pragma once

#include <QElapsedTimer>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QTimer>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "attach/attach_client.h"
#include "engine/run.h"
#include "config/run_config.h"
#include "trace/event.h"

namespace shardscope {

class EventStore;

class EngineBridge : public QObject {
  Q_OBJECT
 public:
  explicit EngineBridge(EventStore* store, QObject* parent = nullptr);
  ~EngineBridge() override;  // cancels a live run and joins it

  // Clears the store and starts a run; paused: every rank stops before its
  // first compute op. Throws ConfigError (validate()'s message) or RunError;
  // nothing changes then.
  void start(const RunConfig& config, bool paused = false);
  // Shows a run served elsewhere (attachToRun's, not started): its events
  // from the start of the run, live; stepping goes to the served run's gate.
  // Throws RunError while another run is in progress.
  void attach(AttachedRun attached);
  // Stop: this window's run, or an attached run itself (the served run stops).
  void cancel();
  // Attached: stop showing it; the served run goes on.
  void detach();
  bool isAttached() const { return m_attached != nullptr; }
  // The attached run's address ("" when the run is this window's own).
  const QString& attachedTo() const { return m_attachedTo; }
  // Attached to a run whose ranks are processes: watch and stop, no stepping.
  bool canStep() const { return !m_attached || m_attachedSteppable; }

  // Stepping (no-ops without a live run). step() and resume() release a stop.
  void pause();
  void step(StepMode granularity);
  void resume();
  // Kept across runs; a live run picks them up at once.
  void setBreakpoints(std::set<EventKind> kinds, std::set<int> units_or_blocks);
  struct GateStop {
    uint64_t id = 0;
    std::vector<GatePoint> points;  // per rank
    std::vector<int64_t> times_ns;  // per rank, run clock
    int64_t at_ns = 0;              // the latest of them: every rank is there by then
    bool lockstep = true;           // every rank at the same point
  };
  // The stop every rank waits at now (nullopt while running freely or idle).
  const std::optional<GateStop>& gateStop() const { return m_stop; }
  // Paused, or stepping towards the next stop (not running freely).
  bool isStepping() const;
  // The engine's own books for a rank right now (empty without a run): at a
  // stop, what the memory view's replay at the cursor must agree with.
  LedgerSnapshot ledgerNow(int rank) const;
  // Events the ranks have published so far (all ranks): the store holds them
  // all once a poll has drained them.
  size_t recordedEvents() const;

  bool isRunning() const { return m_run && !m_done; }
  bool hasRun() const { return m_run != nullptr; }
  const RunConfig& config() const { return m_config; }
  int stepsDone() const { return m_stepsDone; }
  double elapsedSeconds() const;  // wall time of the current or last run
  // What the last run measured (per-rank bytes sent, ledgers, step metrics);
  // empty while running and after a run that stopped.
  const std::optional<RunResult>& lastResult() const { return m_result; }
  // The last run's error ("" while running, after success or a cancel).
  const QString& lastError() const { return m_error; }

  // Drains pending events now (the timer does this on its own).
  void poll();

 signals:
  void runStarted();
  void eventsAppended();
  void progress(int steps_done, int steps, double last_loss);
  // ok false: the run failed (message = the run's one error) or was cancelled.
  void runFinished(bool ok, const QString& message);
  // Every rank reached the gate (gateStop() says where); the store holds
  // every event recorded up to there. gateReleased: the ranks go on.
  void gateStopped();
  void gateReleased();
  // A line from the served run (a refused command), for the status bar.
  void notice(const QString& text);

 private:
  void drain();
  void finish();
  void checkGate();
  void settleModeledStore();
  void release();
  void begin(const RunConfig& config);  // the store and counters for a new run, then start it

  EventStore* m_store;
  QTimer m_timer;
  QElapsedTimer m_clock;
  std::unique_ptr<Run> m_run;
  std::shared_ptr<RemoteGate> m_attached;  // the attached run's gate (nullptr: the run is ours)
  QString m_attachedTo;
  bool m_attachedSteppable = false;
  bool m_detached = false;
  RunConfig m_config;
  std::optional<RunResult> m_result;
  QString m_error;
  std::vector<size_t> m_cursors;  // per rank: events already copied into the store
  std::vector<Event> m_scratch;
  std::optional<GateStop> m_stop;
  uint64_t m_lastStopId = 0;
  size_t m_settledCount = 0;  // store size when a modeled stop was last sorted
  std::set<EventKind> m_breakKinds;
  std::set<int> m_breakUnits;
  int m_stepsDone = 0;
  bool m_done = true;
  bool m_cancelled = false;
  double m_elapsed = 0;
};

}  // namespace shardscope

Q_DECLARE_METATYPE(shardscope::RunConfig)
