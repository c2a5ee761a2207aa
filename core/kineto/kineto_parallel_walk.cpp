#include "kineto/kineto_parallel_walk.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "kineto/kineto_file_walk.h"
#include "kineto/kineto_walk_merge.h"
#include "kineto/kineto_walk_tuning.h"
#include "kineto/kineto_window_cuts.h"
#include "kineto/kineto_window_stream.h"
#include "kineto/kineto_windowed_walk.h"

namespace shardscope::kineto {

namespace walk {

bool walkInParallel(const PaddedBuffer& json, RankTrace& out, unsigned parts) {
  bool bare = false;
  const size_t open = locateEvents(json.data.get(), json.size, &bare);
  if (open == kNpos) return false;
  const size_t span = json.size - open;
  std::vector<size_t> cuts;  // the ',' ending each part but the last
  for (unsigned k = 1; k < parts; ++k) {
    const size_t from = std::max(open + span / parts * k, cuts.empty() ? open : cuts.back() + 2 * kinetoChunkBytes());
    const size_t cut = findPartBoundary(json.data.get(), json.size, from, kinetoChunkBytes());
    if (cut == kNpos || json.size - cut < 2 * kinetoChunkBytes()) break;
    cuts.push_back(cut);
  }
  if (cuts.empty()) return false;
  ByteRestorer edits(json.data.get());
  for (size_t cut : cuts) {  // before any part starts: each part then edits only its own bytes
    edits.set(cut, ']');
    edits.set(cut + 1, '[');
  }
  std::vector<RankTrace> traces(cuts.size() + 1);
  std::vector<std::unique_ptr<WindowedWalk>> parsers;
  for (size_t k = 0; k < traces.size(); ++k) {
    traces[k].path = out.path;
    traces[k].json_bytes = out.json_bytes;
    traces[k].bare_array = bare;
    parsers.push_back(std::make_unique<WindowedWalk>(json, traces[k]));
    const size_t from = k == 0 ? kNpos : cuts[k - 1] + 1;
    const size_t to = k < cuts.size() ? cuts[k] : kNpos;
    parsers[k]->setPart(from, to, k == 0 ? 0 : (to == kNpos ? json.size : to) - from);
  }
  std::vector<char> ok(traces.size(), 0);
  std::vector<std::exception_ptr> errors(traces.size());
  const auto walkPartK = [&](size_t k) {
    try {
      ok[k] = parsers[k]->run() ? 1 : 0;
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < traces.size(); ++k) threads.emplace_back(walkPartK, k);
  walkPartK(0);
  for (std::thread& t : threads) t.join();
  edits.restoreAll();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);  // out of memory, say: not the document's fault
  if (std::find(ok.begin(), ok.end(), 0) != ok.end()) return false;
  if (sharesTopKeys(parsers.front()->records(), parsers.back()->records())) return false;
  for (size_t k = 1; k < traces.size(); ++k) absorbPart(parsers[0]->records(), traces[k]);
  out = std::move(traces[0]);
  out.json_parts = static_cast<uint32_t>(parsers.size());
  return true;
}

namespace {

// The streamed walk of a plain file on `parts` threads (readKinetoJsonParts).
bool walkFileInParts(const ReadAt& read_at, uint64_t size, unsigned parts, RankTrace& out) {
  const size_t window = kinetoChunkBytes();
  // Where the events start: in the first 64 KiB, else in the first windows
  // as the first part will read them (fresh memory costs: read no more than needed).
  constexpr size_t kBlock = 64 << 10;
  size_t open = kNpos;
  bool bare = false;
  for (const size_t head_bytes : {std::min<size_t>(kBlock, 4 * window), 4 * window}) {
    const PaddedBuffer head = readHead(read_at, head_bytes);
    open = locateEvents(head.data.get(), head.size, &bare);
    if (open != kNpos || head.size < head_bytes) break;
  }
  if (open == kNpos) return false;
  // The ',' ending each part but the last, found near an even split (an
  // event is a few hundred bytes: one within 64 KiB, or no more parts).
  std::vector<uint64_t> cuts;
  const auto block = std::make_unique_for_overwrite<char[]>(kBlock);
  for (unsigned k = 1; k < parts; ++k) {
    const uint64_t from = std::max<uint64_t>(open + (size - open) / parts * k, cuts.empty() ? open : cuts.back() + 2 * window);
    if (from >= size) break;
    const size_t n = read_at(block.get(), static_cast<size_t>(std::min<uint64_t>(kBlock, size - from)), from);
    const size_t at = eventBoundaryIn(block.get(), n);
    if (at == kNpos || size - (from + at) < 2 * window) break;
    cuts.push_back(from + at);
  }
  if (cuts.empty()) return false;
  const size_t n_parts = cuts.size() + 1;
  std::vector<RankTrace> traces(n_parts);
  std::vector<std::unique_ptr<PartStream>> streams;
  std::vector<ReadMore> reads;
  std::vector<PaddedBuffer> buffers(n_parts);
  std::vector<std::unique_ptr<WindowedWalk>> parsers;
  for (size_t k = 0; k < n_parts; ++k) {
    const uint64_t from = k == 0 ? 0 : cuts[k - 1] + 1;  // the first byte read from the file
    const uint64_t to = k < cuts.size() ? cuts[k] : size;
    streams.push_back(std::make_unique<PartStream>(read_at, from, to, k == 0 ? 0 : '[', k < cuts.size() ? ']' : 0));
    PartStream* stream = streams.back().get();
    reads.emplace_back([stream](char* at, size_t max) { return stream->read(at, max); });
    traces[k].path = out.path;
    traces[k].json_bytes = out.json_bytes;
    traces[k].bare_array = bare;
  }
  std::vector<char> ok(n_parts, 0);
  std::vector<std::exception_ptr> errors(n_parts);
  const auto walkPartK = [&](size_t k) {
    try {
      // Each thread fills its own buffer: its pages are touched by the core that walks them.
      buffers[k] = streamBuffer(reads[k], k == 0 ? 0 : kStreamSlack);
      WindowedWalk& parser = *parsers[k];
      parser.streamFrom(reads[k], buffers[k]);
      ok[k] = parser.run() ? 1 : 0;
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  for (size_t k = 0; k < n_parts; ++k) {
    parsers.push_back(std::make_unique<WindowedWalk>(buffers[k], traces[k]));
    const uint64_t to = k < cuts.size() ? cuts[k] : size;
    // The first part reserves for the whole file: the others are appended to it.
    parsers[k]->setStreamedPart(k == 0 ? kNpos : kStreamSlack, k == cuts.size(),
                                k == 0 ? 0 : cuts[k - 1], k == 0 ? 0 : static_cast<size_t>(to - cuts[k - 1]));
  }
  std::vector<std::thread> threads;
  for (size_t k = 1; k < n_parts; ++k) threads.emplace_back(walkPartK, k);
  walkPartK(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);  // out of memory, say: not the document's fault
  if (std::find(ok.begin(), ok.end(), 0) != ok.end()) return false;
  if (sharesTopKeys(parsers.front()->records(), parsers.back()->records())) return false;
  size_t total = 0;  // one reserve for all, should the first part's estimate fall short
  for (const RankTrace& t : traces) total += t.events.size();
  traces[0].events.reserve(total);
  for (size_t k = 1; k < n_parts; ++k) absorbPart(parsers[0]->records(), traces[k]);
  out = std::move(traces[0]);
  out.json_parts = static_cast<uint32_t>(n_parts);
  out.json_streamed = true;
  return true;
}

}  // namespace

}  // namespace walk

bool readKinetoJsonParts(const ReadAt& read, uint64_t size, unsigned parts, RankTrace& out) {
  return walk::walkFileInParts(read, size, parts, out);
}

}  // namespace shardscope::kineto
