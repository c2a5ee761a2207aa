#include "kineto/trace_index.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "kineto/decimal_text.h"
#include "kineto/hta_rules.h"

namespace shardscope::kineto {

int64_t profilerStepNumber(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.rfind(kPrefix, 0) != 0) return -1;
  int64_t n = 0;
  size_t i = kPrefix.size();
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && n < (INT64_MAX / 10 - 9); ++i) n = n * 10 + (name[i] - '0');
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
int64_t bytesOfInputs(std::string_view dims_text, std::string_view types_text) {
  const nlohmann::json dims = nlohmann::json::parse(dims_text, nullptr, false);
  const nlohmann::json types = nlohmann::json::parse(types_text, nullptr, false);
  if (!dims.is_array() || !types.is_array()) return -1;
  constexpr int64_t kMax = int64_t(1) << 60;  // no real tensor: a corrupt trace
  int64_t total = 0;
  bool any = false;
  for (size_t i = 0; i < dims.size(); ++i) {
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

// Fills kind, size and group from a CollectiveArgs record.
void applyArgs(const RankTrace& t, const CollectiveArgs& a, TraceCollective& c) {
  const std::string_view name = t.str(a.collective_name);
  if (!name.empty()) {
    const Collective k = collectiveFromName(name);
    if (k != Collective::Unknown) c.kind = k;
    c.from_args = true;
  }
  c.group_size = a.group_size > 0 ? a.group_size : countRanks(t.str(a.pg_ranks));
  c.pg_name = a.pg_name;
  const int elem = dtypeBytes(t.str(a.dtype));
  int64_t nelems = std::max(a.in_nelems, a.out_nelems);
  if (c.kind == Collective::AllGather && a.out_nelems >= 0) nelems = a.out_nelems;
  if (c.kind == Collective::ReduceScatter && a.in_nelems >= 0) nelems = a.in_nelems;
  if (elem > 0 && nelems >= 0) {
    c.bytes = nelems * elem;
  } else if (nelems < 0 && a.input_dims != StringTable::kEmpty) {
    // An older trace: the op's input tensors' shapes and types. An
    // all-gather's input is this rank's part, its output the group's.
    const int64_t in = bytesOfInputs(t.str(a.input_dims), t.str(a.input_types));
    const int32_t group = c.group_size > 0 ? c.group_size : t.world_size;
    if (in >= 0 && (c.kind != Collective::AllGather || (group > 0 && in <= INT64_MAX / group))) {
      c.bytes = c.kind == Collective::AllGather ? in * group : in;
      c.bytes_from_dims = true;
    }
  }
}

struct ThreadOps {
  std::vector<uint32_t> ops;  // collective ops of one host thread, by start time
};

}  // namespace

TraceIndex buildTraceIndex(const RankTrace& t) {
  TraceIndex idx;
  const auto& ev = t.events;
  std::unordered_map<uint32_t, ThreadOps> threads;  // by track
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    if ((e.kind == EventKind::CudaRuntime || e.kind == EventKind::CudaDriver) && e.correlation >= 0)
      idx.launch_of_correlation.emplace(e.correlation, i);
    if (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation) {
      const std::string_view name = t.str(e.name);
      const int64_t step = profilerStepNumber(name);
      if (step >= 0) idx.steps.push_back({step, i});
      if (isCollectiveOpName(name) && e.has(kHasDur)) threads[e.track].ops.push_back(i);
    }
  }
  const auto byStart = [&](uint32_t a, uint32_t b) { return ev[a].ts_ns < ev[b].ts_ns; };
  std::sort(idx.steps.begin(), idx.steps.end(),
            [&](const ProfilerStep& a, const ProfilerStep& b) { return ev[a.event].ts_ns < ev[b.event].ts_ns; });
  for (auto& [key, th] : threads) std::stable_sort(th.ops.begin(), th.ops.end(), byStart);

  // The innermost enclosing collective op of a launch, preferring one with args.
  const auto enclosingOp = [&](const TraceEvent& launch) -> uint32_t {
    const auto it = threads.find(launch.track);
    if (it == threads.end()) return kNone;
    const auto& ops = it->second.ops;
    auto pos = std::upper_bound(ops.begin(), ops.end(), launch.ts_ns,
                                [&](int64_t ts, uint32_t op) { return ts < ev[op].ts_ns; });
    uint32_t best = kNone, best_any = kNone;
    for (int scanned = 0; pos != ops.begin() && scanned < 64; ++scanned) {
      --pos;
      const TraceEvent& op = ev[*pos];
      if (op.endNs() < launch.ts_ns) continue;
      if (best_any == kNone) best_any = *pos;
      if (op.extra != kNone) {
        best = *pos;
        break;
      }
    }
    return best != kNone ? best : best_any;
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
    if (e.correlation >= 0) {
      const auto launch = idx.launch_of_correlation.find(e.correlation);
      if (launch != idx.launch_of_correlation.end()) c.op = enclosingOp(ev[launch->second]);
    }
    if (c.op != kNone) {
      const Collective from_op = collectiveFromName(t.str(ev[c.op].name));
      if (from_op != Collective::Unknown) c.kind = from_op;
      if (ev[c.op].extra != kNone) applyArgs(t, t.collective_args[ev[c.op].extra], c);
    }
    if (!c.from_args && e.extra != kNone) applyArgs(t, t.collective_args[e.extra], c);
    if (c.group_size <= 0) c.group_size = t.world_size;
    idx.collective_of_event[i] = static_cast<uint32_t>(idx.collectives.size());
    idx.collectives.push_back(c);
  }
  // Host-only collectives (Gloo on CPU): the outermost collective op of each call.
  // The backend's own ops (gloo:*) do the work; without them, the outermost
  // collective op of each call on its thread.
  if (idx.collectives.empty()) {
    bool any_backend_op = false;
    for (const auto& [key, th] : threads)
      for (uint32_t i : th.ops) any_backend_op |= t.str(ev[i].name).rfind("gloo:", 0) == 0;
    for (const auto& [key, th] : threads) {
      int64_t covered_until = INT64_MIN;
      for (uint32_t i : th.ops) {
        const TraceEvent& e = ev[i];
        if (any_backend_op && t.str(e.name).rfind("gloo:", 0) != 0) continue;
        if (e.ts_ns < covered_until) continue;  // nested in the previous one
        covered_until = e.endNs();
        TraceCollective c;
        c.op = i;
        c.ts_ns = e.ts_ns;
        c.dur_ns = e.dur_ns;
        c.kind = collectiveFromName(t.str(e.name));
        if (e.extra != kNone) applyArgs(t, t.collective_args[e.extra], c);
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
