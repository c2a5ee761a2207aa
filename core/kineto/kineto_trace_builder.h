// The records of a trace as a walk meets its events: one event's field texts
// (as the field walk found them) become a TraceEvent with interned names, its
// track and category, and the side tables for the args the analyses use.
// Built once for any CPU: only the field walk depends on simdjson's kernel
// (kineto_field_walk.inc), so this code is not compiled twice.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kineto/kineto_trace.h"
#include "kineto/kineto_walk_errors.h"
#include "kineto/trace_file.h"

namespace shardscope::kineto::walk {

// The args the analyses use, as text; views into the document or the
// parser's string buffer, both alive until the document is done.
struct Args {
  std::string_view stream, correlation;
  std::string_view collective_name, in_nelems, out_nelems, dtype, group_size, pg_name, pg_ranks;
  std::string_view input_dims, input_types;  // raw JSON arrays: older traces' only sizes
  std::string_view device_type, device_id, addr, bytes, total_allocated, total_reserved;
  std::string_view name, labels;  // metadata events
  std::string_view seq;           // "Seq": a collective's sequence number in its process group
  std::string_view wait_on_stream, wait_on_record;  // cuda_sync: what the wait was for (SyncArgs)

  // The slots an event set, so the next event clears those, not all 22
  // (zeroing 300 bytes per event showed in profiles). A set slot never has a
  // null pointer, so each is listed once however often its key repeats.
  // Always inlined: the field walk's two builds (AVX2 and portable) call
  // these, and an out-of-line copy the linker picks from the AVX2 build
  // must never run on a CPU without AVX2.
  static constexpr size_t kSlots = 22;
  std::array<std::string_view*, kSlots> written{};
  size_t n_written = 0;
  [[gnu::always_inline]] void put(std::string_view* slot, std::string_view text) {
    if (slot->data() == nullptr) written[n_written++] = slot;
    *slot = text.data() ? text : std::string_view("", 0);
  }
  [[gnu::always_inline]] void clear() {
    for (size_t i = 0; i < n_written; ++i) *written[i] = {};
    n_written = 0;
  }
};

static_assert(offsetof(Args, written) == Args::kSlots * sizeof(std::string_view), "Args::kSlots counts its text slots");

// One event's fields as written (null data: the field is absent).
struct EventFields {
  std::string_view ts, dur, name, cat, ph, pid, tid, id;
};

class TraceBuilder {
 public:
  TraceBuilder(const PaddedBuffer& json, RankTrace& out) : json_(json), out_(out), errors_(json, out.path) {}
  TraceBuilder(const TraceBuilder&) = delete;
  TraceBuilder& operator=(const TraceBuilder&) = delete;

  RankTrace& trace() { return out_; }
  const RankTrace& trace() const { return out_; }
  WalkErrors& errors() { return errors_; }

  // The event's record from its fields (e has its flags so far); a metadata
  // event (ph M) names a process or thread instead. args: null when the
  // event has none.
  void finishEvent(TraceEvent& e, const EventFields& f, const Args* args);

  // The records reserved for the events of the bytes this walk reads (once).
  void reserveEvents();
  // After the first window, the reserve from this trace's own bytes per event.
  void fitReserveTo(size_t window_bytes);
  // A part of a parallel walk: the events' share of the document it reads.
  void setReserveBytes(uint64_t bytes) { reserve_bytes_ = bytes; }

  // The track of a (pid, tid) pair and the index of a category (string ids),
  // added at first sight: a part's merge (kineto_walk_merge.h) uses them too.
  uint32_t trackOf(uint32_t pid, uint32_t tid);
  uint16_t categoryOf(uint32_t cat_id);

  // The document's byte offset of the buffer's first byte (a stream's
  // buffer moves along the file): the offset a big integer is reported at.
  uint64_t window_offset = 0;
  // distributedInfo (1) and baseTimeNanoseconds (2) seen: a windowed walk reads
  // the keys before and after the events in two documents.
  unsigned top_keys = 0;

 private:
  int64_t intArg(std::string_view text, std::string_view field, int64_t fallback);
  void keepBig(std::string_view field, std::string_view text);
  EventKind kindOfCat(uint32_t cat);
  uint32_t internCached(std::string_view s);
  uint64_t spanBytes() const;
  void readMetadata(uint32_t name_id, uint32_t pid, uint32_t tid, const Args* args);
  void checkMemoryBytes(const Args& args, const MemorySample& m, bool sample);

  static constexpr uint8_t kUnknownKind = 0xff;
  static constexpr uint16_t kNoCategory = 0xffff;
  const PaddedBuffer& json_;
  RankTrace& out_;
  WalkErrors errors_;
  bool reserved_ = false;
  uint64_t reserve_bytes_ = 0;  // the events' share of the document it reads, when a part
  std::unordered_map<uint64_t, uint32_t> track_index_;
  uint64_t last_track_key_ = 0;
  uint32_t last_track_ = kNone;
  std::vector<uint16_t> cat_index_;
  std::vector<uint8_t> cat_kinds_;
  struct RecentString {
    std::string_view text;
    uint32_t id = kNone;
  };
  static constexpr size_t kInternCacheSlots = 509;  // prime: the index's sum spreads over every slot
  std::array<RecentString, kInternCacheSlots> recent_{};
};

}  // namespace shardscope::kineto::walk
