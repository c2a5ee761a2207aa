// Plain data describing a finished (or in-progress) run: what the trace sinks
// write and what the UI opens. events[r] holds rank r's events in record order,
// and every event in it has rank == r (sinks use the index, not the field).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/event.h"

namespace shardscope {

struct BucketInfo {
  int index = 0;
  int64_t bytes = 0;                // bucket buffer size
  std::vector<std::string> params;  // parameter names, in bucket order
};

struct UnitInfo {
  int index = 0;
  std::vector<int> blocks;  // model block indices wrapped by this FSDP unit
  int64_t params = 0;       // parameter count
};

struct RunTrace {
  std::string strategy;
  int ranks = 0;
  int64_t params = 0;       // total parameter count of the model
  std::string config_json;  // the run's config as a JSON object string, may be empty
  std::vector<std::string> param_names;
  std::vector<std::string> block_names;
  std::vector<BucketInfo> buckets;
  std::vector<UnitInfo> units;
  std::vector<std::vector<Event>> events;  // per rank, in record order
};

}  // namespace shardscope
