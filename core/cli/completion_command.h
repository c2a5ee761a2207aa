// `shardscope-cli completion bash` (hidden; the package's build runs it): a
// bash completion script whose run flags and their choices come from the
// settings table, so a new setting row completes without editing a script.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope {

// The script, for bash's `complete -F`.
std::string bashCompletion();

// args: the words after "completion" ("bash"). Exit codes: 0 ok, 2 anything else.
int commandCompletion(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace shardscope
