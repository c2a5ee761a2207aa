// Element sizes of PyTorch dtype names as profiler traces write them
// ("Float", "BFloat16", "c10::Half", "long int").
#pragma once

#include <string_view>

namespace shardscope::kineto {

// Bytes per element; -1 for a name it does not know.
int dtypeBytes(std::string_view dtype);

}  // namespace shardscope::kineto
