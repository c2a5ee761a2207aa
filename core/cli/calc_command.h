// `shardscope-cli calc`: per-rank model-state memory of each sharding stage for
// a parameter count or a model preset, which stage fits a capacity, and from
// how many ranks zero3 fits. Pure arithmetic: runs nothing, touches no files.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "analysis/capacity.h"
#include "model/layer_fit.h"

namespace shardscope {

struct ModelPreset;

// What calc is asked: a parameter count or a model preset, and the ranks.
struct CalcRequest {
  std::optional<int64_t> params;  // N (exclusive with model)
  std::string model;              // a model preset's name, "" for none
  std::optional<int> ranks;       // P; none: answer the smallest P for zero3 and show the stages there
  double capacity_gb = 80;        // per rank, 1 GB = 1e9 bytes
  int shard_group = 0;            // G for an hsdp row; 0 = none
  int tp = 1;                     // tensor-parallel ranks T (T divides P)
};

// calc's answer: the stages at the P it was asked (or found), and the text the
// CLI prints. The CLI and the GUI's Capacity page both show this.
struct CalcAnswer {
  CapacityReport report;         // stages at report.input.ranks data-parallel ranks
  const ModelPreset* model = nullptr;
  bool ranks_given = false;
  bool zero3_never = false;      // no ranks given and zero3 fits on no P up to the limit
  LayerFit layer;                // one block on the rank that computes it (fits: always for a bare --params)
  std::string text;              // the CLI's table and answer lines
  std::string json;              // the CLI's --json object
};

// calc's flags as the CLI takes them (without --json/--help) into a request;
// throws ConfigError naming the flag and what it allows.
CalcRequest parseCalcRequest(const std::vector<std::string>& args);

// Validates the request (one ConfigError naming the flag) and answers it.
CalcAnswer answerCalc(const CalcRequest& request);

// args: the flags after "calc". Exit codes: 0 ok, 2 bad input (one line on err).
int commandCalc(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

std::string calcUsage();

}  // namespace shardscope
