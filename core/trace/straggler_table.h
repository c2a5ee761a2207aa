// What the straggler view draws for an imported multi-rank job: per collective
// matched across ranks, each rank's wait (the last arrival's start minus its
// own) and the last to arrive. Plain data filled by core/kineto's
// collective_skew, so a trace can carry it without the trace layer knowing Kineto.
#pragma once

#include <string>
#include <vector>

namespace shardscope {

struct StragglerTable {
  std::vector<int> ranks;                    // rows, ascending
  std::vector<std::string> labels;           // per collective, by first arrival: "all_reduce #0 · pg 0 · 4.00 MiB"
  std::vector<int> last_rank;                // per collective: the last to arrive, -1 when all started together
  std::vector<std::vector<double>> wait_us;  // [collective][row]; NaN where that rank took no part
  std::vector<std::string> summary;          // what analyze's straggler section says, a line each
  bool empty() const { return labels.empty(); }
};

}  // namespace shardscope
