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
#include "kineto/report_format.h"

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

PathCategory cpCategoryOf(const CpGraph& g, const CpEdge& e) {
  switch (e.kind) {
    case CpEdgeKind::Body: {
      const CpActivityClass cls = g.activities[e.activity].cls;
      return cls == CpActivityClass::Cpu       ? PathCategory::LaunchCpu
             : cls == CpActivityClass::GpuComm ? PathCategory::Communication
                                               : PathCategory::Compute;
    }
    case CpEdgeKind::Transfer: return PathCategory::Communication;
    case CpEdgeKind::Waiting:
    case CpEdgeKind::CrossRank: return PathCategory::WaitingForRank;
    case CpEdgeKind::ThreadGap:
    case CpEdgeKind::StreamOrder:
    case CpEdgeKind::StreamWait:
    case CpEdgeKind::Carry: return PathCategory::Idle;
    case CpEdgeKind::OpSelf:
    case CpEdgeKind::Fork:
    case CpEdgeKind::Launch:
    case CpEdgeKind::SyncWait: break;
  }
  return PathCategory::LaunchCpu;
}

// Edges whose segments read alike (the activity's own kind and name) share a label class.
int cpLabelClass(CpEdgeKind k) {
  return k == CpEdgeKind::Body || k == CpEdgeKind::OpSelf || k == CpEdgeKind::Transfer || k == CpEdgeKind::Waiting
             ? 0
             : 1 + int(k);
}

PathSegment cpSegmentOf(const CpGraph& g, const TraceSet& set, const CpEdge& e) {
  const CpActivity& a = g.activities[e.activity];
  const RankTrace& t = set.ranks[a.rank_index];
  const TraceEvent& ev = t.events[a.event];
  PathSegment s;
  s.rank = t.rank;
  s.category = cpCategoryOf(g, e);
  s.kind = std::string(cpEventKindName(ev.kind));
  s.name = std::string(t.str(ev.name));
  if (s.category == PathCategory::WaitingForRank) s.peer_rank = e.peer_rank;
  s.event = a.event;
  const auto gap = [&](const char* name) {
    s.kind = "gap";
    s.name = name;
    s.event = -1;
  };
  switch (e.kind) {
    case CpEdgeKind::Launch: s.kind = "launch_delay"; break;
    case CpEdgeKind::SyncWait: s.kind = "sync_wait"; break;
    case CpEdgeKind::ThreadGap: gap("(CPU thread idle)"); break;
    case CpEdgeKind::Fork: gap("(step thread, before another thread's op)"); break;
    case CpEdgeKind::StreamOrder: gap("(GPU stream idle)"); break;
    case CpEdgeKind::StreamWait: gap("(stream waiting on another stream)"); break;
    case CpEdgeKind::Carry: gap("(GPU idle before work launched earlier)"); break;
    default: break;
  }
  return s;
}

// The walk back from the rank's sink to its root through each node's latest predecessor; the
// segments themselves (names copied) only when keep_segments. visited: one flag per node of g,
// all clear; left clear.
RankCriticalPath cpWalk(const CpGraph& g, const TraceSet& set, const CpRankStep& rs, std::vector<uint8_t>& visited,
                        bool keep_segments) {
  RankCriticalPath p;
  p.rank = set.ranks[rs.rank_index].rank;
  p.start_ns = rs.start_ns;
  p.end_ns = rs.end_ns;
  std::vector<uint32_t> seen;
  uint32_t v = rs.sink;
  int64_t cursor = rs.end_ns;
  struct Piece {
    uint32_t edge;  // UINT32_MAX: the rest of the step, no dependency found
    int64_t start, dur;
  };
  std::vector<Piece> back;  // latest first
  // Pieces of one activity's time in one category next to each other (an op's own time around a
  // child of no length) are one segment.
  const auto emit = [&](uint32_t edge, int64_t from) {
    const Piece piece{edge, from, cursor - from};
    cursor = from;
    if (piece.dur <= 0) return;
    if (!back.empty() && edge != UINT32_MAX && back.back().edge != UINT32_MAX) {
      Piece& b = back.back();
      const CpEdge &x = g.edges[b.edge], &y = g.edges[edge];
      if (x.activity == y.activity && cpLabelClass(x.kind) == cpLabelClass(y.kind) &&
          cpCategoryOf(g, x) == cpCategoryOf(g, y) && b.start == piece.start + piece.dur) {
        b.start = piece.start;
        b.dur += piece.dur;
        return;
      }
    }
    back.push_back(piece);
  };
  while (v != rs.root) {
    visited[v] = 1;
    seen.push_back(v);
    uint32_t best = UINT32_MAX;
    for (uint32_t k = g.in_offsets[v]; k < g.in_offsets[v + 1]; ++k) {
      const uint32_t id = g.in_ids[k];
      const CpEdge& e = g.edges[id];
      if (e.kind == CpEdgeKind::CrossRank || visited[e.from]) continue;  // the path stays on its rank
      if (best == UINT32_MAX) {
        best = id;
        continue;
      }
      const CpEdge& b = g.edges[best];
      const int64_t te = g.nodes[e.from].t_ns, tb = g.nodes[b.from].t_ns;
      if (te > tb || (te == tb && cpTiePriority(e.kind) < cpTiePriority(b.kind))) best = id;
    }
    if (best == UINT32_MAX) break;  // cannot happen in a well-formed graph; the rest is left as idle below
    emit(best, std::clamp(g.nodes[g.edges[best].from].t_ns, rs.start_ns, cursor));
    v = g.edges[best].from;
  }
  if (cursor > rs.start_ns) emit(UINT32_MAX, rs.start_ns);
  for (uint32_t n : seen) visited[n] = 0;
  for (const Piece& piece : back)
    p.by_category[size_t(piece.edge == UINT32_MAX ? PathCategory::Idle : cpCategoryOf(g, g.edges[piece.edge]))] +=
        piece.dur;
  p.segment_count = static_cast<int64_t>(back.size());
  if (keep_segments) {
    p.segments.reserve(back.size());
    for (auto it = back.rbegin(); it != back.rend(); ++it) {
      PathSegment s;
      if (it->edge == UINT32_MAX) {
        s.rank = p.rank;
        s.kind = "gap";
        s.name = "(no dependency found)";
      } else {
        s = cpSegmentOf(g, set, g.edges[it->edge]);
      }
      s.start_ns = it->start;
      s.dur_ns = it->dur;
      p.segments.push_back(std::move(s));
    }
  }
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

CriticalPath computeCriticalPath(const TraceSet& set, const CriticalPathOptions& options) {
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
  const CpGraph g = buildCriticalPathGraph(set, alignHostClocks(set, match), match, out.step);
  out.nodes = static_cast<int64_t>(g.nodes.size());
  out.edges = static_cast<int64_t>(g.edges.size());
  out.sync_edges = g.sync_edges;
  out.stream_wait_edges = g.stream_wait_edges;
  out.cross_rank_edges = g.cross_rank_edges;
  out.host_collectives_skipped = g.host_collectives_skipped;
  out.stream_waits_from_args = g.stream_waits_from_args;
  out.stream_waits_inferred = g.stream_waits_inferred;
  if (g.ranks.empty()) {
    out.unavailable = "no rank's ProfilerStep#" + std::to_string(out.step) + " has a duration";
    return out;
  }
  // The rank shown: the chosen one, else the one whose step ends last (ties: the lowest rank).
  // Only its segments are kept (a job of many ranks has many thousands on each).
  const auto rankOf = [&](const CpRankStep& rs) { return set.ranks[rs.rank_index].rank; };
  size_t shown = g.ranks.size();
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    if (options.rank >= 0) {
      if (rankOf(g.ranks[i]) == options.rank) shown = i;
    } else if (shown == g.ranks.size() || g.ranks[i].end_ns > g.ranks[shown].end_ns ||
               (g.ranks[i].end_ns == g.ranks[shown].end_ns && rankOf(g.ranks[i]) < rankOf(g.ranks[shown]))) {
      shown = i;
    }
  }
  if (shown == g.ranks.size())
    throw ConfigError("--critical-path-rank " + std::to_string(options.rank) + ": rank " +
                      std::to_string(options.rank) + "'s trace has no ProfilerStep#" + std::to_string(out.step));
  out.rank_chosen = options.rank >= 0;
  std::vector<uint8_t> visited(g.nodes.size(), 0);
  for (size_t i = 0; i < g.ranks.size(); ++i) out.ranks.push_back(cpWalk(g, set, g.ranks[i], visited, i == shown));
  const int shown_rank = out.ranks[shown].rank;
  std::stable_sort(out.ranks.begin(), out.ranks.end(),
                   [](const RankCriticalPath& a, const RankCriticalPath& b) { return a.rank < b.rank; });
  for (size_t i = 0; i < out.ranks.size(); ++i)
    if (out.ranks[i].rank == shown_rank) out.shown = i;
  return out;
}

std::vector<int64_t> criticalPathOps(const CriticalPath& path) {
  std::vector<int64_t> ops;
  if (const RankCriticalPath* p = path.shownPath())
    for (const PathSegment& seg : p->segments)
      if (seg.event >= 0) ops.push_back(seg.event);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

std::string_view streamWaitsFrom(const CriticalPath& path) {
  if (path.stream_waits_from_args > 0) return path.stream_waits_inferred > 0 ? "trace_args_and_heuristic" : "trace_args";
  return path.stream_waits_inferred > 0 ? "heuristic" : "none";
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
      << " us from the step's start to its end or its GPU work's, whichever is later\n";
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
  if (path.stream_waits_from_args + path.stream_waits_inferred > 0)
    out << "  stream waits: " << path.stream_waits_from_args
        << " from the trace's cuda_sync args (wait_on_stream, wait_on_cuda_event_record_corr_id), "
        << path.stream_waits_inferred << " inferred (no such args: the GPU event last launched onto another stream)\n";
  std::vector<const PathSegment*> top;
  for (const PathSegment& s : p.segments) top.push_back(&s);
  std::stable_sort(top.begin(), top.end(), [](const PathSegment* a, const PathSegment* b) { return a->dur_ns > b->dur_ns; });
  if (top.size() > kCriticalPathTextSegments) top.resize(kCriticalPathTextSegments);
  out << "  longest of its " << p.segment_count << " segments (dur us / start us / category / kind / name):\n";
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
        << ", \"unavailable\": " << reportJsonString(path.unavailable) << "}";
    return;
  }
  const RankCriticalPath& p = *path.shownPath();
  const std::vector<const PathSegment*> segs = cpLongest(p, kCriticalPathJsonSegments);
  out << "{\n    \"step\": " << path.step << ", \"step_chosen\": " << (path.step_chosen ? "true" : "false")
      << ", \"rank\": " << p.rank << ", \"rank_chosen\": " << (path.rank_chosen ? "true" : "false")
      << ",\n    \"start_us\": " << cpUs(p.start_ns) << ", \"end_us\": " << cpUs(p.end_ns)
      << ", \"total_us\": " << cpUs(p.totalNs()) << ",\n    \"by_category\": " << cpCategoriesJson(p)
      << ",\n    \"segments_total\": " << p.segment_count << ", \"segments_cap\": " << kCriticalPathJsonSegments
      << ", \"segments_capped\": " << (segs.size() < p.segments.size() ? "true" : "false")
      << ",\n    \"segments\": [";
  for (size_t k = 0; k < segs.size(); ++k) {
    const PathSegment& s = *segs[k];
    out << (k ? ",\n      " : "\n      ") << "{\"rank\": " << s.rank << ", \"kind\": " << reportJsonString(s.kind)
        << ", \"name\": " << reportJsonString(s.name) << ", \"start_us\": " << cpUs(s.start_ns)
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
      << ", \"stream_waits_from\": \"" << streamWaitsFrom(path) << "\", \"stream_waits_from_args\": "
      << path.stream_waits_from_args << ", \"stream_waits_inferred\": " << path.stream_waits_inferred
      << ", \"host_collectives_skipped\": " << path.host_collectives_skipped << "}}";
}

}  // namespace shardscope::kineto
