// The run config as JSON, as traces and summaries carry it: the settings
// table's JSON members in their order, then "args" (the flags that run it
// again) and "command" (the same as one shell line).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "config/run_config.h"

namespace shardscope {

nlohmann::ordered_json configToJson(const RunConfig& config);
// The compact text of configToJson (numbers as nlohmann prints them; the
// trace and summary writers print the tree with their own number format).
std::string configJsonText(const RunConfig& config);

// The config a trace or summary recorded: from its "args" when present (the
// exact flags), else from the typed members. Throws ConfigError naming the key.
RunConfig configFromJson(const nlohmann::ordered_json& json);

}  // namespace shardscope
