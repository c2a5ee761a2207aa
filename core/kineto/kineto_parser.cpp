#include "kineto/kineto_parser.h"

#include <algorithm>

#include "common/errors.h"
#include "kineto/kineto_file_walk.h"
#include "kineto/kineto_json_reader.h"
#include "kineto/kineto_walk_tuning.h"

namespace shardscope::kineto {

std::string describeOffset(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "byte " + std::to_string(offset) + " (line " + std::to_string(line) + ", column " + std::to_string(col) + ")";
}

namespace {

// What every walk's result gets before use.
RankTrace finished(RankTrace out) {
  // Memory instants come from several threads: order them by time, ties kept in file order.
  const auto byTime = [&out](const MemorySample& a, const MemorySample& b) { return out.tsOf(a) < out.tsOf(b); };
  // Usually in order already: then a stable sort would only copy them about.
  if (!std::is_sorted(out.memory.begin(), out.memory.end(), byTime))
    std::stable_sort(out.memory.begin(), out.memory.end(), byTime);
  for (uint32_t i = 0; i < out.memory.size(); ++i) out.events[out.memory[i].event].extra = i;
  std::stable_sort(out.out_of_memory.begin(), out.out_of_memory.end(), byTime);
  for (uint32_t i = 0; i < out.out_of_memory.size(); ++i) out.events[out.out_of_memory[i].event].extra = i;
  // A few percent of slack stays (the walk fits its reserve to the trace
  // from its first window, 3% over): shrinking copies every record into fresh
  // memory, so only a reserve more than 1/8 too large is given back.
  if (out.events.capacity() - out.events.size() > out.events.size() / 8) out.events.shrink_to_fit();
  out.memory.shrink_to_fit();
  out.out_of_memory.shrink_to_fit();
  out.collective_args.shrink_to_fit();
  out.sync_args.shrink_to_fit();
  return out;
}

}  // namespace

RankTrace parseKinetoTrace(const PaddedBuffer& json, const std::string& path) {
  RankTrace out;
  out.path = path;
  out.json_bytes = json.size;
  readKinetoJson(json, out);
  return finished(std::move(out));
}

RankTrace loadKinetoFile(const std::string& path, uint64_t max_bytes, PaddedBuffer* reuse) {
  {
    TraceFileReader file(path, max_bytes);
    // Streamed: no copy of the file is held. A large one on every core, a
    // part of the file each, read with pread through its own buffer of a few
    // windows (reading it whole into fresh memory to walk it on two cores
    // measured no faster than one streamed thread: its page faults cost what
    // the second core saved); else, or when the parts did not walk, on one thread.
    if (!file.gzip() && file.size() >= 4 * kinetoChunkBytes()) {
      const unsigned parts = kinetoWalkThreads();
      if (parts > 1 && file.size() >= kinetoParallelBytes()) {
        RankTrace out;
        out.path = path;
        out.json_bytes = file.size();
        const ReadAt read_at = [&file](char* to, size_t max, uint64_t offset) { return file.readAt(to, max, offset); };
        if (readKinetoJsonParts(read_at, file.size(), parts, out)) return finished(std::move(out));
      }
      RankTrace out;
      out.path = path;
      out.json_bytes = file.size();
      if (readKinetoJsonStream([&file](char* to, size_t max) { return file.read(to, max); }, out))
        return finished(std::move(out));
    }
  }
  // A .gz (walked on every core), a small file, or one the stream could
  // not walk (its error is the whole walk's to tell).
  PaddedBuffer json = readTraceFile(path, max_bytes, GzipInflater::Fastest, reuse ? std::move(*reuse) : PaddedBuffer{});
  RankTrace out = parseKinetoTrace(json, path);
  if (reuse) *reuse = std::move(json);
  return out;
}

size_t RankTrace::memoryBytes() const {
  return strings.memoryBytes() + events.capacity() * sizeof(TraceEvent) + tracks.capacity() * sizeof(Track) +
         categories.capacity() * sizeof(uint32_t) +
         collective_args.capacity() * sizeof(CollectiveArgs) + sync_args.capacity() * sizeof(SyncArgs) +
         (memory.capacity() + out_of_memory.capacity()) * sizeof(MemorySample) +
         big_integers.capacity() * sizeof(BigInteger) +
         (process_names.size() + thread_names.size() + process_labels.size()) * 64;
}

}  // namespace shardscope::kineto
