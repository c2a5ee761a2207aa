// The simdjson On-Demand walk over a trace document. simdjson picks its
// On-Demand kernel at compile time, so the walk is built twice (AVX2 and
// portable) and readKinetoJson picks by the CPU; parseKinetoTrace wraps it.
#pragma once

#include "kineto/kineto_trace.h"
#include "kineto/trace_file.h"

namespace shardscope::kineto {

void readKinetoJson(const PaddedBuffer& json, RankTrace& out);
void readKinetoJsonAvx2(const PaddedBuffer& json, RankTrace& out);
void readKinetoJsonPortable(const PaddedBuffer& json, RankTrace& out);

}  // namespace shardscope::kineto
