// The step walkthrough's model: the algorithm of one training step as
// numbered lines (FSDP's ten from the FSDP reference text; HSDP's, ZeRO-1's,
// ZeRO-2's and DDP's in the same style) and which lines rank 0 is on at a time, read from what its compute,
// gather, reduce and comm lanes are doing then. Several lines can be lit at
// once: a prefetched gather runs while the previous unit computes. No widgets.
#pragma once

#include <QString>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/kinds.h"
#include "config/run_config.h"
#include "trace/event.h"

namespace shardscope {

class EventStore;

struct Algorithm {
  QString title;                // "One FSDP step"
  QString source;               // where the text comes from
  std::vector<QString> lines;   // numbered 1..n in the view
  std::vector<int> headers;     // loop lines (0-based) lit lightly for the phase
  QString note;                 // strategy-specific remark, may be empty
};

struct LitLine {
  int line = -1;      // 0-based
  QString lane;       // what puts rank 0 there: "compute", "gather stream", …
  bool primary = false;  // the compute lane's line (or, when it idles, the busiest)
};

class WalkthroughModel {
 public:
  WalkthroughModel();
  ~WalkthroughModel();
  // Each strategy's own lines: FSDP's for zero3/fsdp, HSDP's, ZeRO-1's, ZeRO-2's, DDP's.
  static Algorithm algorithm(Strategy strategy);
  // A run under --tp: the title and note say the lines are the data-parallel axis's.
  static void withTensorParallel(Algorithm& a, const RunConfig& c);

  void sync(const EventStore& store);
  const Algorithm& current() const { return m_algorithm; }
  // Lines rank 0 is on at t (ns since run start), phase headers included
  // (lane "phase"); empty outside every step. pending: the gate point rank 0
  // is stopped before at t (a compute op, a free or a launch), lit as the
  // line it is about to run.
  std::vector<LitLine> litAt(int64_t t, std::optional<EventKind> pending = std::nullopt) const;
  int stepAt(int64_t t) const;  // the step's number as recorded; -1 outside every step

 private:
  enum class Family { Ddp, Zero, Fsdp };
  // One entry per step seen (never indexed by the step number: a trace's one
  // step 20,000,000 is one entry), sorted by step.
  struct StepMarks {
    int32_t step = 0;
    int64_t begin = -1, end = -1;  // step_begin, step_end (-1: unseen)
    int64_t loss = -1;             // the loss op's begin (-1: none)
  };
  StepMarks& marksFor(int32_t step);
  const StepMarks* findMarks(int32_t step) const;
  const Event* activeOn(const std::vector<int32_t>& lane, int64_t t) const;
  const Event* lastBefore(const std::vector<int32_t>& lane, int64_t t, int step) const;
  const Event* byOp(int32_t op) const;
  bool backwardPhase(const Event& e) const;  // a gather for backward (at or after the step's loss)

  const EventStore* m_store = nullptr;
  uint64_t m_generation = ~0ull;
  // A pipelined run walks through its schedule's lines instead (pipeline_walkthrough.h).
  std::unique_ptr<class PipelineWalkthrough> m_pipeline;
  size_t m_cursor = 0;
  Family m_family = Family::Ddp;
  Strategy m_strategy = Strategy::Ddp;
  Algorithm m_algorithm = algorithm(Strategy::Ddp);
  // Indices into store.events(0), by lane; instants apart.
  std::vector<int32_t> m_compute, m_gather, m_reduce, m_comm, m_ready;
  std::vector<StepMarks> m_steps;
};

}  // namespace shardscope
