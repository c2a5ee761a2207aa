// Writes a JSON tree (the run config) through the streaming JsonWriter, so a
// tree's numbers print as every other number in a trace or summary does
// (25.0 as "25").
#pragma once

#include <nlohmann/json.hpp>

#include "trace/json_writer.h"

namespace shardscope {

void writeJson(JsonWriter& w, const nlohmann::ordered_json& value);

}  // namespace shardscope
