// The run summary: what a run measured (losses, per-rank ledger peaks, bytes
// sent, bucket firing order) next to what the ZeRO paper's formulas predict. Written
// as JSON for tools (key names are a contract, see the issues) and as the
// CLI's text report.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "analysis/formulas.h"
#include "engine/run.h"

namespace shardscope {

double modelStateBytesPerParam(const RankResult& rank, int64_t params);

// What the largest per_rank total_peak_bytes is called wherever it is shown
// (the compare readout, the Runs table, the CLI): the most-loaded rank's peak
// of every ledger category summed. The memory chart's peak is another
// quantity: one rank's peak of the categories it draws (MemorySeries::peakOf).
inline constexpr const char* kTotalPeakName = "peak, all categories (most-loaded rank)";
int64_t largestTotalPeak(const RunResult& r);  // bytes: max over ranks of ledger.total_peak

// Activation memory per transformer layer on rank 0, booked by the ledger,
// beside Korthikanti et al.'s formula adapted to the block
// (expectedActivationBytesPerLayer); with the last step's MFU and HFU (the
// hardware FLOPs count checkpointing's recompute). The CLI prints it and the
// memory views show it: one home for the lesson's numbers.
struct ActivationFigures {
  int64_t booked_per_layer = 0;  // bytes
  double formula_per_layer = 0;  // bytes
  int layers = 0;
  std::string attention;      // "flash", "naive"
  std::string checkpointing;  // "none", "selective", "full"
  double mfu = 0, hfu = 0;    // fractions; 0: no modeled clock
};
// None for a model without token blocks (the residual MLP) or a run without ranks.
std::optional<ActivationFigures> activationFigures(const RunResult& r);
// "activations per layer (rank 0, flash attention, checkpointing full): 32.00 MiB booked, Korthikanti et al. 32.00 MiB"
std::string activationFiguresText(const ActivationFigures& a);
void writeSummaryJson(const RunResult& result, std::ostream& out);
void writeSummaryFile(const RunResult& result, const std::string& path);  // throws RunError
void printSummaryText(const RunResult& result, std::ostream& out);
// The run's config as a JSON object (for traces and saved experiments).
std::string configJson(const RunConfig& config);

}  // namespace shardscope
