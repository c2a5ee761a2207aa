#include "analysis/schedule_comparison.h"

#include <algorithm>

#include "common/errors.h"
#include "engine/run.h"
#include "parallel/pipeline_timing.h"

namespace shardscope {

ScheduleComparison compareSchedules(const RunConfig& config, double capacity_bytes) {
  if (config.pp < 2)
    throw ConfigError("--compare-schedules needs --pp 2 or more (the schedules order the passes of pipeline stages)");
  ScheduleComparison out;
  out.config = config;
  for (PipelineSchedule kind : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB, PipelineSchedule::Interleaved}) {
    ScheduleRow row;
    row.schedule = kind;
    RunConfig c = config;
    c.pp_schedule = kind;
    c.virtual_stages = kind == PipelineSchedule::Interleaved ? std::optional<int>(config.virtual_stages.value_or(2))
                                                              : std::nullopt;
    c.backend = Backend::Meta;
    c.clock = ClockKind::Modeled;
    c.steps = 1;
    c.trace_path.clear();
    c.summary_path.clear();
    row.virtual_stages = c.virtualStages();
    try {
      validate(c);
      row.plan = planParallelCapacity(c, capacity_bytes);
    } catch (const ConfigError& e) {
      row.refused = e.what();
      out.rows.push_back(std::move(row));
      continue;
    }
    const RunResult r = Run(c).execute();
    for (const StepMetrics& m : r.last_step) row.step_ms = std::max(row.step_ms, double(m.wall_ns) * 1e-6);
    row.bubble_measured = r.pipeline.bubble;
    row.bubble_formula = r.pipeline.formula_bubble;
    for (const StagePlan& planned : row.plan->stages) {
      ScheduleStageRow s;
      s.stage = planned.stage;
      s.rank = planned.rank;
      s.in_flight = planned.in_flight;
      s.activation_planned = planned.activation_bytes;
      s.peak_planned = planned.peakBytes();
      const LedgerSnapshot& ledger = r.ranks.at(static_cast<size_t>(s.rank)).ledger;
      s.activation_measured = ledger.peak[static_cast<size_t>(Category::Activation)];
      s.peak_measured = ledger.total_peak;
      if (!row.stages.empty() && s.peak_measured > row.stages[static_cast<size_t>(row.most_loaded)].peak_measured)
        row.most_loaded = s.stage;
      row.stages.push_back(s);
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace shardscope
