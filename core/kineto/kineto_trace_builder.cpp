#include "kineto/kineto_trace_builder.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/errors.h"
#include "common/huge_pages.h"
#include "kineto/decimal_text.h"
#include "kineto/trace_index.h"

namespace shardscope::kineto::walk {

namespace {

// Equal to a literal: the length is a constant, so the compare is a load or
// two, not a call to memcmp (string_view's == calls it at every key).
template <size_t N>
bool sameText(std::string_view s, const char (&literal)[N]) {
  return s.size() == N - 1 && std::memcmp(s.data(), literal, N - 1) == 0;
}

}  // namespace

// An integer argument; beyond int64 it is kept as text, never an error.
int64_t TraceBuilder::intArg(std::string_view text, std::string_view field, int64_t fallback) {
  if (text.empty()) return fallback;
  const DecimalValue d = parseDecimal(text, 0);
  if (d.status == DecimalStatus::Ok) return d.value;
  if (d.status == DecimalStatus::OutOfRange) keepBig(field, text);
  return fallback;
}

void TraceBuilder::keepBig(std::string_view field, std::string_view text) {
  const char* base = json_.data.get();
  const bool inside = text.data() >= base && text.data() < base + json_.size;
  out_.big_integers.push_back({out_.strings.intern(field), out_.strings.intern(text),
                               inside ? window_offset + uint64_t(text.data() - base) : 0});
}

EventKind TraceBuilder::kindOfCat(uint32_t cat) {
  if (cat < cat_kinds_.size() && cat_kinds_[cat] != kUnknownKind) return static_cast<EventKind>(cat_kinds_[cat]);
  const std::string_view c = out_.strings.view(cat);
  EventKind k = EventKind::Other;
  if (c == "kernel" || c == "Kernel") k = EventKind::Kernel;
  else if (c == "gpu_memcpy" || c == "Memcpy") k = EventKind::GpuMemcpy;
  else if (c == "gpu_memset" || c == "Memset") k = EventKind::GpuMemset;
  else if (c == "gpu_user_annotation") k = EventKind::GpuUserAnnotation;
  else if (c == "cuda_sync") k = EventKind::CudaSync;
  else if (c == "cpu_op" || c == "Operator") k = EventKind::CpuOp;
  else if (c == "user_annotation") k = EventKind::UserAnnotation;
  else if (c == "cuda_runtime" || c == "Runtime") k = EventKind::CudaRuntime;
  else if (c == "cuda_driver") k = EventKind::CudaDriver;
  else if (c == "python_function") k = EventKind::PythonFunction;
  else if (c == "ac2g" || c == "async_cpu_to_gpu") k = EventKind::Flow;
  else if (c == "Trace") k = EventKind::ProfilerTrace;
  if (cat >= cat_kinds_.size()) cat_kinds_.resize(cat + 1, kUnknownKind);
  cat_kinds_[cat] = static_cast<uint8_t>(k);
  return k;
}

// Names, categories, pids and tids repeat from a few hundred distinct
// strings: a direct-mapped cache of recent ones, indexed by the length and
// three bytes, answers most without hashing the whole string (kernel names
// run past 100 bytes) or walking a hash bucket; a miss asks the table.
uint32_t TraceBuilder::internCached(std::string_view s) {
  const size_t n = s.size();
  const unsigned char* b = reinterpret_cast<const unsigned char*>(s.data());
  const size_t slot = n == 0 ? 0 : (n * 31 + b[0] * 7 + b[n / 2] * 13 + b[n - 1]) % kInternCacheSlots;
  RecentString& r = recent_[slot];
  if (r.id != kNone && s == r.text) return r.id;
  r.id = out_.strings.intern(s);
  r.text = out_.strings.view(r.id);
  return r.id;
}

uint64_t TraceBuilder::spanBytes() const {
  return reserve_bytes_ ? reserve_bytes_ : std::max<uint64_t>(out_.json_bytes, json_.size); }

void TraceBuilder::reserveEvents() {
  if (reserved_) return;
  reserved_ = true;
  out_.events.reserve(spanBytes() / 220);
}

// After the first window, the reserve from this trace's own bytes per
// event (220 above is a guess), 3% over: the records then neither grow
// nor leave finished() enough slack to shrink, and either copies every
// record into fresh memory (8% of a 1 GB walk).
void TraceBuilder::fitReserveTo(size_t window_bytes) {
  const size_t n = out_.events.size();
  if (n < 256) return;
  const auto want = static_cast<size_t>(double(spanBytes()) / (double(window_bytes) / double(n)) * 1.03) + 1024;
  // Kept only when within the 3% over (finished() shrinks, a copy of every
  // record, past 1/8: the first guess of 220 bytes an event could leave 9%).
  if (want > out_.events.capacity() || out_.events.capacity() - want > want / 32) {
    std::vector<TraceEvent> fitted;
    fitted.reserve(want);
    fitted.insert(fitted.end(), out_.events.begin(), out_.events.end());
    out_.events.swap(fitted);
  }
  // The records' pages mapped now, in one call, not a fault at each as the walk fills it.
  populatePages(out_.events.data() + n, (out_.events.capacity() - n) * sizeof(TraceEvent));
}

void TraceBuilder::finishEvent(TraceEvent& e, const EventFields& f, const Args* args) {
  const std::string_view ts = f.ts, dur = f.dur, name = f.name, cat = f.cat, ph = f.ph, pid = f.pid, tid = f.tid, id = f.id;
  e.ph = ph.empty() ? 0 : ph[0];
  if (!ts.empty()) {
    const DecimalValue d = parseDecimal(ts, 3);
    if (d.status != DecimalStatus::Ok)
      errors_.fail(ts.data(), "\"ts\" in microseconds within int64 nanoseconds, not '" + std::string(ts) + "'");
    e.ts_ns = d.value;
    e.flags |= kHasTs;
    if (d.float_syntax) {
      e.flags |= kTsFloat;
      out_.any_float_ts = true;
    }
  } else {
    out_.any_float_ts = true;  // pandas reads a missing ts as NaN: the column is float
  }
  if (!dur.empty()) {
    const DecimalValue d = parseDecimal(dur, 3);
    if (d.status != DecimalStatus::Ok)
      errors_.fail(dur.data(), "\"dur\" in microseconds within int64 nanoseconds, not '" + std::string(dur) + "'");
    if (d.value < 0) {
      // No span ends before it starts: such an event counts as one without a dur (HTA's metrics
      // leave those out) and analyze reports how many there were, instead of an idle above 100 %.
      ++out_.negative_durations;
    } else {
      e.dur_ns = d.value;
      e.flags |= kHasDur;
    }
  }
  e.name = internCached(name);
  const uint32_t cat_id = internCached(cat);
  const uint32_t pid_id = internCached(pid);
  const uint32_t tid_id = internCached(tid);

  if (e.ph == 'M') {
    readMetadata(e.name, pid_id, tid_id, args);
    return;
  }
  e.track = trackOf(pid_id, tid_id);
  e.cat = categoryOf(cat_id);
  e.kind = kindOfCat(cat_id);
  // The older autograd-profiler export has no "cat": its ops sit under pid "CPU functions".
  if (cat.empty() && out_.bare_array && sameText(pid, "CPU functions")) e.kind = EventKind::CpuOp;
  if (sameText(name, "[memory]")) e.kind = EventKind::MemoryInstant;
  else if (sameText(name, "[OutOfMemory]")) e.kind = EventKind::OutOfMemory;

  if (args) {
    if (!args->stream.empty()) {
      const DecimalValue d = parseDecimal(args->stream, 0);
      if (d.status == DecimalStatus::Ok && !d.float_syntax && d.value >= INT32_MIN && d.value <= INT32_MAX)
        e.stream = static_cast<int32_t>(d.value);
    }
    e.correlation = intArg(args->correlation, "correlation", -1);
    // Older traces size a collective op only by its inputs' shapes and types.
    if (!args->collective_name.empty() || !args->in_nelems.empty() ||
        (!args->input_dims.empty() && isCollectiveOpName(name))) {
      CollectiveArgs c;
      c.collective_name = out_.strings.intern(args->collective_name);
      c.dtype = out_.strings.intern(args->dtype);
      c.pg_name = out_.strings.intern(args->pg_name);
      c.pg_ranks = out_.strings.intern(args->pg_ranks);
      c.input_dims = out_.strings.intern(args->input_dims);
      c.input_types = out_.strings.intern(args->input_types);
      c.in_nelems = intArg(args->in_nelems, "In msg nelems", -1);
      c.out_nelems = intArg(args->out_nelems, "Out msg nelems", -1);
      c.seq = intArg(args->seq, "Seq", -1);
      const int64_t group = intArg(args->group_size, "Group size", -1);
      // Beyond int32 it would wrap (4294967297 -> 1) into a wrong bus bandwidth; 0 or less stays unknown.
      if (group > INT32_MAX || (group == -1 && !args->group_size.empty() && parseDecimal(args->group_size, 0).status ==
                                                                                DecimalStatus::OutOfRange))
        errors_.fail(args->group_size.data(), "args \"Group size\" as an integer in [1, 2147483647], not '" +
                                          std::string(args->group_size) + "'");
      c.group_size = static_cast<int32_t>(group);
      e.extra = static_cast<uint32_t>(out_.collective_args.size());
      out_.collective_args.push_back(c);
    }
    if (e.kind == EventKind::CudaSync && (!args->wait_on_stream.empty() || !args->wait_on_record.empty())) {
      SyncArgs w;
      w.record_correlation = std::max<int64_t>(intArg(args->wait_on_record, "wait_on_cuda_event_record_corr_id", -1), -1);
      const int64_t stream = intArg(args->wait_on_stream, "wait_on_stream", -1);
      w.wait_on_stream = stream >= 0 && stream <= INT32_MAX ? static_cast<int32_t>(stream) : -1;
      e.extra = static_cast<uint32_t>(out_.sync_args.size());
      out_.sync_args.push_back(w);
    }
    if (e.kind == EventKind::MemoryInstant || e.kind == EventKind::OutOfMemory) {
      MemorySample m;
      m.bytes = intArg(args->bytes, "Bytes", 0);
      m.total_allocated = intArg(args->total_allocated, "Total Allocated", -1);
      m.total_reserved = intArg(args->total_reserved, "Total Reserved", -1);
      checkMemoryBytes(*args, m, e.kind == EventKind::MemoryInstant);
      m.device_type = static_cast<int16_t>(intArg(args->device_type, "Device Type", -1));
      m.device_id = static_cast<int16_t>(intArg(args->device_id, "Device Id", -1));
      m.tid = tid_id;
      m.event = static_cast<uint32_t>(out_.events.size());
      if (!args->addr.empty()) {
        const DecimalValue d = parseDecimal(args->addr, 0);
        if (d.status == DecimalStatus::Ok) {
          m.addr = static_cast<uint64_t>(d.value);
        } else if (d.status == DecimalStatus::OutOfRange) {
          keepBig("Addr", args->addr);
        }
      }
      auto& table = e.kind == EventKind::MemoryInstant ? out_.memory : out_.out_of_memory;
      e.extra = static_cast<uint32_t>(table.size());
      table.push_back(m);
    }
  }
  if (e.kind == EventKind::Flow && !id.empty()) e.correlation = intArg(id, "id", -1);
  out_.events.push_back(e);
}

// A [memory] sample's delta and total, as the allocator can report them: no
// more than 2^60 bytes (1 EiB) either way, and an allocation no larger than
// the total allocated after it. Anything else (int64 max, say) would make
// the memory held before the window, and every running total, nonsense.
// An [OutOfMemory] event's Bytes is the request that failed: only the bound.
void TraceBuilder::checkMemoryBytes(const Args& args, const MemorySample& m, bool sample) {
  constexpr int64_t kMaxBytes = int64_t(1) << 60;
  if (m.total_allocated > kMaxBytes)
    errors_.fail(args.total_allocated.data(), "args \"Total Allocated\" of a memory event as bytes in [0, 1152921504606846976], not '" +
                                          std::string(args.total_allocated) + "'");
  if (m.bytes > kMaxBytes || m.bytes < -kMaxBytes || (sample && m.total_allocated >= 0 && m.bytes > m.total_allocated))
    errors_.fail(args.bytes.data(), "args \"Bytes\" of a memory event as bytes in [-1152921504606846976, " +
                                (sample && m.total_allocated >= 0 ? std::to_string(m.total_allocated) + "] (its \"Total Allocated\")"
                                                        : std::string("1152921504606846976]")) +
                                ", not '" + std::string(args.bytes) + "'");
}

void TraceBuilder::readMetadata(uint32_t name_id, uint32_t pid, uint32_t tid, const Args* args) {
  if (!args) return;
  const std::string_view name = out_.strings.view(name_id);
  if (name == "process_name" && !args->name.empty()) {
    out_.process_names[pid] = out_.strings.intern(args->name);
  } else if (name == "thread_name" && !args->name.empty()) {
    out_.thread_names[{pid, tid}] = out_.strings.intern(args->name);
  } else if (name == "process_labels" && !args->labels.empty()) {
    out_.process_labels[pid].push_back(out_.strings.intern(args->labels));
  }
}

uint32_t TraceBuilder::trackOf(uint32_t pid, uint32_t tid) {
  const uint64_t key = (uint64_t(pid) << 32) | tid;
  if (key == last_track_key_ && last_track_ != kNone) return last_track_;
  const auto [it, fresh] = track_index_.emplace(key, static_cast<uint32_t>(out_.tracks.size()));
  if (fresh) out_.tracks.push_back({pid, tid});
  last_track_key_ = key;
  return last_track_ = it->second;
}

uint16_t TraceBuilder::categoryOf(uint32_t cat_id) {
  if (cat_id < cat_index_.size() && cat_index_[cat_id] != kNoCategory) return cat_index_[cat_id];
  if (out_.categories.size() >= kNoCategory)
    throw ConfigError(out_.path + ": more than 65535 distinct \"cat\" values");
  if (cat_id >= cat_index_.size()) cat_index_.resize(cat_id + 1, kNoCategory);
  cat_index_[cat_id] = static_cast<uint16_t>(out_.categories.size());
  out_.categories.push_back(cat_id);
  return cat_index_[cat_id];
}

}  // namespace shardscope::kineto::walk
