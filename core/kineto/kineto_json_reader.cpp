// Which way a document is walked: on several threads when it is large, else
// in windows on one, else (a small document, or one the windows could not
// walk) whole, which also gives every error its position.
#include "kineto/kineto_json_reader.h"

#include <utility>

#include "kineto/kineto_field_walk.h"
#include "kineto/kineto_file_walk.h"
#include "kineto/kineto_parallel_walk.h"
#include "kineto/kineto_trace_builder.h"
#include "kineto/kineto_walk_tuning.h"
#include "kineto/kineto_window_stream.h"
#include "kineto/kineto_windowed_walk.h"

namespace shardscope::kineto {

namespace {

RankTrace emptyLike(const RankTrace& out) {
  RankTrace attempt;
  attempt.path = out.path;
  attempt.json_bytes = out.json_bytes;
  return attempt;
}

}  // namespace

void readKinetoJson(const PaddedBuffer& json, RankTrace& out) {
  const unsigned parts = kinetoWalkThreads();
  if (parts > 1 && json.size >= kinetoParallelBytes() && json.size >= 4 * kinetoChunkBytes()) {
    RankTrace attempt = emptyLike(out);
    if (walk::walkInParallel(json, attempt, parts)) {
      out = std::move(attempt);
      return;
    }
  }
  if (json.size >= 2 * kinetoChunkBytes()) {
    RankTrace attempt = emptyLike(out);
    if (walk::WindowedWalk(json, attempt).run()) {
      out = std::move(attempt);
      return;
    }
  }
  walk::TraceBuilder records(json, out);
  walk::makeFieldWalk(json, records)->whole();
}

bool readKinetoJsonStream(const ReadMore& read, RankTrace& out) {
  PaddedBuffer buffer = walk::streamBuffer(read, 0);
  RankTrace attempt = emptyLike(out);
  walk::WindowedWalk windows(buffer, attempt);
  windows.streamFrom(read, buffer);
  if (!windows.run()) return false;
  out = std::move(attempt);
  out.json_streamed = true;
  return true;
}

}  // namespace shardscope::kineto
