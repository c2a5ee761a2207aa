#include "kineto/critical_path.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <ostream>
#include <set>

#include "common/errors.h"
#include "kineto/collective_match.h"
#include "kineto/critical_path_graph.h"

namespace shardscope::kineto {

std::string_view pathCategoryName(PathCategory c) {
  switch (c) {
    case PathCategory::Compute: return "compute";
    case PathCategory::Communication: return "communication";
    case PathCategory::LaunchCpu: return "launch_cpu";
    case PathCategory::Idle: return "idle";
    case PathCategory::WaitingForRank: return "waiting_for_rank";
  }
  return "idle";
}

namespace {

std::string_view cpEventKindName(EventKind k) {
  switch (k) {
    case EventKind::Kernel: return "kernel";
    case EventKind::GpuMemcpy: return "gpu_memcpy";
    case EventKind::GpuMemset: return "gpu_memset";
    case EventKind::CpuOp: return "cpu_op";
    case EventKind::UserAnnotation: return "user_annotation";
    case EventKind::CudaRuntime: return "cuda_runtime";
    case EventKind::CudaDriver: return "cuda_driver";
    default: return "other";
  }
}

// Among in-edges leaving at the same time, the one preferred (lower first): the GPU side's own order
// before a launch; an op's own span before a sync edge that did not make it wait.
int cpTiePriority(CpEdgeKind k) {
  switch (k) {
    case CpEdgeKind::StreamWait: return 0;
    case CpEdgeKind::StreamOrder: return 1;
    case CpEdgeKind::Body: return 2;
    case CpEdgeKind::Launch: return 3;
    case CpEdgeKind::SyncWait: return 4;
    default: return 5;
  }
}

PathSegment cpSegmentOf(const CpGraph& g, const TraceSet& set, const CpEdge& e) {
  const CpActivity& a = g.activities[e.activity];
  const RankTrace& t = set.ranks[a.rank_index];
  const TraceEvent& ev = t.events[a.event];
  PathSegment s;
  s.rank = t.rank;
  s.kind = std::string(cpEventKindName(ev.kind));
  s.name = std::string(t.str(ev.name));
  const auto gap = [&](PathCategory c, const char* name) {
    s.category = c;
    s.kind = "gap";
    s.name = name;
  };
  switch (e.kind) {
    case CpEdgeKind::Body:
      s.category = a.cls == CpActivityClass::Cpu        ? PathCategory::LaunchCpu
                   : a.cls == CpActivityClass::GpuComm ? PathCategory::Communication
                                                        : PathCategory::Compute;
      break;
    case CpEdgeKind::OpSelf: s.category = PathCategory::LaunchCpu; break;
    case CpEdgeKind::Launch:
      s.category = PathCategory::LaunchCpu;
      s.kind = "launch_delay";
      break;
    case CpEdgeKind::SyncWait:
      s.category = PathCategory::LaunchCpu;
      s.kind = "sync_wait";
      break;
    case CpEdgeKind::Transfer: s.category = PathCategory::Communication; break;
    case CpEdgeKind::Waiting:
    case CpEdgeKind::CrossRank:
      s.category = PathCategory::WaitingForRank;
      s.peer_rank = e.peer_rank;
      break;
    case CpEdgeKind::ThreadGap: gap(PathCategory::Idle, "(CPU thread idle)"); break;
    case CpEdgeKind::Fork: gap(PathCategory::LaunchCpu, "(step thread, before another thread's op)"); break;
    case CpEdgeKind::StreamOrder: gap(PathCategory::Idle, "(GPU stream idle)"); break;
    case CpEdgeKind::StreamWait: gap(PathCategory::Idle, "(stream waiting on another stream)"); break;
    case CpEdgeKind::Carry: gap(PathCategory::Idle, "(GPU idle before work launched earlier)"); break;
  }
  return s;
}

// The walk back from the rank's sink to its root through each node's latest predecessor.
// visited: one flag per node of g, all clear; left clear.
RankCriticalPath cpWalk(const CpGraph& g, const TraceSet& set, const CpRankStep& rs, std::vector<uint8_t>& visited) {
  RankCriticalPath p;
  p.rank = set.ranks[rs.rank_index].rank;
  p.start_ns = rs.start_ns;
  p.end_ns = rs.end_ns;
  std::vector<uint32_t> seen;
  uint32_t v = rs.sink;
  int64_t cursor = rs.end_ns;
  std::vector<PathSegment> back;  // latest first
  std::vector<uint32_t> back_activity;
  // Pieces of one activity's time in one category next to each other (an op's own time around a
  // child of no length) are one segment.
  const auto emit = [&](PathSegment s, int64_t from, uint32_t activity) {
    s.start_ns = from;
    s.dur_ns = cursor - from;
    cursor = from;
    if (s.dur_ns <= 0) return;
    if (!back.empty()) {
      PathSegment& b = back.back();
      if (back_activity.back() == activity && b.start_ns == s.start_ns + s.dur_ns && b.kind == s.kind &&
          b.category == s.category && b.peer_rank == s.peer_rank) {
        b.start_ns = s.start_ns;
        b.dur_ns += s.dur_ns;
        return;
      }
    }
    back.push_back(std::move(s));
    back_activity.push_back(activity);
  };
  while (v != rs.root) {
    visited[v] = 1;
    seen.push_back(v);
    const CpEdge* best = nullptr;
    for (uint32_t k = g.in_offsets[v]; k < g.in_offsets[v + 1]; ++k) {
      const CpEdge& e = g.edges[g.in_ids[k]];
      if (e.kind == CpEdgeKind::CrossRank || visited[e.from]) continue;  // the path stays on its rank
      if (!best) {
        best = &e;
        continue;
      }
      const int64_t te = g.nodes[e.from].t_ns, tb = g.nodes[best->from].t_ns;
      if (te > tb || (te == tb && cpTiePriority(e.kind) < cpTiePriority(best->kind))) best = &e;
    }
    if (!best) break;  // cannot happen in a well-formed graph; the rest of the step is left as idle below
    emit(cpSegmentOf(g, set, *best), std::clamp(g.nodes[best->from].t_ns, rs.start_ns, cursor), best->activity);
    v = best->from;
  }
  if (cursor > rs.start_ns) {
    PathSegment s;
    s.rank = p.rank;
    s.kind = "gap";
    s.name = "(no dependency found)";
    emit(s, rs.start_ns, UINT32_MAX);
  }
  for (uint32_t n : seen) visited[n] = 0;
  p.segments.assign(back.rbegin(), back.rend());
  for (const PathSegment& s : p.segments) p.by_category[size_t(s.category)] += s.dur_ns;
  return p;
}

std::string cpList(const std::set<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

// The step every rank that has steps has analysed: each rank's steps but (by HTA's rule, with two or
// more in the job) its last; the latest of those common to all. -1 when there is none.
int64_t cpDefaultStep(const TraceSet& set, bool whole_trace, std::string& why) {
  std::set<int64_t> all;
  for (const TraceIndex& idx : set.indexes)
    for (const ProfilerStep& s : idx.steps) all.insert(s.number);
  if (all.empty()) {
    why = "the traces have no ProfilerStep#N spans (profile with torch.profiler.schedule and call prof.step() each "
          "step)";
    return -1;
  }
  const bool drop_last = all.size() >= 2 && !whole_trace;
  std::set<int64_t> common;
  bool first = true;
  for (const TraceIndex& idx : set.indexes) {
    if (idx.steps.empty()) continue;
    std::set<int64_t> mine;
    for (size_t k = 0; k + (drop_last ? 1 : 0) < idx.steps.size(); ++k) mine.insert(idx.steps[k].number);
    if (first) common = mine;
    else {
      std::set<int64_t> both;
      std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(), std::inserter(both, both.begin()));
      common = both;
    }
    first = false;
  }
  if (common.empty()) {
    why = "no ProfilerStep is analysed on every rank (HTA leaves each rank's last step out; steps seen: " +
          cpList(all) + "); choose one with --critical-path-step";
    return -1;
  }
  return *common.rbegin();
}

std::string cpFmt(const char* f, double v) {
  char s[64];
  std::snprintf(s, sizeof s, f, v);
  return s;
}
std::string cpUs(int64_t ns) { return cpFmt("%.3f", double(ns) / 1000.0); }

std::string cpJsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char e[8];
      std::snprintf(e, sizeof e, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += e;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string cpCategoriesJson(const RankCriticalPath& p) {
  std::string s = "{";
  for (size_t c = 0; c < kPathCategories; ++c)
    s += std::string(c ? ", " : "") + "\"" + std::string(pathCategoryName(PathCategory(c))) + "\": " +
         cpUs(p.by_category[c]);
  return s + "}";
}

// The longest `cap` segments, in time order.
std::vector<const PathSegment*> cpLongest(const RankCriticalPath& p, size_t cap) {
  std::vector<const PathSegment*> v;
  for (const PathSegment& s : p.segments) v.push_back(&s);
  if (v.size() > cap) {
    std::stable_sort(v.begin(), v.end(), [](const PathSegment* a, const PathSegment* b) { return a->dur_ns > b->dur_ns; });
    v.resize(cap);
    std::stable_sort(v.begin(), v.end(), [](const PathSegment* a, const PathSegment* b) { return a->start_ns < b->start_ns; });
  }
  return v;
}

}  // namespace

CriticalPath computeCriticalPath(const TraceSet& set, const HostClocks& clocks, const CriticalPathOptions& options) {
  CriticalPath out;
  std::set<int64_t> all_steps;
  std::set<int64_t> loaded;
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    loaded.insert(set.ranks[r].rank);
    for (const ProfilerStep& s : set.indexes[r].steps) all_steps.insert(s.number);
  }
  if (options.step >= 0) {
    if (!all_steps.count(options.step))
      throw ConfigError("--critical-path-step " + std::to_string(options.step) + ": no rank's trace has ProfilerStep#" +
                        std::to_string(options.step) +
                        (all_steps.empty() ? std::string("; the traces have no ProfilerStep#N spans")
                                           : "; choose one of " + cpList(all_steps)));
    out.step = options.step;
    out.step_chosen = true;
  } else {
    out.step = cpDefaultStep(set, options.whole_trace, out.unavailable);
  }
  if (options.rank >= 0 && !loaded.count(options.rank))
    throw ConfigError("--critical-path-rank " + std::to_string(options.rank) + ": no trace of that rank was loaded; " +
                      "the ranks loaded are " + cpList(loaded));
  if (out.step < 0) {
    if (options.rank >= 0) out.rank_chosen = true;
    return out;
  }
  const CollectiveMatch match = matchCollectives(set);
  const CpGraph g = buildCriticalPathGraph(set, clocks, match, out.step);
  out.nodes = static_cast<int64_t>(g.nodes.size());
  out.edges = static_cast<int64_t>(g.edges.size());
  out.sync_edges = g.sync_edges;
  out.stream_wait_edges = g.stream_wait_edges;
  out.cross_rank_edges = g.cross_rank_edges;
  out.host_collectives_skipped = g.host_collectives_skipped;
  std::vector<uint8_t> visited(g.nodes.size(), 0);
  for (const CpRankStep& rs : g.ranks) out.ranks.push_back(cpWalk(g, set, rs, visited));
  std::stable_sort(out.ranks.begin(), out.ranks.end(),
                   [](const RankCriticalPath& a, const RankCriticalPath& b) { return a.rank < b.rank; });
  if (out.ranks.empty()) {
    out.unavailable = "no rank's ProfilerStep#" + std::to_string(out.step) + " has a duration";
    return out;
  }
  if (options.rank >= 0) {
    out.rank_chosen = true;
    const auto it = std::find_if(out.ranks.begin(), out.ranks.end(),
                                 [&](const RankCriticalPath& p) { return p.rank == options.rank; });
    if (it == out.ranks.end())
      throw ConfigError("--critical-path-rank " + std::to_string(options.rank) + ": rank " +
                        std::to_string(options.rank) + "'s trace has no ProfilerStep#" + std::to_string(out.step));
    out.shown = static_cast<size_t>(it - out.ranks.begin());
  } else {
    for (size_t i = 1; i < out.ranks.size(); ++i)
      if (out.ranks[i].end_ns > out.ranks[out.shown].end_ns) out.shown = i;
  }
  return out;
}

void printCriticalPathText(const CriticalPath& path, std::ostream& out) {
  out << "\ncritical path";
  if (!path.unavailable.empty()) {
    out << ": none (" << path.unavailable << ")\n";
    return;
  }
  const RankCriticalPath& p = *path.shownPath();
  out << " of ProfilerStep#" << path.step << (path.step_chosen ? "" : " (the last step every rank analysed)")
      << ", rank " << p.rank << (path.rank_chosen ? "" : " (its step ends last)") << ": " << cpUs(p.totalNs())
      << " us from the step's start to the end of its last CPU op or GPU event\n";
  for (size_t c = 0; c < kPathCategories; ++c) {
    const int64_t ns = p.by_category[c];
    std::string label(pathCategoryName(PathCategory(c)));
    label.resize(18, ' ');
    out << "  " << label << cpFmt("%12.3f", ns / 1000.0)
        << " us  " << cpFmt("%6.2f", p.totalNs() > 0 ? 100.0 * double(ns) / double(p.totalNs()) : 0.0) << " %\n";
  }
  if (path.ranks.size() > 1) {
    out << "  by rank (step us; waiting for another rank us):";
    for (const RankCriticalPath& r : path.ranks)
      out << "  " << r.rank << ": " << cpUs(r.totalNs()) << "; "
          << cpUs(r.by_category[size_t(PathCategory::WaitingForRank)]);
    out << "\n";
  }
  std::vector<const PathSegment*> top;
  for (const PathSegment& s : p.segments) top.push_back(&s);
  std::stable_sort(top.begin(), top.end(), [](const PathSegment* a, const PathSegment* b) { return a->dur_ns > b->dur_ns; });
  if (top.size() > kCriticalPathTextSegments) top.resize(kCriticalPathTextSegments);
  out << "  longest of its " << p.segments.size() << " segments (dur us / start us / category / kind / name):\n";
  for (const PathSegment* s : top) {
    out << "    " << cpFmt("%10.3f", s->dur_ns / 1000.0) << "  " << cpFmt("%12.3f", s->start_ns / 1000.0) << "  "
        << pathCategoryName(s->category) << "  " << s->kind << "  " << s->name.substr(0, 80);
    if (s->peer_rank >= 0) out << " (rank " << s->peer_rank << " started it last)";
    out << "\n";
  }
}

void writeCriticalPathJson(const CriticalPath& path, std::ostream& out) {
  if (!path.unavailable.empty()) {
    out << "{\"step\": " << (path.step >= 0 ? std::to_string(path.step) : std::string("null"))
        << ", \"unavailable\": " << cpJsonString(path.unavailable) << "}";
    return;
  }
  const RankCriticalPath& p = *path.shownPath();
  const std::vector<const PathSegment*> segs = cpLongest(p, kCriticalPathJsonSegments);
  out << "{\n    \"step\": " << path.step << ", \"step_chosen\": " << (path.step_chosen ? "true" : "false")
      << ", \"rank\": " << p.rank << ", \"rank_chosen\": " << (path.rank_chosen ? "true" : "false")
      << ",\n    \"start_us\": " << cpUs(p.start_ns) << ", \"end_us\": " << cpUs(p.end_ns)
      << ", \"total_us\": " << cpUs(p.totalNs()) << ",\n    \"by_category\": " << cpCategoriesJson(p)
      << ",\n    \"segments_total\": " << p.segments.size() << ", \"segments_cap\": " << kCriticalPathJsonSegments
      << ", \"segments_capped\": " << (segs.size() < p.segments.size() ? "true" : "false")
      << ",\n    \"segments\": [";
  for (size_t k = 0; k < segs.size(); ++k) {
    const PathSegment& s = *segs[k];
    out << (k ? ",\n      " : "\n      ") << "{\"rank\": " << s.rank << ", \"kind\": " << cpJsonString(s.kind)
        << ", \"name\": " << cpJsonString(s.name) << ", \"start_us\": " << cpUs(s.start_ns)
        << ", \"dur_us\": " << cpUs(s.dur_ns) << ", \"category\": \"" << pathCategoryName(s.category) << "\"";
    if (s.peer_rank >= 0) out << ", \"waiting_for_rank\": " << s.peer_rank;
    out << "}";
  }
  out << "],\n    \"per_rank\": [";
  for (size_t k = 0; k < path.ranks.size(); ++k) {
    const RankCriticalPath& r = path.ranks[k];
    out << (k ? ",\n      " : "\n      ") << "{\"rank\": " << r.rank << ", \"start_us\": " << cpUs(r.start_ns)
        << ", \"end_us\": " << cpUs(r.end_ns) << ", \"total_us\": " << cpUs(r.totalNs())
        << ", \"by_category\": " << cpCategoriesJson(r) << "}";
  }
  out << "],\n    \"graph\": {\"nodes\": " << path.nodes << ", \"edges\": " << path.edges
      << ", \"cross_rank_edges\": " << path.cross_rank_edges << ", \"sync_edges\": " << path.sync_edges
      << ", \"stream_wait_edges\": " << path.stream_wait_edges
      << ", \"host_collectives_skipped\": " << path.host_collectives_skipped << "}}";
}

}  // namespace shardscope::kineto
