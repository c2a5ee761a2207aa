// Which of a preset's runs a figure draws (`shardscope --figure … --runs`):
// "all", one run "N" or several "N,M,…", numbered from 1 as the Runs table
// and "run 2 of 4" number them. Several runs mean compare mode. No Qt.
#pragma once

#include <stdexcept>
#include <string_view>
#include <vector>

namespace shardscope {

// A bad --runs value; the message names the flag and what is allowed.
class RunSelectionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The runs picked, as 0-based indices in the order given (no repeats).
// run_count: how many runs there are to pick from (>= 1). Throws RunSelectionError.
std::vector<int> parseRunSelection(std::string_view text, int run_count);

}  // namespace shardscope
