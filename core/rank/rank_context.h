// Everything one rank's threads share: its id, its event log, ledger and the
// run-wide clock, stop switch and status board. Stream tasks capture a
// reference to it; it outlives the rank's streams.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "rank/rank_status_board.h"
#include "rank/cost_model.h"
#include "rank/step_gate.h"
#include "common/run_clock.h"
#include "common/run_control.h"
#include "device/rank_device.h"
#include "memory/memory_ledger.h"
#include "trace/event_log.h"

namespace shardscope {

struct RankContext {
  RankContext(int rank_, int ranks_, const RunClock& clock_, RunControl& control_,
              RankStatusBoard& board_, bool meta_ = false)
      : rank(rank_), ranks(ranks_), clock(clock_), control(control_), board(board_),
        ledger(rank_, &log, &clock_, meta_) {}
  bool meta() const { return ledger.meta(); }

  // Ids from the calling thread's cursor slot, so they are the same every run.
  int32_t newOp() {
    if (TimelineCursor* c = currentCursor(); c && c->op_base >= 0) return c->op_base + c->op_next++;
    return (31 << 24) + m_nextOp.fetch_add(1, std::memory_order_relaxed);
  }
  int currentStep() const { return m_step.load(std::memory_order_relaxed); }
  void setStep(int step) {
    m_step.store(step, std::memory_order_relaxed);
    ledger.setStep(step);
  }
  void record(Event e) {
    e.rank = static_cast<int16_t>(rank);
    if (e.step < 0) e.step = currentStep();
    log.record(e);
  }
  void instant(Lane lane, EventKind kind, Event e = {}) {
    e.lane = lane;
    e.kind = kind;
    e.begin_ns = e.end_ns = clock.nowNs();
    record(e);
  }
  void setStatus(Lane lane, std::string s) { board.set(rank, lane, std::move(s)); }
  // Modeled clock: the calling thread's current op costs this much (no-op when measured).
  void chargeCompute(double flops, double bytes) const;
  // Modeled clock, inside an op that stops for a collective mid-way (tensor
  // parallelism): the op has done `flops` so far; the clock reaches that point
  // now, and the op's own charges later only add what goes beyond it.
  void chargeComputeUpTo(double flops) const;
  void chargeMemory(double bytes) const {
    if (cost) clock.advance(cost->memoryNs(bytes));
  }
  // Modeled clock, on the thread that issues work (the host thread): the
  // profile's launch cost for `kernels` kernels and `hooks` FSDP unit hooks,
  // drawn on the host lane. A stream never starts a task before it was issued,
  // so this only shows where the host falls behind the device.
  void hostIssue(int kernels, int hooks) {
    if (!cost || kernels + hooks <= 0) return;
    Event e;
    e.lane = Lane::Host;
    e.kind = EventKind::Launch;
    e.value = kernels;
    e.seq = hooks;
    e.begin_ns = clock.nowNs();
    clock.advance(cost->hostIssueNs(kernels, hooks));
    e.end_ns = clock.nowNs();
    record(e);
  }

  const int rank;
  const int ranks;
  const RunClock& clock;
  RunControl& control;
  RankStatusBoard& board;
  EventLog log;
  MemoryLedger ledger;
  const CostModel* cost = nullptr;  // set when the run's clock is modeled
  StepGate* gate = nullptr;         // lockstep stepping (null: never stops)
  RankDevice* device = nullptr;     // GPU runs: this rank's device (null: cpu, meta)
  DeviceOps& ops() const { return device ? device->ops() : cpuDeviceOps(); }

  // GPU runs: an op timed by device markers on its stream's queue. It reaches
  // the log when resolveDeviceTimes() turns the markers into run-clock times,
  // after the rank's queues are drained (once per step), so nothing syncs mid-step.
  void deferTimed(Event e, DeviceMarkerPtr begin, DeviceMarkerPtr end) {
    e.rank = static_cast<int16_t>(rank);
    if (e.step < 0) e.step = currentStep();
    std::lock_guard lock(m_timedMutex);
    m_timed.push_back({e, std::move(begin), std::move(end)});
  }
  void resolveDeviceTimes() {
    std::vector<TimedEvent> pending;
    {
      std::lock_guard lock(m_timedMutex);
      pending.swap(m_timed);
    }
    for (TimedEvent& t : pending) {
      t.end->hostWait(control);
      t.event.begin_ns = device->markerNs(*t.begin);
      t.event.end_ns = std::max(t.event.begin_ns, device->markerNs(*t.end));
      log.record(t.event);
    }
  }
  // Stepping can stop this run (the gate is on): gate points that need a task
  // of their own (a launch) are enqueued only then.
  bool gated() const { return gate && gate->enabled(); }
  // Compute stream, before a forward/backward/optimizer op, a free of gathered
  // parameters or a collective launch (see StepGate).
  void gatePoint(EventKind kind, int block = -1, int unit = -1) {
    if (!gate) return;
    const GatePoint point{kind, currentStep(), block, unit, gate_microbatch, gate_slot};
    if (device)  // a stop shows the device work launched so far, resolved
      gate->pass(rank, point, clock.nowNs(), [this] { resolveDeviceTimes(); });
    else
      gate->pass(rank, point, clock.nowNs());
  }
  // A pipeline's stage sets where in its schedule the next gate points are
  // (GatePoint::microbatch, slot); -1 elsewhere.
  int gate_microbatch = -1;
  int64_t gate_slot = -1;

 private:
  struct TimedEvent {
    Event event;
    DeviceMarkerPtr begin, end;
  };
  std::atomic<int32_t> m_nextOp{0};
  std::atomic<int> m_step{-1};
  std::mutex m_timedMutex;
  std::vector<TimedEvent> m_timed;
};

// Records a duration event from construction to destruction (RAII), on one
// lane. On a stream of a GPU run the span is the device's: markers on the
// stream's queue around the work the scope launched.
class ScopedEvent {
 public:
  ScopedEvent(RankContext& ctx, Lane lane, EventKind kind, Event fields = {})
      : m_ctx(ctx), m_event(fields), m_outer(t_open) {
    m_event.lane = lane;
    m_event.kind = kind;
    if (m_event.op < 0) m_event.op = ctx.newOp();
    m_event.begin_ns = ctx.clock.nowNs();
    if (ctx.device)
      if (DeviceQueue* q = currentDeviceQueue()) m_begin = q->mark(/*timing=*/true);
    t_open = this;
  }
  ~ScopedEvent() {
    t_open = m_outer;
    m_event.end_ns = m_ctx.clock.nowNs();
    // A piece after the op's last collective that took no time is no piece.
    if (m_pieces > 0 && m_event.end_ns == m_event.begin_ns) return;
    if (m_begin) {
      try {
        m_ctx.deferTimed(m_event, std::move(m_begin), currentDeviceQueue()->mark(/*timing=*/true));
        return;
      } catch (const std::exception&) {
        // The device failed (the run is failing with it): keep the host times.
      }
    }
    m_ctx.record(m_event);
  }
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;
  Event& event() { return m_event; }
  // The span will be the device's (markers), not the host's.
  bool deviceTimed() const { return m_begin != nullptr; }

  // The innermost span open on the calling thread (the op a stream task is in).
  static ScopedEvent* open() { return t_open; }
  // An op that blocks on a collective mid-way (a tensor-parallel all-reduce):
  // the piece so far is recorded now, the op goes on from resume() with the
  // same fields, so the collective sits between two pieces of it on the lane.
  // Host-timed spans only (a device span stays whole).
  void pause() {
    if (m_begin) return;
    m_event.end_ns = m_ctx.clock.nowNs();
    m_ctx.record(m_event);
    ++m_pieces;
  }
  void resume() {
    if (!m_begin) m_event.begin_ns = m_ctx.clock.nowNs();
  }
  // Modeled clock (RankContext::chargeCompute): what the op asked for so far
  // and how far the clock has advanced for it.
  int64_t planned_ns = 0, charged_ns = 0;

 private:
  RankContext& m_ctx;
  Event m_event;
  DeviceMarkerPtr m_begin;
  ScopedEvent* m_outer;
  int m_pieces = 0;
  static inline thread_local ScopedEvent* t_open = nullptr;
};

inline void RankContext::chargeCompute(double flops, double bytes) const {
  if (!cost) return;
  const int64_t ns = cost->computeNs(flops, bytes);
  ScopedEvent* span = ScopedEvent::open();
  if (!span) {
    clock.advance(ns);
    return;
  }
  span->planned_ns += ns;
  if (span->planned_ns > span->charged_ns) {
    clock.advance(span->planned_ns - span->charged_ns);
    span->charged_ns = span->planned_ns;
  }
}

inline void RankContext::chargeComputeUpTo(double flops) const {
  if (!cost) return;
  ScopedEvent* span = ScopedEvent::open();
  const int64_t target = cost->computeNs(flops, 0.0);
  if (!span) {
    clock.advance(target);
    return;
  }
  if (target > span->charged_ns) {
    clock.advance(target - span->charged_ns);
    span->charged_ns = target;
  }
}

}  // namespace shardscope
