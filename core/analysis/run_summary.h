// The run summary: what a run measured (losses, per-rank ledger peaks, bytes
// sent, bucket firing order) next to what the ZeRO paper's formulas predict. Written
// as JSON for tools (key names are a contract, see the issues) and as the
// CLI's text report.
#pragma once

#include <iosfwd>
#include <string>

#include "engine/run.h"

namespace shardscope {

double modelStateBytesPerParam(const RankResult& rank, int64_t params);
// The formulas' predictions for this run's strategy, ranks and shard group.
// Under tensor parallelism (--tp T): the strategy's figure on the P/T
// data-parallel ranks, divided by T (zero3: 16/(T·P_dp)); the traffic of the
// data-parallel axis for `params` = one TP slice's parameters.
double expectedBytesPerParam(const RunConfig& config);
CommBytes expectedComm(const RunConfig& config, int64_t params);
// Tensor parallelism: the formula's activation all-reduce bytes per layer per
// forward (as much in backward) for this run (0 without --tp).
double expectedTpBytesPerLayer(const RunConfig& config);
// gpt and published shapes: Korthikanti et al.'s activation bytes per layer
// for this run's block, attention and checkpointing (analysis/formulas.h).
double expectedActivationBytesPerLayer(const RunConfig& config);
// The runs whose blocks see sequences of tokens (gpt, published shapes).
bool hasTokenBlocks(const RunConfig& config);

void writeSummaryJson(const RunResult& result, std::ostream& out);
void writeSummaryFile(const RunResult& result, const std::string& path);  // throws RunError
void printSummaryText(const RunResult& result, std::ostream& out);
// The run's config as a JSON object (for traces and saved experiments).
std::string configJson(const RunConfig& config);

}  // namespace shardscope
