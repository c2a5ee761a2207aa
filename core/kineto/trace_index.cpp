#include "kineto/trace_index.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "kineto/decimal_text.h"
#include "kineto/hta_rules.h"

namespace shardscope::kineto {

int64_t profilerStepNumber(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.rfind(kPrefix, 0) != 0) return -1;
  int64_t n = 0;
  size_t i = kPrefix.size();
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    const int digit = name[i] - '0';
    if (n > (INT64_MAX - digit) / 10) return kStepNumberTooLarge;  // was cut to 18 digits: a wrong step
    n = n * 10 + digit;
  }
  return n;
}

bool isCollectiveOpName(std::string_view name) {
  return name.rfind("nccl:", 0) == 0 || name.rfind("gloo:", 0) == 0 || name.rfind("c10d::", 0) == 0 ||
         name == "record_param_comms";
}

bool isGpuKind(EventKind kind) {
  return kind == EventKind::Kernel || kind == EventKind::GpuMemcpy || kind == EventKind::GpuMemset ||
         kind == EventKind::GpuUserAnnotation || kind == EventKind::CudaSync;
}

namespace {

// The elements of each input of "Input Dims" ([[2049000]], [[1000], [1000], []])
// times its "Input type"'s size (["float", "float", "Int"]): inputs with
// no dimensions (scalars, non-tensors) count nothing; a tensor list
// (deeper nesting), a type of unknown size or text that is not such a list
// leaves the sum unknown (-1). Parsed with nlohmann-json: only collective
// ops' args get here, a few per step.
int64_t bytesOfInputs(std::string_view dims_text, std::string_view types_text, int only = -1) {
  const nlohmann::json dims = nlohmann::json::parse(dims_text, nullptr, false);
  const nlohmann::json types = nlohmann::json::parse(types_text, nullptr, false);
  if (!dims.is_array() || !types.is_array()) return -1;
  constexpr int64_t kMax = int64_t(1) << 60;  // no real tensor: a corrupt trace
  int64_t total = 0;
  bool any = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (only >= 0 && i != size_t(only)) continue;
    const nlohmann::json& shape = dims[i];
    if (!shape.is_array()) return -1;
    if (shape.empty()) continue;  // a scalar or a non-tensor argument
    int64_t elements = 1;
    for (const nlohmann::json& d : shape) {
      if (!d.is_number_unsigned()) return -1;  // a tensor list's shapes, or not a size
      const uint64_t n = d.get<uint64_t>();
      if (n != 0 && uint64_t(elements) > uint64_t(kMax) / n) return -1;
      elements *= static_cast<int64_t>(n);
    }
    const int size = i < types.size() && types[i].is_string() ? dtypeBytes(types[i].get_ref<const std::string&>()) : -1;
    if (size <= 0 || elements > kMax / size) return -1;
    total += elements * size;
    if (total > kMax) return -1;
    any = true;
  }
  return any ? total : -1;
}

int32_t countRanks(std::string_view ranks_json) {
  if (ranks_json.find_first_of("0123456789") == std::string_view::npos) return -1;
  return static_cast<int32_t>(std::count(ranks_json.begin(), ranks_json.end(), ',') + 1);
}

// The elements of input `which` of "Input Dims" ([[1073741824], [16777216], []]),
// -1 when it is not a plain shape.
int64_t elementsOfInput(std::string_view dims_text, size_t which) {
  const nlohmann::json dims = nlohmann::json::parse(dims_text, nullptr, false);
  if (!dims.is_array() || which >= dims.size() || !dims[which].is_array() || dims[which].empty()) return -1;
  int64_t elements = 1;
  for (const nlohmann::json& d : dims[which]) {
    if (!d.is_number_unsigned()) return -1;
    const uint64_t n = d.get<uint64_t>();
    if (n != 0 && uint64_t(elements) > (uint64_t(1) << 60) / n) return -1;
    elements *= static_cast<int64_t>(n);
  }
  return elements;
}

// The group an op's own input and output give: an all-gather's output over
// its input, a reduce-scatter's input over its output, from "In / Out msg
// nelems" or c10d::_allgather_base_'s / _reduce_scatter_base_'s first two
// Input Dims (output first); -1 when the op gives no such pair or they do
// not divide into a group of two or more.
int32_t groupOfInOut(const RankTrace& t, const CollectiveArgs& a, std::string_view op_name, Collective kind) {
  if (kind != Collective::AllGather && kind != Collective::ReduceScatter) return -1;
  int64_t in = a.in_nelems, out = a.out_nelems;
  if ((in <= 0 || out <= 0) && a.input_dims != StringTable::kEmpty &&
      (op_name.rfind("c10d::_allgather_base", 0) == 0 || op_name.rfind("c10d::_reduce_scatter_base", 0) == 0)) {
    out = elementsOfInput(t.str(a.input_dims), 0);
    in = elementsOfInput(t.str(a.input_dims), 1);
  }
  if (in <= 0 || out <= 0) return -1;
  const int64_t whole = kind == Collective::AllGather ? out : in, part = kind == Collective::AllGather ? in : out;
  // Equal sizes say nothing (a group of one says so in its other fields too).
  if (whole % part != 0 || whole / part < 2 || whole / part > INT32_MAX) return -1;
  return static_cast<int32_t>(whole / part);
}

// The group of a collective from the ops carrying it (innermost first), in
// order of trust: the op's own input and output sizes (groupOfInOut), then
// "Process Group Ranks", then "Group size", then the size distributedInfo.
// pg_config gives its "Process Group Name"; -1 when none says (the world
// size is the last resort). What the op moved cannot be wrong about its
// group; a stated size can (traces of subgroups stating the world's were seen).
int32_t groupOfChain(const RankTrace& t, const std::vector<uint32_t>& chain, Collective kind) {
  const auto& ev = t.events;
  for (int level = 0; level < 4; ++level)
    for (uint32_t op : chain) {
      if (ev[op].extra == kNone) continue;
      const CollectiveArgs& a = t.collective_args[ev[op].extra];
      int32_t g = -1;
      if (level == 0) g = groupOfInOut(t, a, t.str(ev[op].name), kind);
      else if (level == 1) g = countRanks(t.str(a.pg_ranks));
      else if (level == 2) g = a.group_size;
      else if (const std::string_view name = t.str(a.pg_name); !name.empty())
        for (const ProcessGroupConfig& pg : t.process_groups)
          if (pg.name == name && pg.size > 0) g = pg.size;
      if (g > 0) return g;
    }
  return -1;
}

// Kind, process group and sequence number from the op carrying the args (the innermost with args).
void applyArgs(const RankTrace& t, const CollectiveArgs& a, TraceCollective& c) {
  const std::string_view name = t.str(a.collective_name);
  if (!name.empty()) {
    const Collective k = collectiveFromName(name);
    if (k != Collective::Unknown) c.kind = k;
    c.from_args = true;
  }
  c.pg_name = a.pg_name;
  if (a.seq >= 0) c.seq = a.seq;
}

// Size from one op's args, at one level of trust: 0, "In/Out msg nelems" x
// dtype; 1, the output tensor of c10d::_allgather_base_ / the input of
// c10d::_reduce_scatter_base_ (their first two Input Dims, output first);
// 2, the inputs' "Input Dims" x "Input type" (an all-gather's input is this
// rank's part: times the group). False when this op does not size it so.
bool sizeFromArgs(const RankTrace& t, const CollectiveArgs& a, std::string_view op_name, int level,
                  TraceCollective& c) {
  if (level == 0) {
    const int elem = dtypeBytes(t.str(a.dtype));
    int64_t nelems = std::max(a.in_nelems, a.out_nelems);
    if (c.kind == Collective::AllGather && a.out_nelems >= 0) nelems = a.out_nelems;
    if (c.kind == Collective::ReduceScatter && a.in_nelems >= 0) nelems = a.in_nelems;
    if (elem <= 0 || nelems < 0 || nelems > INT64_MAX / elem) return false;
    c.bytes = nelems * elem;
    return true;
  }
  if (a.input_dims == StringTable::kEmpty) return false;
  if (level == 1) {
    int tensor = -1;
    if (op_name.rfind("c10d::_allgather_base", 0) == 0) tensor = 0;
    else if (op_name.rfind("c10d::_reduce_scatter_base", 0) == 0) tensor = 1;
    if (tensor < 0) return false;
    const int64_t b = bytesOfInputs(t.str(a.input_dims), t.str(a.input_types), tensor);
    if (b < 0) return false;
    c.bytes = b;
    c.bytes_from_dims = true;
    return true;
  }
  const int64_t in = bytesOfInputs(t.str(a.input_dims), t.str(a.input_types));
  const int32_t group = c.group_size > 0 ? c.group_size : t.world_size;
  if (in < 0 || (c.kind == Collective::AllGather && (group <= 0 || in > INT64_MAX / group))) return false;
  c.bytes = c.kind == Collective::AllGather ? in * group : in;
  c.bytes_from_dims = true;
  return true;
}

// Kind, group and size of a collective from the collective ops enclosing
// it (innermost first): record_param_comms often carries the sizes while the
// nccl:* op inside has none, and c10d::_allgather_base_ the output's dims.
void applyChain(const RankTrace& t, const std::vector<uint32_t>& chain, TraceCollective& c) {
  const auto& ev = t.events;
  if (c.op != kNone && ev[c.op].extra != kNone) applyArgs(t, t.collective_args[ev[c.op].extra], c);
  for (uint32_t op : chain) {
    if (ev[op].extra == kNone) continue;
    const CollectiveArgs& a = t.collective_args[ev[op].extra];
    if (c.kind == Collective::Unknown) {
      const Collective k = collectiveFromName(t.str(a.collective_name));
      if (k != Collective::Unknown) c.kind = k;
    }
    if (c.pg_name == StringTable::kEmpty) c.pg_name = a.pg_name;
    if (c.seq < 0) c.seq = a.seq;
  }
  std::vector<uint32_t> all = chain;
  if (c.op != kNone && std::find(all.begin(), all.end(), c.op) == all.end()) all.insert(all.begin(), c.op);
  c.group_size = groupOfChain(t, all, c.kind);
  for (int level = 0; level < 3 && c.bytes < 0; ++level)
    for (uint32_t op : chain)
      if (ev[op].extra != kNone && sizeFromArgs(t, t.collective_args[ev[op].extra], t.str(ev[op].name), level, c)) break;
}

// A coalesced group's own op: nccl:coalesced (ProcessGroupNCCL's endCoalescing) or a
// record_param_comms whose "Collective name" is "coalesced".
bool isCoalescedOp(const RankTrace& t, uint32_t op) {
  const TraceEvent& e = t.events[op];
  if (t.str(e.name) == "nccl:coalesced") return true;
  return e.extra != kNone && t.str(t.collective_args[e.extra].collective_name) == "coalesced";
}

// A point-to-point op: by its "Collective name" (send, recv) when it has one, else by its name
// (c10d::send, c10d::recv_, nccl:send 0->1).
bool isP2pOp(const RankTrace& t, uint32_t op) {
  const TraceEvent& e = t.events[op];
  if (e.extra != kNone && t.collective_args[e.extra].collective_name != StringTable::kEmpty)
    return collectiveFromName(t.str(t.collective_args[e.extra].collective_name)) == Collective::SendRecv;
  return collectiveFromName(t.str(e.name)) == Collective::SendRecv;
}

// A collective launched inside a coalesced group's op (`group`, on a thread whose collective ops by
// start are `ops`): its members are the point-to-point ops just before the group on that thread (back
// to the first op that is none), one per record_param_comms "send"/"recv" (the c10d::send / nccl:send
// around one is the same op). Its bytes are theirs summed, when each says its size; its kind
// point-to-point unless the group's args name another (allreduce_coalesced).
void applyCoalesced(const RankTrace& t, const std::vector<uint32_t>& ops, uint32_t group, TraceCollective& c) {
  const auto& ev = t.events;
  c.coalesced = true;
  if (c.kind != Collective::Unknown && c.kind != Collective::SendRecv) return;
  c.kind = Collective::SendRecv;
  auto pos = std::lower_bound(ops.begin(), ops.end(), ev[group].ts_ns,
                              [&](uint32_t op, int64_t ts) { return ev[op].ts_ns < ts; });
  int64_t bytes = 0;
  bool sized = true;
  int32_t members = 0;
  uint32_t last = kNone;  // the member counted last (the earliest so far)
  while (pos != ops.begin()) {
    const uint32_t op = *--pos;
    if (op == group || ev[op].endNs() > ev[group].ts_ns) continue;  // encloses or overlaps the group: not a member
    if (!isP2pOp(t, op)) break;
    const bool has_size = ev[op].extra != kNone && t.collective_args[ev[op].extra].collective_name != StringTable::kEmpty;
    if (!has_size && last != kNone && ev[op].ts_ns <= ev[last].ts_ns && ev[op].endNs() >= ev[last].endNs())
      continue;  // c10d::send around the record_param_comms counted
    ++members;
    last = op;
    TraceCollective part;
    part.kind = Collective::SendRecv;
    if (has_size && sizeFromArgs(t, t.collective_args[ev[op].extra], t.str(ev[op].name), 0, part)) bytes += part.bytes;
    else sized = false;
  }
  c.coalesced_ops = members;
  if (members > 0 && sized) {
    c.bytes = bytes;
    c.bytes_from_dims = false;
  } else if (c.bytes == 0) {
    c.bytes = -1;  // the group's own "In msg nelems" of 0 is not its size
  }
}

// The outermost coalesced group's op of a chain (innermost first), kNone when none.
uint32_t coalescedOpOf(const RankTrace& t, const std::vector<uint32_t>& chain) {
  uint32_t found = kNone;
  for (uint32_t op : chain)
    if (t.events[op].kind != EventKind::Kernel && isCoalescedOp(t, op)) found = op;
  return found;
}

struct ThreadOps {
  std::vector<uint32_t> ops;  // collective ops of one host thread, by start time
};

}  // namespace

TraceIndex buildTraceIndex(const RankTrace& t) {
  TraceIndex idx;
  const auto& ev = t.events;
  std::unordered_map<uint32_t, ThreadOps> threads;  // by track
  // What a name says (a ProfilerStep#N, a collective op), worked out once per
  // distinct name rather than for each of the host's events.
  enum NameBits : uint8_t { kKnown = 1, kStepName = 2, kCollectiveName = 4 };
  std::vector<uint8_t> name_bits(t.strings.size(), 0);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    if ((e.kind == EventKind::CudaRuntime || e.kind == EventKind::CudaDriver) && e.correlation >= 0)
      idx.launch_of_correlation.emplace(e.correlation, i);
    if (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation) {
      uint8_t& bits = name_bits[e.name];
      if (!(bits & kKnown)) {
        const std::string_view name = t.str(e.name);
        const int64_t step = profilerStepNumber(name);
        if (step == kStepNumberTooLarge)
          throw ConfigError(t.path + ": \"" + std::string(name.substr(0, 64)) +
                            "\": a ProfilerStep number as an integer in [0, 9223372036854775807]");
        bits = kKnown | (step >= 0 ? kStepName : 0) | (isCollectiveOpName(name) ? kCollectiveName : 0);
      }
      if (bits & kStepName) idx.steps.push_back({profilerStepNumber(t.str(e.name)), i});
      // record_param_comms also marks work.wait() ("Collective name": "wait"): not a collective.
      if ((bits & kCollectiveName) && e.has(kHasDur) &&
          !(e.extra != kNone && t.str(t.collective_args[e.extra].collective_name) == "wait"))
        threads[e.track].ops.push_back(i);
    }
  }
  const auto byStart = [&](uint32_t a, uint32_t b) { return ev[a].ts_ns < ev[b].ts_ns; };
  std::sort(idx.steps.begin(), idx.steps.end(),
            [&](const ProfilerStep& a, const ProfilerStep& b) { return ev[a.event].ts_ns < ev[b.event].ts_ns; });
  for (auto& [key, th] : threads) std::stable_sort(th.ops.begin(), th.ops.end(), byStart);

  // The collective ops on `track` enclosing time `ts`, innermost first.
  const auto enclosingOps = [&](uint32_t track, int64_t ts) {
    std::vector<uint32_t> chain;
    const auto it = threads.find(track);
    if (it == threads.end()) return chain;
    const auto& ops = it->second.ops;
    auto pos = std::upper_bound(ops.begin(), ops.end(), ts, [&](int64_t x, uint32_t op) { return x < ev[op].ts_ns; });
    for (int scanned = 0; pos != ops.begin() && scanned < 64 && chain.size() < 8; ++scanned) {
      --pos;
      if (ev[*pos].endNs() >= ts) chain.push_back(*pos);
    }
    return chain;
  };
  // Of a chain, the innermost op with args, else the innermost.
  const auto argsOp = [&](const std::vector<uint32_t>& chain) -> uint32_t {
    for (uint32_t op : chain)
      if (ev[op].extra != kNone) return op;
    return chain.empty() ? kNone : chain.front();
  };

  idx.collective_of_event.assign(ev.size(), kNone);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    const bool comm_kernel = e.kind == EventKind::Kernel && (htaKernelType(t.str(e.name)) == HtaKernelType::Communication ||
                                                             e.extra != kNone);
    if (!comm_kernel) continue;
    TraceCollective c;
    c.kernel = i;
    c.ts_ns = e.ts_ns;
    c.dur_ns = e.dur_ns;
    c.kind = collectiveFromName(t.str(e.name));
    std::vector<uint32_t> chain;
    if (e.correlation >= 0) {
      const auto launch = idx.launch_of_correlation.find(e.correlation);
      if (launch != idx.launch_of_correlation.end()) {
        chain = enclosingOps(ev[launch->second].track, ev[launch->second].ts_ns);
        c.op = argsOp(chain);
      }
    }
    if (c.op != kNone) {
      const Collective from_op = collectiveFromName(t.str(ev[c.op].name));
      if (from_op != Collective::Unknown) c.kind = from_op;
    }
    if (e.extra != kNone) chain.insert(chain.begin(), i);  // newer traces copy the args onto the kernel
    if (c.op != kNone && ev[c.op].extra != kNone) {
      applyChain(t, chain, c);
    } else {
      const uint32_t op = c.op;
      c.op = e.extra != kNone ? i : kNone;  // let applyChain take the kernel's own args first
      applyChain(t, chain, c);
      c.op = op;
    }
    if (const uint32_t g = coalescedOpOf(t, chain); g != kNone) applyCoalesced(t, threads[ev[g].track].ops, g, c);
    if (c.group_size <= 0) c.group_size = t.world_size;
    idx.collective_of_event[i] = static_cast<uint32_t>(idx.collectives.size());
    idx.collectives.push_back(c);
  }
  // Host-only collectives (Gloo on CPU, or a profile without GPU activity):
  // the backend's own ops (gloo:*, nccl:*) are the calls, each sized by
  // whichever level carries the information (itself or the record_param_comms
  // around it); a record_param_comms enclosing none is a wait, not a call.
  // Without backend ops, the outermost collective op of each call on its thread.
  if (idx.collectives.empty()) {
    const auto isBackendOp = [&](uint32_t i) {
      const std::string_view n = t.str(ev[i].name);
      return n.rfind("gloo:", 0) == 0 || n.rfind("nccl:", 0) == 0;
    };
    bool any_backend_op = false;
    for (const auto& [key, th] : threads)
      for (uint32_t i : th.ops) any_backend_op |= isBackendOp(i);
    for (const auto& [key, th] : threads) {
      int64_t covered_until = INT64_MIN;
      for (uint32_t i : th.ops) {
        const TraceEvent& e = ev[i];
        if (any_backend_op && !isBackendOp(i)) continue;
        if (e.ts_ns < covered_until) continue;  // nested in the previous one
        covered_until = e.endNs();
        TraceCollective c;
        c.op = i;
        c.ts_ns = e.ts_ns;
        c.dur_ns = e.dur_ns;
        c.kind = collectiveFromName(t.str(e.name));
        std::vector<uint32_t> chain = enclosingOps(e.track, e.ts_ns);  // e itself and what encloses it
        const uint32_t op = c.op;
        c.op = argsOp(chain);
        applyChain(t, chain, c);
        c.op = op;
        if (const uint32_t g = coalescedOpOf(t, chain); g != kNone) applyCoalesced(t, th.ops, g, c);
        if (c.group_size <= 0) c.group_size = t.world_size;
        idx.collective_of_event[i] = static_cast<uint32_t>(idx.collectives.size());
        idx.collectives.push_back(c);
      }
    }
    std::sort(idx.collectives.begin(), idx.collectives.end(),
              [](const TraceCollective& a, const TraceCollective& b) { return a.ts_ns < b.ts_ns; });
    for (uint32_t k = 0; k < idx.collectives.size(); ++k) idx.collective_of_event[idx.collectives[k].op] = k;
  }

  if (!t.memory.empty()) {
    const MemorySample& first = t.memory.front();
    if (first.total_allocated >= 0) idx.memory_baseline = first.total_allocated - first.bytes;
    for (const MemorySample& m : t.memory) {
      idx.peak_allocated = std::max(idx.peak_allocated, m.total_allocated);
      idx.peak_reserved = std::max(idx.peak_reserved, m.total_reserved);
    }
  }
  return idx;
}

}  // namespace shardscope::kineto
