// `shardscope-cli profiles`: the hardware profiles a modeled timeline can use
// (resources/profiles/*.json and the measured this-cpu), with their key
// figures; `--calibrate` measures this machine again and rewrites its cache.
// A profile that fails validation is reported (exit 2), the others still listed.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope {

// args: the flags after "profiles". Exit codes: 0 ok, 2 a bad flag or profile.
int commandProfiles(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace shardscope
