// Which build of the field walk runs: AVX2 where the CPU has it (CMake
// defines SHARDSCOPE_KINETO_AVX2 for this file when it builds that copy).
#include "kineto/kineto_field_walk.h"

#include <simdjson.h>

#include "kineto/kineto_parser.h"
#include "kineto/kineto_walk_tuning.h"

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

namespace walk {

std::unique_ptr<FieldWalk> makeFieldWalk(const PaddedBuffer& json, TraceBuilder& records) {
#if defined(SHARDSCOPE_KINETO_AVX2)
  if (kinetoAvx2WalkUsed() && !kinetoPortableWalk()) return kFieldWalkAvx2.make(json, records);
#endif
  return kFieldWalkPortable.make(json, records);
}

void releaseFieldWalkParsers() {
#if defined(SHARDSCOPE_KINETO_AVX2)
  kFieldWalkAvx2.release();
#endif
  kFieldWalkPortable.release();
}

}  // namespace walk

}  // namespace shardscope::kineto
