#include "walkthrough_model.h"

#include <algorithm>

#include "inspect/event_store.h"
#include "pipeline_walkthrough.h"

namespace shardscope {

Algorithm WalkthroughModel::algorithm(Strategy strategy) {
  Algorithm a;
  if (isHybrid(strategy)) {
    a.title = QStringLiteral("One HSDP step");
    a.source = QStringLiteral("FSDP's ten lines on a 2-D mesh: shard within a group, replicate across groups");
    a.lines = {QStringLiteral("forward, for each unit in order:"),
               QStringLiteral("all-gather this unit's parameter shards inside the shard group"),
               QStringLiteral("run the unit; save activations needed for backward"),
               QStringLiteral("free the gathered parameters immediately"),
               QStringLiteral("backward, for each unit in reverse:"),
               QStringLiteral("all-gather the parameters again inside the shard group (they were discarded)"),
               QStringLiteral("compute input and weight gradients"),
               QStringLiteral("reduce-scatter the weight gradients inside the group, then all-reduce the shard "
                              "across the replicas"),
               QStringLiteral("free the gathered parameters and the full gradient"),
               QStringLiteral("update: each rank steps the shard it owns (every replica the same); no further "
                              "communication")};
    a.headers = {0, 4};
    a.note = QStringLiteral("hsdp: memory falls with the shard group's size G (16/G bytes per parameter), and only "
                            "the cross-replica all-reduce crosses groups.");
    return a;
  }
  if (isSharded(strategy)) {
    a.title = QStringLiteral("One FSDP step");
    a.source = QStringLiteral("the ten lines of one FSDP step (ZeRO-3 organised around units)");
    a.lines = {QStringLiteral("forward, for each unit in order:"),
               QStringLiteral("all-gather this unit's parameter shards into a full set"),
               QStringLiteral("run the unit; save activations needed for backward"),
               QStringLiteral("free the gathered parameters immediately"),
               QStringLiteral("backward, for each unit in reverse:"),
               QStringLiteral("all-gather the parameters again (they were discarded)"),
               QStringLiteral("compute input and weight gradients"),
               QStringLiteral("reduce-scatter the weight gradients, so each rank keeps only its shard"),
               QStringLiteral("free the gathered parameters and the full gradient"),
               QStringLiteral("update: each rank steps only the shard it owns; no further communication")};
    a.headers = {0, 4};
    a.note = QStringLiteral("zero3 and fsdp are the same algorithm: ZeRO stage 3 is what PyTorch calls FSDP "
                            "(full sharding); both names run these lines.");
    return a;
  }
  if (strategy == Strategy::Zero1) {
    a.title = QStringLiteral("One ZeRO-1 step");
    a.source = QStringLiteral("written in the style of the FSDP step");
    a.lines = {QStringLiteral("forward, for each block in order:"),
               QStringLiteral("run the block with the full bf16 parameters; save activations"),
               QStringLiteral("backward, for each block in reverse:"),
               QStringLiteral("compute input and weight gradients into the full gradient buffer"),
               QStringLiteral("when a bucket's last gradient arrives, reduce-scatter it: each rank's owned shard "
                              "of the gradients becomes the sum"),
               QStringLiteral("keep the full gradients (ZeRO-1 shards only the optimizer state)"),
               QStringLiteral("wait for the last reduce-scatter"),
               QStringLiteral("update: each rank steps only its shard of the fp32 master weights and Adam moments"),
               QStringLiteral("all-gather the updated bf16 parameter shards into full parameters"),
               QStringLiteral("every rank holds identical full parameters for the next forward")};
    a.headers = {0, 2};
    a.note = QStringLiteral("zero1: 4 + 12/P bytes per parameter (full bf16 parameters and gradients, sharded "
                            "fp32 master and Adam moments); zero2 also shards the gradients: 2 + 14/P.");
    return a;
  }
  if (zeroStage(strategy) > 0) {  // zero2
    a.title = QStringLiteral("One ZeRO-2 step");
    a.source = QStringLiteral("written in the style of the FSDP step");
    a.lines = {QStringLiteral("forward, for each block in order:"),
               QStringLiteral("run the block with the full bf16 parameters; save activations"),
               QStringLiteral("backward, for each block in reverse:"),
               QStringLiteral("compute input and weight gradients into the gradient buckets"),
               QStringLiteral("when a bucket's last gradient arrives, reduce-scatter it: each rank keeps the summed "
                              "shard it owns"),
               QStringLiteral("free the bucket's full gradients; only the owned shard stays"),
               QStringLiteral("wait for the last reduce-scatter"),
               QStringLiteral("update: each rank steps only its shard of the fp32 master weights and Adam moments"),
               QStringLiteral("all-gather the updated bf16 parameter shards into full parameters"),
               QStringLiteral("every rank holds identical full parameters for the next forward")};
    a.headers = {0, 2};
    a.note = QStringLiteral("zero2: 2 + 14/P bytes per parameter (full bf16 parameters; gradients, fp32 master and "
                            "Adam moments sharded).");
    return a;
  }
  a.title = QStringLiteral("One DDP step");
  a.source = QStringLiteral("written in the style of the FSDP step");
  a.lines = {QStringLiteral("forward, for each block in order:"),
             QStringLiteral("run the block with the full, replicated parameters; save activations"),
             QStringLiteral("backward, for each block in reverse:"),
             QStringLiteral("compute input and weight gradients"),
             QStringLiteral("mark each gradient ready; a bucket is ready when its last gradient arrives"),
             QStringLiteral("all-reduce the ready bucket on the comm stream while backward continues"),
             QStringLiteral("wait for the last bucket's all-reduce: every rank now holds the mean gradient"),
             QStringLiteral("update: every rank steps the full optimizer state, identically; no communication")};
  a.headers = {0, 2};
  return a;
}

void WalkthroughModel::withTensorParallel(Algorithm& a, const RunConfig& c) {
  // The strategy's lines run along the data-parallel axis; inside each block
  // the TP group all-reduces activations (Megatron-LM), which the lines do not show.
  a.title += c.dataParallelSize() == 1 ? QStringLiteral(" on 1 data-parallel rank, a tensor-parallel group of %1").arg(c.tp)
                                       : QStringLiteral(" on %1 data-parallel ranks, each a tensor-parallel group of %2").arg(c.dataParallelSize()).arg(c.tp);
  const QString tp = QStringLiteral("Tensor parallelism (--tp %1): each block's matrices are split over the %1 ranks of a TP "
                                    "group, which all-reduce activations in every block's forward and input gradients in "
                                    "its backward, on the compute lane; the lines above are the data-parallel strategy's.")
                         .arg(c.tp);
  a.note = a.note.isEmpty() ? tp : a.note + QStringLiteral(" ") + tp;
}

WalkthroughModel::WalkthroughModel() = default;
WalkthroughModel::~WalkthroughModel() = default;

void WalkthroughModel::sync(const EventStore& store) {
  if (m_store != &store || m_generation != store.generation()) {
    m_store = &store;
    m_generation = store.generation();
    m_cursor = 0;
    m_compute.clear();
    m_gather.clear();
    m_reduce.clear();
    m_comm.clear();
    m_ready.clear();
    m_steps.clear();
  }
  // A trace of an unknown strategy walks through as ddp.
  const Strategy strategy = parseStrategy(store.meta().strategy).value_or(Strategy::Ddp);
  if (strategy != m_strategy || m_cursor == 0) {
    m_strategy = strategy;
    m_algorithm = algorithm(m_strategy);
    m_family = isSharded(m_strategy) ? Family::Fsdp : zeroStage(m_strategy) > 0 ? Family::Zero : Family::Ddp;
    if (const RunConfig* c = store.config(); c && c->tp > 1) withTensorParallel(m_algorithm, *c);
    m_pipeline.reset();
    if (const RunConfig* c = store.config(); c && c->pp > 1 && !store.meta().imported) {
      m_algorithm = PipelineWalkthrough::algorithm(*c);
      m_pipeline = std::make_unique<PipelineWalkthrough>();
    }
  }
  if (store.meta().imported) {
    // A profiler trace names kernels, not the algorithm's steps: nothing to light.
    m_algorithm = Algorithm{};
    m_algorithm.title = QStringLiteral("A PyTorch profiler job");
    m_algorithm.source = QStringLiteral("imported trace");
    m_algorithm.note = QStringLiteral("The walkthrough follows ShardScope's own runs, whose every op it knows. Read this "
                                      "job in the timeline (a row per GPU stream and CPU thread; H hides the threads), "
                                      "the memory view (allocated and reserved) and the communication view.");
    return;
  }
  if (store.rankCount() == 0) return;
  const std::vector<Event>& events = store.events(0);
  for (size_t i = m_cursor; i < events.size(); ++i) {
    const Event& e = events[i];
    const auto index = static_cast<int32_t>(i);
    switch (e.kind) {
      case EventKind::StepBegin:
        if (e.step >= 0) marksFor(e.step).begin = e.begin_ns;
        continue;
      case EventKind::StepEnd:
        if (e.step >= 0) marksFor(e.step).end = e.end_ns;
        continue;
      case EventKind::BucketReady: m_ready.push_back(index); continue;
      case EventKind::Loss:
        if (e.step >= 0) marksFor(e.step).loss = e.begin_ns;
        break;
      default: break;
    }
    if (isInstant(e.kind) || e.kind == EventKind::Broadcast) continue;
    switch (e.lane) {
      case Lane::Compute: m_compute.push_back(index); break;
      case Lane::Gather: m_gather.push_back(index); break;
      case Lane::Reduce: m_reduce.push_back(index); break;
      case Lane::Comm: m_comm.push_back(index); break;
      default: break;
    }
  }
  m_cursor = events.size();
}

WalkthroughModel::StepMarks& WalkthroughModel::marksFor(int32_t step) {
  // Steps arrive in order in a run: the search ends at the back.
  if (!m_steps.empty() && m_steps.back().step == step) return m_steps.back();
  auto it = m_steps.end();
  if (!m_steps.empty() && m_steps.back().step > step)
    it = std::lower_bound(m_steps.begin(), m_steps.end(), step, [](const StepMarks& s, int32_t v) { return s.step < v; });
  if (it != m_steps.end() && it->step == step) return *it;
  StepMarks marks;
  marks.step = step;
  return *m_steps.insert(it, marks);
}

const WalkthroughModel::StepMarks* WalkthroughModel::findMarks(int32_t step) const {
  const auto it =
      std::lower_bound(m_steps.begin(), m_steps.end(), step, [](const StepMarks& s, int32_t v) { return s.step < v; });
  return it != m_steps.end() && it->step == step ? &*it : nullptr;
}

int WalkthroughModel::stepAt(int64_t t) const {
  for (const StepMarks& s : m_steps)
    if (s.begin >= 0 && t >= s.begin && (s.end < 0 || t <= s.end)) return s.step;
  return -1;
}

const Event* WalkthroughModel::activeOn(const std::vector<int32_t>& lane, int64_t t) const {
  // The latest-starting op covering t; real work beats a wait.
  const Event* best = nullptr;
  const std::vector<Event>& events = m_store->events(0);
  for (int32_t i : lane) {
    const Event& e = events[static_cast<size_t>(i)];
    if (e.begin_ns > t || t >= e.end_ns) continue;
    const bool better = !best || (best->kind == EventKind::Wait && e.kind != EventKind::Wait) ||
                        ((best->kind == EventKind::Wait) == (e.kind == EventKind::Wait) && e.begin_ns >= best->begin_ns);
    if (better) best = &e;
  }
  return best;
}

const Event* WalkthroughModel::lastBefore(const std::vector<int32_t>& lane, int64_t t, int step) const {
  const Event* best = nullptr;
  const std::vector<Event>& events = m_store->events(0);
  for (int32_t i : lane) {
    const Event& e = events[static_cast<size_t>(i)];
    if (e.step != step || e.kind == EventKind::Wait || e.begin_ns > t) continue;
    if (!best || e.begin_ns >= best->begin_ns) best = &e;
  }
  return best;
}

const Event* WalkthroughModel::byOp(int32_t op) const {
  if (op < 0) return nullptr;
  const std::vector<Event>& events = m_store->events(0);
  for (const std::vector<int32_t>* lane : {&m_gather, &m_reduce, &m_comm, &m_compute})
    for (int32_t i : *lane)
      if (events[static_cast<size_t>(i)].op == op) return &events[static_cast<size_t>(i)];
  return nullptr;
}

bool WalkthroughModel::backwardPhase(const Event& e) const {
  const StepMarks* marks = e.step >= 0 ? findMarks(e.step) : nullptr;
  return marks && marks->loss >= 0 && e.begin_ns >= marks->loss;
}

std::vector<LitLine> WalkthroughModel::litAt(int64_t t, std::optional<EventKind> pending) const {
  std::vector<LitLine> out;
  if (!m_store || m_store->rankCount() == 0) return out;
  const int step = stepAt(t);
  if (step < 0) return out;
  if (m_pipeline) return m_pipeline->litAt(*m_store, step, t, pending);
  const auto add = [&](int line, const QString& lane, bool primary) {
    for (LitLine& l : out)
      if (l.line == line) {
        l.primary = l.primary || primary;
        return;
      }
    out.push_back({line, lane, primary});
  };
  const Event* compute = activeOn(m_compute, t);
  const Event* last = lastBefore(m_compute, t, step);
  // The phase: rank 0's last real compute op that began by now.
  enum class Phase { Forward, Backward, Update } phase = Phase::Forward;
  if (last) {
    if (last->kind == EventKind::Loss || last->kind == EventKind::Backward) phase = Phase::Backward;
    if (last->kind == EventKind::OptimizerStep) phase = Phase::Update;
  }
  // A stop before a free or a launch belongs to the phase around it: a free
  // after the loss is still forward's (the root's), a gather after it is backward's.
  const bool after_loss = last && (last->kind == EventKind::Loss || last->kind == EventKind::Backward);
  const bool in_backward = last && last->kind == EventKind::Backward;
  if (pending == EventKind::Backward || pending == EventKind::ReduceScatter) phase = Phase::Backward;
  if (pending == EventKind::OptimizerStep) phase = Phase::Update;
  if (pending == EventKind::Free) phase = in_backward ? Phase::Backward : Phase::Forward;
  if (pending == EventKind::AllGather)
    phase = m_family != Family::Fsdp ? Phase::Update : after_loss ? Phase::Backward : Phase::Forward;
  const QString kCompute = QStringLiteral("compute");
  const auto collectiveLine = [&](const Event& e) -> int {
    switch (m_family) {
      case Family::Fsdp:
        if (e.kind == EventKind::AllGather) return backwardPhase(e) ? 5 : 1;
        return 7;  // reduce-scatter, and HSDP's all-reduce across replicas
      case Family::Zero: return e.kind == EventKind::AllGather ? 8 : 4;
      case Family::Ddp: return 5;
    }
    return -1;
  };
  if (compute) {
    if (compute->kind == EventKind::Wait) {
      const Event* waited = byOp(compute->dep);
      int line = -1;
      if (waited && isCollective(waited->kind)) {
        line = m_family == Family::Fsdp ? collectiveLine(*waited) : 6;
      } else if (m_family != Family::Fsdp) {
        line = 6;  // the step's final wait on the comm stream
      }
      if (line >= 0) add(line, QStringLiteral("compute waits"), true);
    } else {
      int line = -1;
      switch (compute->kind) {
        case EventKind::Forward: line = m_family == Family::Fsdp ? 2 : 1; break;
        case EventKind::Loss:
        case EventKind::Backward: line = m_family == Family::Fsdp ? 6 : 3; break;
        case EventKind::OptimizerStep: line = m_family == Family::Fsdp ? 9 : 7; break;
        default: break;
      }
      if (line >= 0) add(line, kCompute, true);
    }
  } else if (pending) {
    // Stopped at the gate: the compute lane is about to run this op, free or launch.
    const bool fsdp = m_family == Family::Fsdp;
    int line = -1;
    switch (*pending) {
      case EventKind::Forward: line = fsdp ? 2 : 1; break;
      case EventKind::Backward: line = fsdp ? 6 : 3; break;
      case EventKind::OptimizerStep: line = fsdp ? 9 : 7; break;
      case EventKind::Free: line = fsdp ? (phase == Phase::Backward ? 8 : 3) : -1; break;
      case EventKind::AllGather:
        line = fsdp ? (phase == Phase::Backward ? 5 : 1) : m_family == Family::Zero ? 8 : -1;
        break;
      case EventKind::ReduceScatter: line = fsdp ? 7 : m_family == Family::Zero ? 4 : -1; break;
      default: break;
    }
    if (line >= 0) add(line, QStringLiteral("next, at the gate"), true);
  }
  const std::pair<const std::vector<int32_t>*, QString> lanes[] = {
      {&m_gather, QStringLiteral("gather stream")}, {&m_reduce, QStringLiteral("reduce stream")}, {&m_comm, QStringLiteral("comm stream")}};
  for (const auto& [lane, name] : lanes) {
    const Event* e = activeOn(*lane, t);
    if (!e || !isCollective(e->kind)) {
      if (e && e->kind == EventKind::Copy && m_family == Family::Ddp) add(5, name, !compute);
      continue;
    }
    add(collectiveLine(*e), name, !compute);
  }
  // Recent instants: a bucket that just became ready (DDP line 5, ZeRO line 5).
  const StepMarks* marks = findMarks(step);
  // Differences as unsigned: t is any time the cursor can reach, not only the trace's.
  const uint64_t span = marks && marks->end > marks->begin
                            ? static_cast<uint64_t>(marks->end) - static_cast<uint64_t>(marks->begin)
                            : 0;
  if (m_family != Family::Fsdp && span > 0) {
    for (int32_t i : m_ready) {
      const Event& e = m_store->events(0)[static_cast<size_t>(i)];
      if (e.begin_ns <= t && static_cast<uint64_t>(t) - static_cast<uint64_t>(e.begin_ns) <= span / 100)
        add(4, QStringLiteral("bucket ready"), false);
    }
  }
  if (out.empty()) {
    // Nothing running: the step is between ops.
    if (m_family == Family::Fsdp && last) {
      if (last->kind == EventKind::Forward) add(3, QStringLiteral("between ops"), true);
      else if (last->kind == EventKind::Backward || last->kind == EventKind::Loss) add(8, QStringLiteral("between ops"), true);
      else if (last->kind == EventKind::OptimizerStep) add(9, QStringLiteral("between ops"), true);
    } else if (m_family == Family::Zero && phase == Phase::Update) {
      add(9, QStringLiteral("step ends"), true);
    }
  }
  // Phase headers, lit lightly.
  if (phase != Phase::Update && m_algorithm.headers.size() >= 2) {
    const int header = m_algorithm.headers[phase == Phase::Forward ? 0 : 1];
    bool any_body = false;
    for (const LitLine& l : out) any_body = any_body || l.line != header;
    if (any_body || out.empty()) add(header, QStringLiteral("phase"), false);
  }
  std::sort(out.begin(), out.end(), [](const LitLine& a, const LitLine& b) { return a.line < b.line; });
  return out;
}

}  // namespace shardscope
