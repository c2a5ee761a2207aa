// `shardscope-cli validate`: published training runs through the modeled
// clock (analysis/validation.h), each prediction beside its published figure
// with the error, then the mean absolute error and the worst row; --local
// holds this machine's CPU ranks' measured clock against the this-cpu profile.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope {

// args: the flags after "validate". Exit codes: 0 ok, 2 a bad flag or table,
// 3 a run that failed, 4 --json could not be written.
int commandValidate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

std::string validateUsage();

}  // namespace shardscope
