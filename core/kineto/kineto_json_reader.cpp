#include "kineto/kineto_json_reader.h"

#include <simdjson.h>

#include "kineto/kineto_parser.h"

namespace shardscope::kineto {

bool kinetoAvx2WalkUsed() {
#if defined(SHARDSCOPE_KINETO_AVX2)
  static const bool ok = [] {
    const auto* impl = simdjson::get_available_implementations()["haswell"];
    return impl != nullptr && impl->supported_by_runtime_system();
  }();
  return ok;
#else
  return false;
#endif
}

void readKinetoJson(const PaddedBuffer& json, RankTrace& out) {
#if defined(SHARDSCOPE_KINETO_AVX2)
  if (kinetoAvx2WalkUsed()) {
    readKinetoJsonAvx2(json, out);
    return;
  }
#endif
  readKinetoJsonPortable(json, out);
}

}  // namespace shardscope::kineto
