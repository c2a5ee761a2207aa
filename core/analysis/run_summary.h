// The run summary: what a run measured (losses, per-rank ledger peaks, bytes
// sent, bucket firing order) next to what the ZeRO paper's formulas predict. Written
// as JSON for tools (key names are a contract, see the issues) and as the
// CLI's text report.
#pragma once

#include <iosfwd>
#include <string>

#include "analysis/formulas.h"
#include "engine/run.h"

namespace shardscope {

double modelStateBytesPerParam(const RankResult& rank, int64_t params);
void writeSummaryJson(const RunResult& result, std::ostream& out);
void writeSummaryFile(const RunResult& result, const std::string& path);  // throws RunError
void printSummaryText(const RunResult& result, std::ostream& out);
// The run's config as a JSON object (for traces and saved experiments).
std::string configJson(const RunConfig& config);

}  // namespace shardscope
