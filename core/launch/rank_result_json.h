// A worker's RankResult as it travels to the collector: JSON, read back with
// every field checked (a malformed result is a WireError, as any bad message).
#pragma once

#include <cstdint>
#include <string>

#include "engine/run.h"

namespace shardscope {

std::string rankResultJson(const RankResult& result, int64_t padding_elements);
// Throws WireError naming the field.
RankResult parseRankResultJson(const std::string& text, int64_t* padding_elements);

}  // namespace shardscope
