#include "analysis/validation.h"

#include <algorithm>
#include <cmath>

#include "analysis/formulas.h"
#include "common/errors.h"
#include "common/units.h"
#include "engine/run.h"

namespace shardscope {

std::string quantityName(Quantity q) {
  switch (q) {
    case Quantity::IterationSeconds: return "iteration_s";
    case Quantity::TflopsPerGpu: return "tflops_per_gpu";
    case Quantity::ParamOptGib: return "param_opt";
    case Quantity::ActivationsGib: return "activations";
  }
  return "";
}

std::string quantityUnit(Quantity q) {
  switch (q) {
    case Quantity::IterationSeconds: return "s";
    case Quantity::TflopsPerGpu: return "TFLOP/s";
    default: return "GiB";
  }
}

bool isTimeQuantity(Quantity q) { return q == Quantity::IterationSeconds || q == Quantity::TflopsPerGpu; }

std::string rowNotModeled(const PublishedRow& row) {
  const PublishedRow::Parallel& p = row.parallel;
  if (p.cp > 1) return "context parallelism";
  return "";
}

RunConfig validationRunConfig(const PublishedRow& row) {
  RunConfig c;
  c.backend = Backend::Meta;
  c.clock = ClockKind::Modeled;
  c.profile = row.machine;
  c.steps = 1;  // a meta step has no warm-up: the first is the steady one (the same figures as a second)
  // Layout: Megatron-LM's mesh (TP innermost, then DP, stages outermost);
  // each DP rank's share of the global batch in microbatches of the row's
  // size (gradient accumulation without stages), through the row's schedule.
  const PublishedRow::Parallel& p = row.parallel;
  c.ranks = p.gpus;
  c.tp = p.tp;
  c.pp = p.pp;
  c.strategy = p.data_parallel;
  c.microbatches = std::max(1, row.global_batch / std::max(1, row.micro_batch * p.dp));
  if (p.pp > 1 && !p.schedule.empty()) c.pp_schedule = parsePipelineSchedule(p.schedule);
  if (c.pp_schedule == PipelineSchedule::Interleaved) c.virtual_stages = p.virtual_stages;
  // Shape: the row's table; fp16 is priced and booked as bf16 (same bytes).
  c.model = transformerShape(row.model);
  c.model.attention = row.attention;
  c.model.dropout = row.dropout;
  c.model.checkpointing = row.recompute;
  c.model.sequence_parallel = p.sp;
  c.batch = row.global_batch;
  if (row.fp32_grads) c.grad_dtype = CommDType::Fp32;  // Megatron-LM's main_grad
  return c;
}

namespace {

double iterationFlops(const PublishedRow& row, const RunResult& result) {
  if (row.published.flops == PublishedFlops::Megatron)
    return megatronIterationFlops(result.config.model, row.global_batch, row.recompute == Checkpointing::Full);
  return sixNIterationFlops(result.config.model, result.params, row.global_batch);
}

double predictedFigure(Quantity q, const PublishedRow& row, const RunResult& result) {
  int64_t wall_ns = 0, model_state = 0, activations = 0;
  for (const StepMetrics& m : result.last_step) wall_ns = std::max(wall_ns, m.wall_ns);
  const RunConfig& c = result.config;
  for (const RankResult& r : result.ranks) {
    const int stage = c.stageOf(r.rank);
    const bool interior = stage > 0 && stage < c.pp - 1;
    if (!row.published.param_opt_interior || interior) model_state = std::max(model_state, r.ledger.model_state_peak);
    activations = std::max(activations, r.ledger.peak[static_cast<size_t>(Category::Activation)]);
  }
  const double seconds = nsToSeconds(wall_ns);
  switch (q) {
    case Quantity::IterationSeconds: return seconds;
    case Quantity::TflopsPerGpu: return iterationFlops(row, result) / (seconds * row.parallel.gpus) / kFlopPerTflop;
    case Quantity::ParamOptGib: return toGiB(model_state);
    case Quantity::ActivationsGib: return toGiB(activations);
  }
  return 0;
}

}  // namespace

std::vector<ValidationCheck> validateRows(const std::vector<PublishedRow>& rows) {
  std::vector<ValidationCheck> checks;
  for (const PublishedRow& row : rows) {
    const PublishedRow::Published& pub = row.published;
    std::vector<ValidationCheck> mine;
    const auto add = [&](Quantity q, const std::optional<double>& figure) {
      if (figure) mine.push_back({&row, q, *figure, std::nullopt, rowNotModeled(row)});
    };
    add(Quantity::IterationSeconds, pub.iteration_s);
    add(Quantity::TflopsPerGpu, pub.tflops_per_gpu);
    add(Quantity::ParamOptGib, pub.param_opt_gib);
    add(Quantity::ActivationsGib, pub.activations_gib);
    const bool run = std::any_of(mine.begin(), mine.end(), [](const ValidationCheck& c) { return c.not_modeled.empty(); });
    if (run) {
      RunResult result;
      try {
        Run meta(validationRunConfig(row));
        result = meta.execute();
      } catch (const ConfigError& e) {
        throw ConfigError("row '" + row.name + "': " + e.what());
      }
      for (ValidationCheck& c : mine)
        if (c.not_modeled.empty()) c.predicted = predictedFigure(c.quantity, row, result);
    }
    checks.insert(checks.end(), mine.begin(), mine.end());
  }
  return checks;
}

ValidationStats validationStats(const std::vector<ValidationCheck>& checks) {
  ValidationStats s;
  s.checks = static_cast<int>(checks.size());
  double time_sum = 0, memory_sum = 0;
  for (const ValidationCheck& c : checks) {
    if (!c.predicted) continue;
    ++s.modeled;
    const double e = std::fabs(c.errorPercent());
    const bool time = isTimeQuantity(c.quantity);
    (time ? time_sum : memory_sum) += e;
    ++(time ? s.time_modeled : s.memory_modeled);
    const ValidationCheck*& worst = time ? s.worst_time : s.worst_memory;
    if (!worst || e > std::fabs(worst->errorPercent())) worst = &c;
  }
  if (s.time_modeled) s.time_mean_abs_error = time_sum / s.time_modeled;
  if (s.memory_modeled) s.memory_mean_abs_error = memory_sum / s.memory_modeled;
  return s;
}

}  // namespace shardscope
