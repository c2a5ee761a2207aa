#include "kineto/kineto_run_trace.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "common/errors.h"
#include "common/collective.h"
#include "kineto/torch_dtype.h"
#include "kineto/hta_rules.h"
#include "kineto/collective_skew.h"

namespace shardscope::kineto {

using RunKind = shardscope::EventKind;

namespace {

bool startsWith(std::string_view s, std::string_view p) { return s.rfind(p, 0) == 0; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// What an imported job's events were called: kept per rank as the trace's own
// string ids, so the import adds 8 bytes per event for tooltips.
class KinetoEventText final : public ImportedEventText {
 public:
  struct Rank {
    StringTable strings;
    std::vector<uint32_t> names;  // by kineto event index (== Event::op)
    std::vector<uint32_t> cats;
  };
  std::vector<Rank> ranks;

  std::string name(int rank, int32_t op) const override { return lookup(rank, op, &Rank::names); }
  std::string category(int rank, int32_t op) const override { return lookup(rank, op, &Rank::cats); }

 private:
  std::string lookup(int rank, int32_t op, std::vector<uint32_t> Rank::*ids) const {
    if (rank < 0 || static_cast<size_t>(rank) >= ranks.size() || op < 0) return {};
    const Rank& r = ranks[static_cast<size_t>(rank)];
    const auto& v = r.*ids;
    return static_cast<size_t>(op) < v.size() ? std::string(r.strings.view(v[static_cast<size_t>(op)])) : std::string();
  }
};

int64_t leadingInteger(std::string_view s) {
  int64_t v = 0;
  bool any = false;
  for (char c : s) {
    if (c < '0' || c > '9') {
      if (any) break;
      continue;
    }
    any = true;
    if (v < INT64_MAX / 10) v = v * 10 + (c - '0');
  }
  return any ? v : -1;
}

// "[0, 1, 2]" -> {0, 1, 2}; empty when the text holds no list.
std::vector<int> parseRankList(std::string_view s) {
  std::vector<int> out;
  int64_t v = -1;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      v = (v < 0 ? 0 : v) * 10 + (c - '0');
      if (v > 1'000'000) return {};
    } else if (v >= 0) {
      out.push_back(static_cast<int>(v));
      v = -1;
    }
  }
  if (v >= 0) out.push_back(static_cast<int>(v));
  return out;
}

RunKind runKindOf(Collective k) {
  switch (k) {
    case Collective::AllReduce: return RunKind::AllReduce;
    case Collective::ReduceScatter: return RunKind::ReduceScatter;
    case Collective::AllGather: return RunKind::AllGather;
    case Collective::AllToAll:
    case Collective::SendRecv: return RunKind::AllToAll;  // all-to-all runs as SendRecv kernels
    case Collective::Broadcast: return RunKind::Broadcast;
    default: return RunKind::Kernel;  // reduce, barrier, unknown: drawn as a kernel on its stream
  }
}

bool isHostSpan(EventKind k) {
  return k == EventKind::CpuOp || k == EventKind::UserAnnotation || k == EventKind::CudaRuntime ||
         k == EventKind::CudaDriver;
}
bool isGpuSpan(EventKind k) { return k == EventKind::Kernel || k == EventKind::GpuMemcpy || k == EventKind::GpuMemset; }

struct Span {
  int64_t begin = 0, end = 0;
  int32_t value = 0;  // a phase (RunKind) or a unit index
};

// The innermost span holding t among spans sorted by begin (properly nested
// host ranges: the latest-starting one that still covers t), or nullptr.
const Span* innermost(const std::vector<Span>& spans, int64_t t) {
  auto it = std::upper_bound(spans.begin(), spans.end(), t, [](int64_t v, const Span& s) { return v < s.begin; });
  for (int scanned = 0; it != spans.begin() && scanned < 64; ++scanned) {
    --it;
    if (it->end >= t) return &*it;
  }
  return nullptr;
}

struct TrackPlan {
  bool gpu = false, comm = false, copies_only = true, used = false;
  int64_t key_a = 0, key_b = 0;
  uint32_t lane = 0;
};

// The rank's rows: GPU streams (by device, stream), then CPU threads, up to 256.
std::vector<ImportedTrack> planTracks(const RankTrace& t, const TraceIndex& idx, std::vector<TrackPlan>& plan,
                                      std::vector<std::string>& notes) {
  plan.assign(t.tracks.size(), {});
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    if (!e.has(kHasDur) || !(isHostSpan(e.kind) || isGpuSpan(e.kind))) continue;
    TrackPlan& p = plan[e.track];
    p.used = true;
    p.gpu = p.gpu || isGpuSpan(e.kind);
    p.comm = p.comm || (e.kind == EventKind::Kernel && idx.collective_of_event[i] != kNone);
    p.copies_only = p.copies_only && (e.kind == EventKind::GpuMemcpy || e.kind == EventKind::GpuMemset);
  }
  for (uint32_t k = 0; k < t.tracks.size(); ++k) {
    plan[k].key_a = leadingInteger(t.str(t.tracks[k].pid));
    plan[k].key_b = leadingInteger(t.str(t.tracks[k].tid));
  }
  std::vector<uint32_t> order;
  for (uint32_t k = 0; k < plan.size(); ++k)
    if (plan[k].used) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const TrackPlan &x = plan[a], &y = plan[b];
    if (x.gpu != y.gpu) return x.gpu;
    return std::tie(x.key_a, x.key_b) < std::tie(y.key_a, y.key_b);
  });
  std::map<int64_t, int> devices;
  for (uint32_t k : order)
    if (plan[k].gpu) ++devices[plan[k].key_a];
  std::vector<ImportedTrack> tracks;
  size_t dropped = 0;
  for (uint32_t k : order) {
    if (tracks.size() == 256) {
      plan[k].used = false;
      ++dropped;
      continue;
    }
    const TrackPlan& p = plan[k];
    const Track& tr = t.tracks[k];
    const auto named = t.thread_names.find({tr.pid, tr.tid});
    std::string name;
    if (p.gpu) {
      // Older traces' tids are texts "stream 16" already; newer ones numbers.
      const std::string_view tid = t.str(tr.tid);
      name = named != t.thread_names.end() ? std::string(t.str(named->second))
             : tid.rfind("stream", 0) == 0 ? std::string(tid)
                                           : "stream " + std::string(tid);
      if (devices.size() > 1) name = "GPU " + std::string(t.str(tr.pid)) + " " + name;
      if (p.comm) name += " · NCCL";
      else if (p.copies_only) name += " · memcpy";
    } else {
      // Kineto names threads "thread 4242 (python3)" already; older traces name them or not at all.
      name = "thread " + std::string(t.str(tr.tid));
      if (named != t.thread_names.end()) {
        const std::string_view given = t.str(named->second);
        name = startsWith(given, name) ? std::string(given) : name + " (" + std::string(given) + ")";
      }
    }
    plan[k].lane = static_cast<uint32_t>(tracks.size());
    tracks.push_back({std::move(name), p.gpu ? (p.comm ? Lane::Comm : Lane::Compute) : Lane::Host});
  }
  if (dropped)
    notes.push_back("rank " + std::to_string(t.rank) + ": " + std::to_string(dropped) +
                    " CPU threads beyond the first 256 tracks are not shown");
  return tracks;
}

// Stable by begin time: sorts (begin, index) keys, 16 bytes, then moves each
// 64-byte record once, instead of merge-sorting the records themselves.
void sortByBegin(std::vector<Event>& events) {
  const auto byBegin = [](const Event& a, const Event& b) { return a.begin_ns < b.begin_ns; };
  if (std::is_sorted(events.begin(), events.end(), byBegin)) return;
  std::vector<std::pair<int64_t, uint32_t>> keys(events.size());
  for (uint32_t i = 0; i < events.size(); ++i) keys[i] = {events[i].begin_ns, i};
  std::sort(keys.begin(), keys.end());  // the index breaks ties: the order is the stable one
  std::vector<Event> sorted;
  sorted.reserve(events.size());
  for (const auto& k : keys) sorted.push_back(events[k.second]);
  events.swap(sorted);
}

}  // namespace

RunKind phaseOfLabel(std::string_view n) {
  if (startsWith(n, "autograd::engine::evaluate_function") || startsWith(n, "## backward") ||
      startsWith(n, "FSDP::pre_backward") || startsWith(n, "FSDP::post_backward") ||
      startsWith(n, "FullyShardedDataParallel._pre_backward") || startsWith(n, "FullyShardedDataParallel._post_backward"))
    return RunKind::Backward;
  if (startsWith(n, "Optimizer.step") || startsWith(n, "## optimizer") || startsWith(n, "Optimizer.zero_grad"))
    return RunKind::OptimizerStep;
  if (startsWith(n, "## forward") || startsWith(n, "DistributedDataParallel.forward") ||
      startsWith(n, "FullyShardedDataParallel.forward") || startsWith(n, "FSDP::pre_forward") ||
      startsWith(n, "FSDP::post_forward") || startsWith(n, "FullyShardedDataParallel._pre_forward"))
    return RunKind::Forward;
  return RunKind::Kernel;
}

std::optional<std::string_view> fsdpModule(std::string_view n) {
  // FSDP2's labels name their module: "FSDP::<what> (<fqn>)"; FSDP1's unshard names none.
  if (startsWith(n, "FullyShardedDataParallel._unshard")) return std::string_view();
  if (!startsWith(n, "FSDP::")) return std::nullopt;
  const size_t open = n.find(" (");
  if (open == std::string_view::npos || n.back() != ')') return std::nullopt;
  return n.substr(open + 2, n.size() - open - 3);
}

std::optional<std::string_view> fsdpAllGatherModule(std::string_view n) {
  // FSDP2: record_function(f"FSDP::all_gather ({fqn})") and "FSDP::all_gather_copy_out (...)";
  // FSDP1's unshard: "FullyShardedDataParallel._unshard" (no module).
  if (!startsWith(n, "FSDP::all_gather") && !startsWith(n, "FullyShardedDataParallel._unshard")) return std::nullopt;
  const size_t open = n.find(" (");
  if (open == std::string_view::npos || n.back() != ')') return std::string_view();
  return n.substr(open + 2, n.size() - open - 3);
}

shardscope::RunTrace importedRunTrace(TraceSet set) {
  shardscope::RunTrace out;
  auto source = std::make_shared<ImportedSource>();
  auto text = std::make_shared<KinetoEventText>();
  // Events sit at their rank's index: a job's files may skip ranks.
  int P = 0;
  for (const RankTrace& t : set.ranks) {
    if (t.rank < 0 || t.rank >= 32768)
      throw ConfigError(t.path + ": rank " + std::to_string(t.rank) + " is outside 0..32767, the ranks a view can show");
    P = std::max(P, t.rank + 1);
  }
  out.ranks = P;
  out.events.resize(static_cast<size_t>(P));
  for (const RankTrace& t : set.ranks) source->world_size = std::max(source->world_size, t.world_size);
  source->format = "PyTorch profiler (Kineto)";
  source->tracks.resize(static_cast<size_t>(P));
  source->reserved.resize(static_cast<size_t>(P));
  source->out_of_memory.assign(static_cast<size_t>(P), 0);
  text->ranks.resize(static_cast<size_t>(P));
  for (const std::string& note : set.notes) source->notes.push_back(note);
  source->notes.push_back("ranks aligned on the earliest timestamp of all ranks (ranks of one host share a clock)");
  // Collectives matched across ranks: the straggler view's table, and each other host's clock
  // put on the first host's by the collectives' ends (collective_skew.h); one host: offsets 0.
  const CollectiveSkew skew = computeCollectiveSkew(set);
  source->stragglers = stragglerTable(skew);
  int64_t origin_ns = set.origin_ns;
  if (skew.clocks.hosts.size() > 1) {
    origin_ns = INT64_MAX;
    for (size_t k = 0; k < set.ranks.size(); ++k)
      for (const TraceEvent& e : set.ranks[k].events)
        if (e.has(kHasTs)) origin_ns = std::min(origin_ns, skew.clocks.commonNs(set, k, e.ts_ns));
    for (size_t h = 1; h < skew.clocks.hosts.size(); ++h)
      source->notes.push_back("host " + skew.clocks.hosts[h].host + ": its clock put on host " + skew.clocks.hosts[0].host +
                              "'s by the ends of " + std::to_string(skew.clocks.hosts[h].collectives) +
                              " collectives, offset " + std::to_string(skew.clocks.hosts[h].offset_ns) + " ns, +/- " +
                              std::to_string(skew.clocks.hosts[h].residual_ns) + " ns");
  }

  // Communicator groups by (process group name, ranks): id 0 is the world.
  CommGroup world{0, "world", {}, LinkLevel::Unknown};
  for (int r = 0; r < P; ++r) world.ranks.push_back(r);
  out.groups.push_back(world);
  std::map<std::pair<std::string, std::string>, int> group_ids;
  std::map<std::string, int> unit_ids;
  bool fsdp_labels = false, ddp_labels = false;

  source->files.resize(static_cast<size_t>(P));
  for (size_t k = 0; k < set.ranks.size(); ++k) {
    const RankTrace& t = set.ranks[k];
    const TraceIndex& idx = set.indexes[k];
    const int r = t.rank;
    std::vector<Event>& events = out.events[static_cast<size_t>(r)];
    // At most one record per trace event, two per step, one per memory
    // sample plus the baseline: reserved once, not grown by copies.
    events.reserve(t.events.size() + 2 * idx.steps.size() + t.memory.size() + t.out_of_memory.size() + 1);
    source->files[static_cast<size_t>(r)] = t.path;
    std::vector<TrackPlan> plan;
    source->tracks[static_cast<size_t>(r)] = planTracks(t, idx, plan, source->notes);
    const auto ns = [&](int64_t ts) { return skew.clocks.commonNs(set, k, ts) - origin_ns; };

    // Host labels: phases, FSDP all-gathers and any FSDP label's module (per track), autograd threads.
    std::unordered_map<uint32_t, std::vector<Span>> phases, gathers, modules;
    std::vector<bool> autograd_thread(t.tracks.size(), false);
    for (const auto& [key, name] : t.thread_names)
      if (contains(t.str(name), "autograd"))
        for (uint32_t k = 0; k < t.tracks.size(); ++k)
          if (t.tracks[k].pid == key.first && t.tracks[k].tid == key.second) autograd_thread[k] = true;
    for (const TraceEvent& e : t.events) {
      if (!isHostSpan(e.kind) || !e.has(kHasDur)) continue;
      const std::string_view name = t.str(e.name);
      if (const RunKind phase = phaseOfLabel(name); phase != RunKind::Kernel)
        phases[e.track].push_back({ns(e.ts_ns), ns(e.endNs()), static_cast<int32_t>(phase)});
      if (const auto module = fsdpModule(name)) {
        const auto [it, fresh] = unit_ids.try_emplace(std::string(*module), static_cast<int>(unit_ids.size()));
        modules[e.track].push_back({ns(e.ts_ns), ns(e.endNs()), it->second});
        if (fsdpAllGatherModule(name)) gathers[e.track].push_back({ns(e.ts_ns), ns(e.endNs()), it->second});
      }
      fsdp_labels = fsdp_labels || startsWith(name, "FSDP::") || startsWith(name, "FullyShardedDataParallel");
      ddp_labels = ddp_labels || startsWith(name, "DistributedDataParallel");
    }
    for (auto* m : {&phases, &gathers, &modules})
      for (auto& [k, v] : *m) std::sort(v.begin(), v.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });

    // Profiler steps: numbers as recorded (dense when beyond int32).
    std::vector<Span> steps;
    for (size_t s = 0; s < idx.steps.size(); ++s) {
      const TraceEvent& e = t.events[idx.steps[s].event];
      const int64_t n = idx.steps[s].number;
      const auto number = static_cast<int32_t>(n <= INT32_MAX ? n : static_cast<int64_t>(s));
      steps.push_back({ns(e.ts_ns), ns(e.endNs()), number});
      const TrackPlan& p = plan[e.track];
      Event b;
      b.rank = static_cast<int16_t>(r);
      b.lane = static_cast<Lane>(p.used ? p.lane : 0);
      b.kind = RunKind::StepBegin;
      b.step = number;
      b.begin_ns = b.end_ns = ns(e.ts_ns);
      b.op = static_cast<int32_t>(idx.steps[s].event);
      events.push_back(b);
      b.kind = RunKind::StepEnd;
      b.begin_ns = b.end_ns = ns(e.endNs());
      events.push_back(b);
    }
    const auto stepAt = [&](int64_t t_ns) -> int32_t {
      const Span* s = innermost(steps, t_ns);
      return s ? s->value : -1;
    };

    std::map<int, int> seq_of_group;
    for (uint32_t i = 0; i < t.events.size(); ++i) {
      const TraceEvent& e = t.events[i];
      if (!e.has(kHasDur) || !plan[e.track].used || profilerStepNumber(t.str(e.name)) >= 0) continue;
      const bool gpu = isGpuSpan(e.kind);
      if (!gpu && !isHostSpan(e.kind)) continue;
      Event ev;
      ev.rank = static_cast<int16_t>(r);
      ev.lane = static_cast<Lane>(plan[e.track].lane);
      ev.begin_ns = ns(e.ts_ns);
      ev.end_ns = ns(e.endNs());
      ev.op = static_cast<int32_t>(i);
      int64_t launch_ns = ev.begin_ns;
      uint32_t launch_track = kNone;
      if (gpu && e.correlation >= 0) {
        if (const auto l = idx.launch_of_correlation.find(e.correlation); l != idx.launch_of_correlation.end()) {
          ev.dep = static_cast<int32_t>(l->second);
          launch_ns = ns(t.events[l->second].ts_ns);
          launch_track = t.events[l->second].track;
        }
      }
      ev.step = stepAt(launch_ns);
      if (const uint32_t c = idx.collective_of_event[i]; c != kNone) {
        const TraceCollective& col = idx.collectives[c];
        ev.kind = runKindOf(col.kind);
        ev.bytes = std::max<int64_t>(col.bytes, 0);
        if (col.bytes < 0) ev.flags |= kEventSizeUnknown;
        int group = 0;
        const CollectiveArgs* args = nullptr;
        if (col.op != kNone && t.events[col.op].extra != kNone) args = &t.collective_args[t.events[col.op].extra];
        else if (e.extra != kNone) args = &t.collective_args[e.extra];
        if (args && (args->pg_name != StringTable::kEmpty || args->pg_ranks != StringTable::kEmpty)) {
          const std::vector<int> members = parseRankList(t.str(args->pg_ranks));
          if (members != world.ranks) {
            const std::pair<std::string, std::string> key{std::string(t.str(args->pg_name)), std::string(t.str(args->pg_ranks))};
            const auto [it, fresh] = group_ids.try_emplace(key, static_cast<int>(out.groups.size()));
            if (fresh) {
              CommGroup g{it->second, "pg " + key.first, members, LinkLevel::Unknown};
              if (members.empty()) g.size = col.group_size;
              out.groups.push_back(std::move(g));
            }
            group = it->second;
          }
        } else if (col.group_size > 0 && col.group_size != P) {
          const std::pair<std::string, std::string> key{"", std::to_string(col.group_size)};
          const auto [it, fresh] = group_ids.try_emplace(key, static_cast<int>(out.groups.size()));
          if (fresh) {
            CommGroup g{it->second, std::to_string(col.group_size) + " ranks", {}, LinkLevel::Unknown};
            g.size = col.group_size;
            out.groups.push_back(std::move(g));
          }
          group = it->second;
        }
        ev.group = static_cast<int16_t>(std::min(group, int(INT16_MAX)));
        // FSDP's collectives belong to the module whose label launched them.
        if (launch_track != kNone)
          if (const auto m = modules.find(launch_track); m != modules.end())
            if (const Span* sp = innermost(m->second, launch_ns)) ev.unit = static_cast<int16_t>(std::min(sp->value, int(INT16_MAX)));
        if (ev.kind != RunKind::Kernel) ev.seq = seq_of_group[group]++;
      } else if (gpu) {
        if (e.kind != EventKind::Kernel || htaKernelType(t.str(e.name)) == HtaKernelType::Memory) {
          ev.kind = RunKind::Copy;
        } else {
          ev.kind = RunKind::Kernel;
          if (launch_track != kNone) {
            const auto ph = phases.find(launch_track);
            const Span* s = ph != phases.end() ? innermost(ph->second, launch_ns) : nullptr;
            if (s) ev.kind = static_cast<RunKind>(s->value);
            else if (autograd_thread[launch_track]) ev.kind = RunKind::Backward;
          }
        }
      } else {
        ev.kind = RunKind::CpuOp;
      }
      events.push_back(ev);
    }

    // Memory: the GPU's samples when there are any (else the host's), as
    // allocated bytes; what existed before the window is unattributed.
    const bool gpu_memory = std::any_of(t.memory.begin(), t.memory.end(), [](const MemorySample& m) { return m.device_type == 1; });
    int16_t device = -1;
    std::array<int64_t, kCategoryCount> running{};
    std::unordered_map<uint64_t, std::pair<Category, int16_t>> live;
    bool first = true;
    for (const MemorySample& m : t.memory) {
      if (gpu_memory && m.device_type != 1) continue;
      if (gpu_memory && device < 0) device = m.device_id;
      if (gpu_memory && m.device_id != device) continue;
      const TraceEvent& me = t.events[m.event];
      const int64_t at = ns(me.ts_ns);
      Event ev;
      ev.rank = static_cast<int16_t>(r);
      ev.lane = static_cast<Lane>(0);
      ev.begin_ns = ev.end_ns = at;
      ev.step = stepAt(at);
      ev.op = static_cast<int32_t>(m.event);
      if (first && m.total_allocated >= 0 && m.total_allocated - m.bytes > 0) {
        ev.kind = RunKind::Alloc;
        ev.category = Category::Workspace;
        ev.bytes = running[static_cast<size_t>(Category::Workspace)] = m.total_allocated - m.bytes;
        ev.value = ev.bytes;
        events.push_back(ev);
      }
      first = false;
      Category cat = Category::Workspace;
      int16_t unit = -1;
      if (m.bytes >= 0) {
        const auto g = gathers.find(me.track);
        if (const Span* s = g != gathers.end() ? innermost(g->second, at) : nullptr) {
          cat = Category::Gathered;
          unit = static_cast<int16_t>(std::min(s->value, int(INT16_MAX)));
        }
        if (m.addr) live[m.addr] = {cat, unit};
      } else if (const auto it = live.find(m.addr); m.addr && it != live.end()) {
        std::tie(cat, unit) = it->second;
        live.erase(it);
      }
      int64_t& books = running[static_cast<size_t>(cat)];
      books += m.bytes;
      ev.kind = m.bytes >= 0 ? RunKind::Alloc : RunKind::Free;
      ev.bytes = m.bytes >= 0 ? m.bytes : -m.bytes;
      ev.value = books;
      ev.category = cat;
      ev.unit = unit;
      events.push_back(ev);
      if (m.total_reserved >= 0) source->reserved[static_cast<size_t>(r)].push_back({at, m.total_reserved});
    }
    for (const MemorySample& m : t.out_of_memory) {
      const TraceEvent& me = t.events[m.event];
      Event ev;
      ev.rank = static_cast<int16_t>(r);
      ev.lane = static_cast<Lane>(plan[me.track].used ? plan[me.track].lane : 0);
      ev.kind = RunKind::Error;
      ev.begin_ns = ev.end_ns = ns(me.ts_ns);
      ev.bytes = m.bytes;
      ev.op = static_cast<int32_t>(m.event);
      events.push_back(ev);
      ++source->out_of_memory[static_cast<size_t>(r)];
    }
    // Record order = time order (stable: a memory sample's order among equal times is the trace's).
    sortByBegin(events);

    KinetoEventText::Rank& tr = text->ranks[static_cast<size_t>(r)];
    tr.names.resize(t.events.size());
    tr.cats.resize(t.events.size());
    for (size_t i = 0; i < t.events.size(); ++i) {
      tr.names[i] = t.events[i].name;
      tr.cats[i] = t.categories[t.events[i].cat];
    }
  }
  for (const auto& [module, id] : unit_ids) {
    (void)module;
    UnitInfo u;
    u.index = id;
    out.units.push_back(u);
  }
  std::sort(out.units.begin(), out.units.end(), [](const UnitInfo& a, const UnitInfo& b) { return a.index < b.index; });
  source->unit_names.resize(unit_ids.size());
  for (const auto& [module, id] : unit_ids) source->unit_names[static_cast<size_t>(id)] = module.empty() ? "root" : module;
  if (fsdp_labels) source->notes.push_back("FSDP labels found: memory allocated under an FSDP all-gather is booked as gathered, per module");
  else if (ddp_labels) source->notes.push_back("DistributedDataParallel labels found");
  for (RankTrace& t : set.ranks) text->ranks[static_cast<size_t>(t.rank)].strings = std::move(t.strings);
  source->text = std::move(text);
  out.imported = std::move(source);
  return out;
}

}  // namespace shardscope::kineto
