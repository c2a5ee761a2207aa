// `validate`'s engine: each published row run on the meta backend under its
// machine's profile, each published figure beside the prediction, and the
// error statistics over the rows ShardScope models. Rows whose features it
// lacks (pipelines, sequence or context parallelism) are reported, not run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/published_table.h"
#include "config/run_config.h"

namespace shardscope {

enum class Quantity { IterationSeconds, TflopsPerGpu, ParamOptGib, ActivationsGib };
std::string quantityName(Quantity q);  // the table's key: "iteration_s", "tflops_per_gpu", "param_opt", "activations"
std::string quantityUnit(Quantity q);  // "s", "TFLOP/s", "GiB"
bool isTimeQuantity(Quantity q);       // iteration_s and tflops_per_gpu (the modeled clock), else memory

// One published figure of one row.
struct ValidationCheck {
  const PublishedRow* row = nullptr;
  Quantity quantity = Quantity::IterationSeconds;
  double published = 0;
  std::optional<double> predicted;  // set when modeled
  std::string not_modeled;          // what ShardScope lacks for it ("" when modeled)
  double errorPercent() const { return predicted ? 100.0 * (*predicted - published) / published : 0.0; }
};

// What ShardScope lacks to run `row` ("" when nothing): the first of
// pipeline, sequence and context parallelism and gradient accumulation.
std::string rowNotModeled(const PublishedRow& row);

// The row as a meta run on the modeled clock. Every field of the row that
// maps onto a run setting is mapped here, and only here: wiring pipeline or
// sequence parallelism in is giving them their settings below and dropping
// them from rowNotModeled().
RunConfig validationRunConfig(const PublishedRow& row);

// Runs every modeled row once (rows must outlive the checks). Throws
// ConfigError naming the row when its run is refused (an unknown machine).
std::vector<ValidationCheck> validateRows(const std::vector<PublishedRow>& rows);

struct ValidationStats {
  int checks = 0, modeled = 0;
  int time_modeled = 0, memory_modeled = 0;
  double time_mean_abs_error = 0, memory_mean_abs_error = 0;  // percent
  const ValidationCheck* worst_time = nullptr;    // largest |error| among modeled time checks
  const ValidationCheck* worst_memory = nullptr;
};
ValidationStats validationStats(const std::vector<ValidationCheck>& checks);

}  // namespace shardscope
