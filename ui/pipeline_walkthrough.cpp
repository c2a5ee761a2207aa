#include "pipeline_walkthrough.h"

#include <algorithm>

#include "inspect/event_store.h"
#include "parallel/pipeline_schedule.h"

namespace shardscope {

namespace {

// Line numbers (0-based) of the two algorithms.
struct PipelineLines {
  int forward_header, forward, steady_header, steady_forward, backward, cool_header, cool_backward, flush;
};
constexpr PipelineLines kGPipeLines{0, 1, -1, -1, 3, 2, 3, 4};
constexpr PipelineLines kOneFOneBLines{0, 1, 2, 3, 4, 5, 6, 7};

const PipelineLines& linesOf(PipelineSchedule kind) {
  return kind == PipelineSchedule::GPipe ? kGPipeLines : kOneFOneBLines;
}

QString plural(int n, const char* noun) {
  return QStringLiteral("%1 %2%3").arg(n).arg(QLatin1String(noun)).arg(n == 1 ? "" : "s");
}

PipelineScheduleOrder orderOf(const RunConfig& c) {
  return PipelineScheduleOrder(c.pipelineSchedule(), c.pp, c.microbatchCount(), c.virtualStages());
}

const QString kRecvForwardSend = QStringLiteral(
    "receive the microbatch's activations from the stage before (stage 0: load its samples), forward, send the "
    "output to the next stage");
const QString kRecvBackwardSend = QStringLiteral(
    "receive the output gradient from the next stage (the last stage: from its loss), backward, accumulate the "
    "weight gradients, send the input gradient back");
const QString kFlush = QStringLiteral(
    "flush: wait until every send has been received, reduce the accumulated gradients over the data-parallel axis "
    "(as the strategy does), optimizer step");

}  // namespace

Algorithm PipelineWalkthrough::algorithm(const RunConfig& c) {
  const PipelineScheduleOrder order = orderOf(c);
  const int S = c.pp, M = c.microbatchCount(), V = order.virtualStages();
  Algorithm a;
  const QString where = QStringLiteral(", stage 0 of %1 (rank 0), %2 microbatches").arg(S).arg(M);
  switch (order.kind()) {
    case PipelineSchedule::GPipe:
      a.title = QStringLiteral("One GPipe step") + where;
      a.source = QStringLiteral("Huang et al. 2019 (GPipe)");
      a.lines = {QStringLiteral("for each of the %1 microbatches (each stage holds all %1 activations until its "
                                "backwards):").arg(M),
                 kRecvForwardSend,
                 QStringLiteral("then for each microbatch, as its gradient comes back:"),
                 kRecvBackwardSend,
                 kFlush};
      a.headers = {0, 2};
      break;
    case PipelineSchedule::OneFOneB:
    case PipelineSchedule::Interleaved: {
      const bool interleaved = order.kind() == PipelineSchedule::Interleaved;
      const int warm = order.warmUpForwards(0), cool = order.coolDownBackwards(0);
      a.title = (interleaved ? QStringLiteral("One interleaved 1F1B step (%1 model chunks per stage)").arg(V)
                             : QStringLiteral("One 1F1B step")) + where;
      a.source = interleaved ? QStringLiteral("Narayanan et al. 2021, Megatron-LM's interleaved schedule")
                             : QStringLiteral("Narayanan et al. 2021 (PipeDream-Flush), as Megatron-LM runs it");
      a.lines = {
          interleaved ? QStringLiteral("warm-up: %1 before the first backward (stage k: (S − k − 1)·2 + (V − 1)·S, "
                                       "at most V·M)").arg(plural(warm, "chunk forward"))
                      : QStringLiteral("warm-up: %1 before the first backward (stage k: S − k − 1, at most M)")
                            .arg(plural(warm, "forward")),
          kRecvForwardSend,
          QStringLiteral("steady state: for each remaining microbatch, one forward, then one backward (stage 0 "
                         "holds at most %1 %2 in flight)")
              .arg(order.maxInFlight(0))
              .arg(interleaved ? QStringLiteral("microbatch-chunks") : QStringLiteral("microbatches")),
          kRecvForwardSend,
          kRecvBackwardSend,
          QStringLiteral("cool-down: the last %1, as their gradients come back").arg(plural(cool, "backward")),
          kRecvBackwardSend,
          kFlush};
      a.headers = {0, 2, 5};
      break;
    }
  }
  a.note = QStringLiteral(
      "Rank 0 runs stage 0: the lines light the pass it runs at the cursor, and between passes the one it waits "
      "to run (the bubble). Stepping a pipeline moves one slot of the schedule: every stage stops before its next "
      "pass.");
  return a;
}

std::vector<LitLine> PipelineWalkthrough::litAt(const EventStore& store, int step, int64_t t,
                                                std::optional<EventKind> pending) const {
  std::vector<LitLine> out;
  const RunConfig* c = store.config();
  if (!c || c->pp < 2 || step < 0 || store.rankCount() == 0) return out;
  const size_t events = store.events(0).size();
  if (m_generation != store.generation() || m_events != events || m_step != step) {
    m_boxes.build(store, step);
    m_generation = store.generation();
    m_events = events;
    m_step = step;
  }
  const PipelineScheduleOrder order = orderOf(*c);
  const PipelineLines& lines = linesOf(order.kind());
  const auto add = [&](int line, const QString& lane, bool primary) {
    if (line < 0) return;
    for (const LitLine& l : out)
      if (l.line == line) return;
    out.push_back({line, lane, primary});
  };
  // The line of stage 0's index-th pass, with its header.
  const auto addPass = [&](int index, const QString& lane, bool primary) {
    if (index < 0 || static_cast<size_t>(index) >= order.actions(0).size()) return add(lines.flush, lane, primary);
    const bool forward = order.actions(0)[static_cast<size_t>(index)].pass == PipelineAction::Pass::Forward;
    switch (order.phaseOf(0, static_cast<size_t>(index))) {
      case PipelinePhase::WarmUp:
        add(lines.forward, lane, primary);
        add(lines.forward_header, QStringLiteral("phase"), false);
        break;
      case PipelinePhase::Steady:
        add(forward ? lines.steady_forward : lines.backward, lane, primary);
        add(lines.steady_header, QStringLiteral("phase"), false);
        break;
      case PipelinePhase::CoolDown:
        add(lines.cool_backward, lane, primary);
        add(lines.cool_header, QStringLiteral("phase"), false);
        break;
    }
  };
  // Stage 0's last pass begun by t; the pass after it is the one it waits for.
  int last = -1;
  bool running = false;
  for (const PipelineBox& b : m_boxes.boxes()) {
    if (b.stage != 0 || b.begin_ns > t) continue;
    last = std::max(last, order.actionIndex(0, b.action));
    running = t <= b.end_ns;
  }
  if (pending) {
    if (*pending == EventKind::OptimizerStep) add(lines.flush, QStringLiteral("next, at the gate"), true);
    else addPass(last + 1, QStringLiteral("next, at the gate"), true);  // a stage stops only between passes
  } else if (running) {
    addPass(last, QStringLiteral("compute"), true);
  } else if (last + 1 < static_cast<int>(order.actions(0).size())) {
    addPass(last + 1, QStringLiteral("waiting: the bubble"), false);
  } else {
    add(lines.flush, QStringLiteral("flush"), true);
  }
  std::sort(out.begin(), out.end(), [](const LitLine& a, const LitLine& b) { return a.line < b.line; });
  return out;
}

}  // namespace shardscope
