// `shardscope-cli calc`: per-rank model-state memory of each sharding stage for
// a parameter count or a model preset, which stage fits a capacity, and from
// how many ranks zero3 fits. Pure arithmetic: runs nothing, touches no files.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope {

// args: the flags after "calc". Exit codes: 0 ok, 2 bad input (one line on err).
int commandCalc(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

std::string calcUsage();

}  // namespace shardscope
