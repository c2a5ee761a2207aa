// The walks of a plain trace file that never hold it whole, for
// loadKinetoFile (kineto_parser.h): streamed through one buffer of a few
// windows, on one thread or on several (a part of the file each). Internal
// to core/kineto: readKinetoJson (kineto_json_reader.h) is the reader's face.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "kineto/kineto_trace.h"

namespace shardscope::kineto {

// Appends up to `max` more bytes of a document at `to`; 0 at its end.
using ReadMore = std::function<size_t(char* to, size_t max)>;
// The walk of a document read in pieces through one buffer of a few windows
// (kinetoChunkBytes), so a large file never sits in memory whole. out.path
// and out.json_bytes are set by the caller. False when the document did not
// walk in windows (any error included): the caller then reads it whole and
// walks that, for the same result or the error with its line and column.
bool readKinetoJsonStream(const ReadMore& read, RankTrace& out);

// Reads up to `max` bytes of a document at `offset` (fewer only at its end);
// called from several threads at once.
using ReadAt = std::function<size_t(char* to, size_t max, uint64_t offset)>;
// The streamed walk on `parts` threads, for a plain file: its events are cut
// into parts at event boundaries, each thread reads its part through its own
// buffer of a few windows (never the whole file) and walks it with its own
// parser, and the parts are merged in file order into the single walk's
// result (ids included). out.path and out.json_bytes are set by the caller.
// False when the document does not split so or a part did not walk (any
// error included): the caller then reads it another way, for the same
// result or the error with its line and column.
bool readKinetoJsonParts(const ReadAt& read, uint64_t size, unsigned parts, RankTrace& out);

}  // namespace shardscope::kineto
