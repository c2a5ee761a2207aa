// The windowed walk on several threads: the events cut into parts at event
// boundaries, each part walked by its own WindowedWalk into its own trace,
// then merged in file order into the first's (kineto_walk_merge.h). One home
// for both sources: a document in memory, and a plain file each thread
// reads its part of (readKinetoJsonParts, kineto_file_walk.h).
#pragma once

#include "kineto/kineto_trace.h"
#include "kineto/trace_file.h"

namespace shardscope::kineto::walk {

// False when the document does not split so (a part failed, no boundary):
// the caller walks it another way.
bool walkInParallel(const PaddedBuffer& json, RankTrace& out, unsigned parts);

}  // namespace shardscope::kineto::walk
