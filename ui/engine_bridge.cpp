#include "engine_bridge.h"

#include <algorithm>

#include "memory/ledger_replay.h"
#include "analysis/run_summary.h"
#include "common/errors.h"
#include "inspect/event_store.h"

namespace shardscope {

namespace {
constexpr int kPollMs = 33;  // ~30 Hz: smooth enough, cheap next to the run itself
}

EngineBridge::EngineBridge(EventStore* store, QObject* parent) : QObject(parent), m_store(store) {
  m_timer.setInterval(kPollMs);
  connect(&m_timer, &QTimer::timeout, this, &EngineBridge::poll);
}

EngineBridge::~EngineBridge() {
  m_timer.stop();
  if (m_run && !m_done) m_run->cancel();
  m_run.reset();  // Run's destructor joins its threads
}

void EngineBridge::start(const RunConfig& config, bool paused) {
  if (isRunning()) throw RunError("a run is already in progress; stop it first");
  auto run = std::make_unique<Run>(config);  // validates: throws ConfigError
  m_run.reset();
  m_run = std::move(run);
  m_attached.reset();
  m_attachedTo.clear();
  // Always gated: Pause must work at any moment, and a pass that is not a
  // stop costs one uncontended lock per compute op.
  m_run->gate().enable();
  std::set<EventKind> kinds = m_breakKinds;
  std::set<int> units = m_breakUnits;
  kinds.merge(breakEventKinds(config.break_on));
  units.insert(config.break_units.begin(), config.break_units.end());
  m_run->gate().setBreakpoints(std::move(kinds), std::move(units));
  if (paused) m_run->gate().pause();
  m_run->setBackground(true);  // the ranks yield to the UI thread
  begin(config);
}

void EngineBridge::attach(AttachedRun attached) {
  if (isRunning()) throw RunError("a run is already in progress; stop it first");
  m_run.reset();
  m_run = std::move(attached.run);
  m_attached = std::move(attached.gate);
  m_attachedTo = QString::fromStdString(attached.endpoint);
  m_attachedSteppable = attached.steppable;
  // This window's breakpoints reach the served run as its own.
  if (m_attachedSteppable && (!m_breakKinds.empty() || !m_breakUnits.empty()))
    m_run->stepControl().setBreakpoints(m_breakKinds, m_breakUnits);
  begin(m_run->config());
}

void EngineBridge::begin(const RunConfig& config) {
  m_stop.reset();
  m_lastStopId = 0;
  m_settledCount = 0;
  m_config = config;
  // Metadata only (no event has been recorded yet), with the rank map: a
  // replicated run's copies show their source's events as they arrive.
  RunTrace meta = m_run->trace(Run::CopiedRanks::Shared);
  m_store->reset(meta);
  m_cursors.assign(static_cast<size_t>(config.ranks), 0);
  m_stepsDone = 0;
  m_result.reset();
  m_error.clear();
  m_done = false;
  m_cancelled = false;
  m_detached = false;
  m_elapsed = 0;
  m_clock.start();
  m_run->start();
  m_timer.start();
  emit runStarted();
}

void EngineBridge::cancel() {
  if (!isRunning()) return;
  m_cancelled = true;
  if (m_attached) m_attached->stopRun();  // it ends there, and its end reaches us
  else m_run->cancel();
}

void EngineBridge::detach() {
  if (!isRunning() || !m_attached) return;
  m_detached = true;
  m_run->cancel();
}

void EngineBridge::pause() {
  if (isRunning() && canStep()) m_run->stepControl().pause();
}

void EngineBridge::step(StepMode granularity) {
  if (!isRunning() || !canStep()) return;
  m_run->stepControl().step(granularity);
  release();
}

void EngineBridge::resume() {
  if (!isRunning() || !canStep()) return;
  m_run->stepControl().resume();
  release();
}

void EngineBridge::release() {
  if (!m_stop) return;
  m_stop.reset();
  emit gateReleased();
}

LedgerSnapshot EngineBridge::ledgerNow(int rank) const {
  if (!m_run) return {};
  if (!m_attached) return m_run->ledger(rank);
  LedgerSnapshot s;  // an attached run's books: what the served run sent at the stop
  if (const auto at_stop = m_attached->ledgerAtStop(rank)) s.current = *at_stop;
  return s;
}

size_t EngineBridge::recordedEvents() const {
  size_t n = 0;
  if (m_run)
    for (int r = 0; r < m_config.ranks; ++r) n += m_run->eventLog(r).publishedCount();
  return n;
}

bool EngineBridge::isStepping() const { return isRunning() && m_run->stepControl().paused(); }

void EngineBridge::setBreakpoints(std::set<EventKind> kinds, std::set<int> units_or_blocks) {
  m_breakKinds = std::move(kinds);
  m_breakUnits = std::move(units_or_blocks);
  if (isRunning() && canStep()) m_run->stepControl().setBreakpoints(m_breakKinds, m_breakUnits);
}

double EngineBridge::elapsedSeconds() const {
  if (m_run && !m_done) return static_cast<double>(m_clock.nsecsElapsed()) * 1e-9;
  return m_elapsed;
}

void EngineBridge::poll() {
  if (!m_run || m_done) return;
  // Read finished() before draining: every event recorded before the run
  // ended is then published and this drain is the last one needed.
  const bool finished = m_run->finished();
  drain();
  if (finished) {
    finish();
    return;
  }
  if (m_attached)
    for (const std::string& line : m_attached->takeNotices()) emit notice(QString::fromStdString(line));
  checkGate();
}

void EngineBridge::checkGate() {
  GateStop stop;
  if (!m_run->stepControl().stopped(&stop.points, &stop.id, &stop.times_ns)) return;
  if (stop.id == m_lastStopId) {
    // Still stopped: other streams may have finished ops since (a prefetched
    // gather); keep a modeled store in time order as they arrive.
    if (m_config.clock == ClockKind::Modeled && m_store->eventCount() != m_settledCount) {
      settleModeledStore();
      emit eventsAppended();
    }
    return;
  }
  m_lastStopId = stop.id;
  for (size_t r = 0; r < stop.points.size(); ++r) {
    stop.lockstep &= stop.points[r] == stop.points.front();
    stop.at_ns = std::max(stop.at_ns, stop.times_ns[r]);
  }
  if (m_config.clock == ClockKind::Modeled) {
    settleModeledStore();
    emit eventsAppended();
  }
  m_stop = std::move(stop);
  emit gateStopped();
}

void EngineBridge::settleModeledStore() {
  // Live modeled events arrive in real-time order with the ledger's running
  // totals of that order; at a stop the views must show modeled time, so
  // sort and replay what has arrived, as the end of the run does.
  RunTrace trace = m_store->toRunTrace();
  for (std::vector<Event>& events : trace.events) {
    sortEvents(events);
    replayLedger(events);
  }
  std::vector<double> losses = m_store->losses();
  m_store->setFromTrace(std::move(trace));
  m_store->setLosses(std::move(losses));
  m_settledCount = m_store->eventCount();
}

void EngineBridge::drain() {
  bool any = false;
  for (size_t r = 0; r < m_cursors.size(); ++r) {
    m_scratch.clear();
    m_cursors[r] = m_run->eventLog(static_cast<int>(r)).readFrom(m_cursors[r], m_scratch);
    if (m_scratch.empty()) continue;
    m_store->appendEvents(static_cast<int>(r), m_scratch);
    any = true;
  }
  std::vector<double> losses = m_run->losses();
  const bool new_step = static_cast<int>(losses.size()) != m_stepsDone;
  if (new_step) {
    m_stepsDone = static_cast<int>(losses.size());
    const double last = losses.empty() ? 0.0 : losses.back();
    m_store->setLosses(std::move(losses));
    emit progress(m_stepsDone, m_config.steps, last);
  }
  if (any || new_step) emit eventsAppended();
}

void EngineBridge::finish() {
  m_timer.stop();
  m_done = true;
  release();
  m_elapsed = static_cast<double>(m_clock.nsecsElapsed()) * 1e-9;
  bool ok = true;
  QString message;
  try {
    RunResult result = m_run->wait();  // returns at once: the run has finished
    m_elapsed = result.wall_seconds;
    // The computer's time, in a unit that never reads 0.00 (a meta run of a
    // 70B model takes milliseconds); the modeled clock's step beside it.
    const double wall = result.wall_seconds;
    const QString took = wall >= 0.1    ? tr("%1 s").arg(wall, 0, 'f', 2)
                         : wall >= 1e-3 ? tr("%1 ms").arg(wall * 1e3, 0, 'f', 0)
                                        : tr("under 1 ms");
    message = result.losses.size() == 1 ? tr("finished 1 step in %1").arg(took)
                                        : tr("finished %1 steps in %2").arg(result.losses.size()).arg(took);
    int64_t modeled_step = 0;
    for (const StepMetrics& m : result.last_step) modeled_step = std::max(modeled_step, m.wall_ns);
    if (m_config.clock == ClockKind::Modeled && modeled_step > 0)
      message += tr(" of computer time; modeled step %1 on %2")
                     .arg(modeled_step >= 1'000'000'000 ? tr("%1 s").arg(static_cast<double>(modeled_step) * 1e-9, 0, 'f', 2)
                                                        : tr("%1 ms").arg(static_cast<double>(modeled_step) * 1e-6, 0, 'f', 2))
                     .arg(QString::fromStdString(result.profile));
    m_result = std::move(result);
  } catch (const RunAborted&) {
    ok = false;
    if (m_detached) message = tr("detached from %1: the run goes on there").arg(m_attachedTo);
    else if (m_attached) message = tr("the run at %1 stopped before its last step").arg(m_attachedTo);
    else message = m_cancelled ? tr("run stopped by the user") : tr("run aborted");
  } catch (const std::exception& e) {
    ok = false;
    message = QString::fromStdString(e.what());
    m_error = message;
  }
  if (m_config.clock == ClockKind::Modeled) {
    // Live events carry modeled times in real-time record order; the run's
    // trace is the same events sorted with the ledger replayed in modeled
    // time. Show that one, as an exported trace would.
    std::vector<double> losses = m_store->losses();
    RunTrace trace = m_run->trace(Run::CopiedRanks::Shared);  // copies stay their source's events
    m_store->setFromTrace(std::move(trace));
    m_store->setLosses(std::move(losses));
    emit eventsAppended();
  }
  emit runFinished(ok, message);
}

}  // namespace shardscope
