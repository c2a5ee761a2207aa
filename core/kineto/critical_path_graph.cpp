#include "kineto/critical_path_graph.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "kineto/hta_rules.h"

namespace shardscope::kineto {

namespace {

constexpr uint32_t kCpNone = UINT32_MAX;

bool cpIsHostOp(const TraceEvent& e) {
  return e.ph == 'X' && e.has(kHasDur) && (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation ||
                                           e.kind == EventKind::CudaRuntime || e.kind == EventKind::CudaDriver);
}

bool cpIsGpuWork(const TraceEvent& e) {
  return e.ph == 'X' && e.has(kHasDur) &&
         (e.kind == EventKind::Kernel || e.kind == EventKind::GpuMemcpy || e.kind == EventKind::GpuMemset);
}

// CPU calls that block until GPU work is done.
bool cpIsBlockingSync(std::string_view name) {
  return name == "cudaDeviceSynchronize" || name == "cudaStreamSynchronize" || name == "cudaEventSynchronize" ||
         name == "cudaMemcpy" || name == "cuCtxSynchronize" || name == "cuStreamSynchronize" ||
         name == "cuEventSynchronize" || name == "hipDeviceSynchronize" || name == "hipStreamSynchronize" ||
         name == "hipEventSynchronize";
}

bool cpIsStreamWait(std::string_view name) {
  return name == "cudaStreamWaitEvent" || name == "cuStreamWaitEvent" || name == "hipStreamWaitEvent";
}

// Room for `more` elements, growing geometrically (the ranks' parts are added one after another).
template <typename T>
void cpReserve(std::vector<T>& v, size_t more) {
  if (v.capacity() < v.size() + more) v.reserve(std::max(v.size() + more, 2 * v.capacity()));
}

// Builds one rank's part of the graph.
class CpRankBuilder {
 public:
  CpRankBuilder(CpGraph& g, const TraceSet& set, const HostClocks& clocks, uint32_t r)
      : m_g(g), m_t(set.ranks[r]), m_idx(set.indexes[r]), m_r(r), m_clocks(clocks), m_set(set),
        m_act_of_event(m_t.events.size(), kCpNone) {}

  // Adds the rank's nodes and edges for the step op `step_event`; returns its CpRankStep.
  CpRankStep build(uint32_t step_event) {
    const TraceEvent& p = m_t.events[step_event];
    CpRankStep rs;
    rs.rank_index = m_r;
    rs.step_event = step_event;
    addCpuOps(p, step_event);
    rs.root = m_g.activities[m_act_of_event[step_event]].start;
    addGpuWork(rs.root, p);
    addSyncs();
    addStreamWaits();
    // The step ends with its op or with the last GPU event launched in it, whichever is later (an op of
    // another thread that outlasts the step, a data loader's say, does not stretch it).
    rs.sink = m_g.activities[m_act_of_event[step_event]].end;
    for (uint32_t g : m_gpu)
      if (!act(g).carried && endOf(g) > m_g.nodes[rs.sink].t_ns) rs.sink = act(g).end;
    rs.start_ns = m_g.nodes[rs.root].t_ns;
    rs.end_ns = m_g.nodes[rs.sink].t_ns;
    return rs;
  }

  uint32_t activityOf(uint32_t event) const { return m_act_of_event[event]; }

 private:
  int64_t common(int64_t ts) const { return m_clocks.commonNs(m_set, m_r, ts) - m_set.origin_ns; }

  uint32_t node(int64_t t, uint32_t activity) {
    m_g.nodes.push_back({t, activity, m_r});
    return static_cast<uint32_t>(m_g.nodes.size() - 1);
  }

  uint32_t activity(uint32_t event, CpActivityClass cls, int64_t start_override = INT64_MIN) {
    const TraceEvent& e = m_t.events[event];
    CpActivity a;
    a.event = event;
    a.rank_index = m_r;
    a.cls = cls;
    const uint32_t id = static_cast<uint32_t>(m_g.activities.size());
    const int64_t s = common(e.ts_ns);
    a.start = node(std::max(s, start_override), id);
    a.end = node(std::max(common(e.endNs()), m_g.nodes[a.start].t_ns), id);
    m_g.activities.push_back(a);
    m_act_of_event[event] = id;
    return id;
  }

  void edge(uint32_t from, uint32_t to, CpEdgeKind kind, uint32_t activity) {
    if (kind == CpEdgeKind::Body) m_g.activities[activity].body = static_cast<uint32_t>(m_g.edges.size());
    m_g.edges.push_back({from, to, kind, activity, -1});
  }

  const CpActivity& act(uint32_t id) const { return m_g.activities[id]; }
  int64_t startOf(uint32_t id) const { return m_g.nodes[act(id).start].t_ns; }
  int64_t endOf(uint32_t id) const { return m_g.nodes[act(id).end].t_ns; }

  // CPU ops of the step: on the step's thread those inside it, on other threads those starting in it.
  void addCpuOps(const TraceEvent& p, uint32_t step_event) {
    std::map<uint32_t, std::vector<uint32_t>> by_track;
    for (uint32_t i = 0; i < m_t.events.size(); ++i) {
      const TraceEvent& e = m_t.events[i];
      if (!cpIsHostOp(e) || e.ts_ns < p.ts_ns) continue;
      if (e.track == p.track ? e.endNs() <= p.endNs() : e.ts_ns < p.endNs()) by_track[e.track].push_back(i);
    }
    size_t ops_in_step = 0;
    for (const auto& [track, ops] : by_track) ops_in_step += ops.size();
    // Most ops launch a GPU event: room for both, two nodes and about three edges each.
    cpReserve(m_g.activities, 2 * ops_in_step);
    cpReserve(m_g.nodes, 4 * ops_in_step);
    cpReserve(m_g.edges, 6 * ops_in_step);
    // The step's thread first, so the others can fork from its nodes.
    std::vector<uint32_t> tracks{p.track};
    for (const auto& [track, ops] : by_track)
      if (track != p.track) tracks.push_back(track);
    std::vector<uint32_t> root_nodes;  // the step thread's nodes, by time
    for (uint32_t track : tracks) {
      std::vector<uint32_t>& ops = by_track[track];
      std::sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t b) {
        const TraceEvent &x = m_t.events[a], &y = m_t.events[b];
        if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
        if (x.dur_ns != y.dur_ns) return x.dur_ns > y.dur_ns;  // the enclosing op first
        if ((a == step_event) != (b == step_event)) return a == step_event;
        return a < b;
      });
      if (track == p.track) {  // the step op is the root of its thread
        ops.erase(std::remove(ops.begin(), ops.end(), step_event), ops.end());
        ops.insert(ops.begin(), step_event);
      }
      struct Open {
        uint32_t act;
        uint32_t last_child = kCpNone;
      };
      std::vector<Open> stack;
      uint32_t prev_top = kCpNone;
      const auto close = [&] {
        const Open o = stack.back();
        stack.pop_back();
        if (o.last_child == kCpNone) edge(act(o.act).start, act(o.act).end, CpEdgeKind::Body, o.act);
        else edge(act(o.last_child).end, act(o.act).end, CpEdgeKind::OpSelf, o.act);
      };
      for (uint32_t ev : ops) {
        const uint32_t a = activity(ev, CpActivityClass::Cpu);
        while (!stack.empty() && !(startOf(a) >= startOf(stack.back().act) && endOf(a) <= endOf(stack.back().act)))
          close();
        if (!stack.empty()) {
          Open& parent = stack.back();
          if (parent.last_child == kCpNone) edge(act(parent.act).start, act(a).start, CpEdgeKind::OpSelf, parent.act);
          else edge(act(parent.last_child).end, act(a).start, CpEdgeKind::OpSelf, parent.act);
          parent.last_child = a;
        } else if (prev_top != kCpNone) {
          edge(act(prev_top).end, act(a).start, CpEdgeKind::ThreadGap, a);
        } else if (track != p.track) {
          // Another thread's first op hangs from the step thread's latest node at or before it.
          auto pos = std::upper_bound(root_nodes.begin(), root_nodes.end(), startOf(a),
                                      [&](int64_t t, uint32_t n) { return t < m_g.nodes[n].t_ns; });
          const uint32_t from = pos == root_nodes.begin() ? root_nodes.front() : *(pos - 1);
          edge(from, act(a).start, CpEdgeKind::Fork, a);
        }
        if (stack.empty()) prev_top = a;
        stack.push_back({a});
      }
      while (!stack.empty()) close();
      if (track == p.track) {
        for (uint32_t ev : ops) {
          root_nodes.push_back(act(m_act_of_event[ev]).start);
          root_nodes.push_back(act(m_act_of_event[ev]).end);
        }
        std::stable_sort(root_nodes.begin(), root_nodes.end(),
                         [&](uint32_t x, uint32_t y) { return m_g.nodes[x].t_ns < m_g.nodes[y].t_ns; });
      }
    }
  }

  CpActivityClass gpuClass(uint32_t event) const {
    const TraceEvent& e = m_t.events[event];
    const bool comm = (m_idx.collective_of_event.size() > event && m_idx.collective_of_event[event] != kNone) ||
                      (e.kind == EventKind::Kernel && htaKernelType(m_t.str(e.name)) == HtaKernelType::Communication);
    return comm ? CpActivityClass::GpuComm : CpActivityClass::GpuCompute;
  }

  // GPU events launched by the step's calls, and those launched before it that still run in it.
  void addGpuWork(uint32_t root, const TraceEvent& p) {
    const int64_t step_start = m_g.nodes[root].t_ns;
    std::map<uint32_t, std::vector<uint32_t>> lanes;  // track -> GPU activities
    for (uint32_t i = 0; i < m_t.events.size(); ++i) {
      const TraceEvent& e = m_t.events[i];
      if (!cpIsGpuWork(e)) continue;
      uint32_t launch = kCpNone;
      if (e.correlation >= 0)
        if (const auto l = m_idx.launch_of_correlation.find(e.correlation); l != m_idx.launch_of_correlation.end())
          launch = activityOf(l->second);
      uint32_t a;
      if (launch != kCpNone) {
        a = activity(i, gpuClass(i));
        m_g.activities[a].launch = launch;
        edge(act(launch).start, act(a).start, CpEdgeKind::Launch, launch);
      } else if (e.endNs() > p.ts_ns && e.ts_ns < p.endNs() && common(e.endNs()) > step_start) {
        // Launched before the step (or by a call outside it): it holds its stream into the step.
        const bool before = [&] {
          if (e.correlation < 0) return e.ts_ns < p.ts_ns;
          const auto l = m_idx.launch_of_correlation.find(e.correlation);
          return l == m_idx.launch_of_correlation.end() ? e.ts_ns < p.ts_ns : m_t.events[l->second].ts_ns < p.ts_ns;
        }();
        if (!before) continue;
        a = activity(i, gpuClass(i), step_start);
        m_g.activities[a].carried = true;
        edge(root, act(a).start, CpEdgeKind::Carry, a);
      } else {
        continue;
      }
      edge(act(a).start, act(a).end, CpEdgeKind::Body, a);
      lanes[e.track].push_back(a);
      m_gpu.push_back(a);
    }
    for (auto& [track, acts] : lanes) {
      std::stable_sort(acts.begin(), acts.end(), [&](uint32_t x, uint32_t y) { return startOf(x) < startOf(y); });
      for (size_t k = 1; k < acts.size(); ++k) edge(act(acts[k - 1]).end, act(acts[k]).start, CpEdgeKind::StreamOrder, acts[k]);
    }
    m_gpu_by_end = m_gpu;
    std::stable_sort(m_gpu_by_end.begin(), m_gpu_by_end.end(), [&](uint32_t x, uint32_t y) { return endOf(x) < endOf(y); });
  }

  // A blocking call's end waits for the latest GPU event, launched before the call, that ended by then;
  // a cudaEventSynchronize whose "Event Sync" names the awaited event (awaitedFromArgs), for that one.
  void addSyncs() {
    const std::unordered_map<int64_t, SyncOf> syncs = syncsByCorrelation();
    const std::vector<uint32_t> by_launch = gpuByLaunch();
    const size_t n = m_g.activities.size();
    for (uint32_t a = 0; a < n; ++a) {
      const CpActivity& c = act(a);
      const TraceEvent& e = m_t.events[c.event];
      if (c.rank_index != m_r || c.cls != CpActivityClass::Cpu || !cpIsBlockingSync(m_t.str(e.name))) continue;
      if (const auto it = e.correlation >= 0 ? syncs.find(e.correlation) : syncs.end(); it != syncs.end()) {
        bool from_args = false;
        const uint32_t g = awaitedFromArgs(it->second.args, a, by_launch, from_args);
        if (from_args) {
          if (g != kCpNone && endOf(g) <= endOf(a)) {
            edge(act(g).end, c.end, CpEdgeKind::SyncWait, a);
            ++m_g.sync_edges;
          }
          continue;
        }
      }
      auto pos = std::upper_bound(m_gpu_by_end.begin(), m_gpu_by_end.end(), endOf(a),
                                  [&](int64_t t, uint32_t g) { return t < endOf(g); });
      for (int scanned = 0; pos != m_gpu_by_end.begin() && scanned < 64; ++scanned) {
        const uint32_t g = *--pos;
        const CpActivity& ga = act(g);
        if (ga.carried || startOf(ga.launch) <= startOf(a)) {
          edge(ga.end, c.end, CpEdgeKind::SyncWait, a);
          ++m_g.sync_edges;
          break;
        }
      }
    }
  }

  int32_t streamOf(uint32_t a) const {
    const TraceEvent& e = m_t.events[act(a).event];
    return e.stream >= 0 ? e.stream : -2 - int32_t(e.track);
  }

  // What a cudaStreamWaitEvent / cudaEventSynchronize call (by its correlation) waited for, from its
  // cuda_sync event: the waiting stream, and the trace's args naming the awaited event (SyncArgs).
  struct SyncOf {
    int32_t stream = -1;
    const SyncArgs* args = nullptr;
  };
  std::unordered_map<int64_t, SyncOf> syncsByCorrelation() const {
    std::unordered_map<int64_t, SyncOf> out;
    for (const TraceEvent& e : m_t.events)
      if (e.kind == EventKind::CudaSync && e.correlation >= 0)
        out[e.correlation] = {e.stream, e.extra != kNone ? &m_t.sync_args[e.extra] : nullptr};
    return out;
  }

  // The GPU event a wait was for, from the trace's args (Kineto's wait_on_stream and
  // wait_on_cuda_event_record_corr_id, HTA's rule): the last one launched, before the cudaEventRecord
  // call, onto the stream the event was recorded on (from the record call's thread when the trace
  // names no stream); without the record call in the trace, the last launched onto that stream before
  // the wait call. kCpNone when the args do not say; `said` tells whether they did.
  uint32_t awaitedFromArgs(const SyncArgs* w, uint32_t wait_call, const std::vector<uint32_t>& by_launch,
                           bool& said) const {
    said = false;
    if (!w) return kCpNone;
    int64_t before = startOf(wait_call);
    int64_t record_track = -1;
    if (w->record_correlation >= 0)
      if (const auto r = m_idx.launch_of_correlation.find(w->record_correlation); r != m_idx.launch_of_correlation.end()) {
        before = common(m_t.events[r->second].ts_ns);
        record_track = m_t.events[r->second].track;
      }
    if (w->wait_on_stream < 0 && record_track < 0) return kCpNone;
    said = true;
    uint32_t source = kCpNone;
    for (uint32_t g : by_launch) {
      const uint32_t l = act(g).launch;
      if (startOf(l) >= before) break;
      if (w->wait_on_stream >= 0 ? streamOf(g) == w->wait_on_stream : int64_t(m_t.events[act(l).event].track) == record_track)
        source = g;
    }
    return source;
  }

  // GPU events not carried into the step, by their launch's start.
  std::vector<uint32_t> gpuByLaunch() const {
    std::vector<uint32_t> by_launch;
    for (uint32_t g : m_gpu)
      if (!act(g).carried) by_launch.push_back(g);
    std::stable_sort(by_launch.begin(), by_launch.end(),
                     [&](uint32_t x, uint32_t y) { return startOf(act(x).launch) < startOf(act(y).launch); });
    return by_launch;
  }

  // cudaStreamWaitEvent on a thread: the next launch from that thread (onto the stream the trace's
  // cuda_sync event names, when it has one) waits for the GPU event the trace's args name (see
  // awaitedFromArgs); in traces without them, for the GPU event last launched onto another stream.
  void addStreamWaits() {
    const std::unordered_map<int64_t, SyncOf> syncs = syncsByCorrelation();
    const std::vector<uint32_t> by_launch = gpuByLaunch();
    const size_t n = m_g.activities.size();
    for (uint32_t a = 0; a < n; ++a) {
      const CpActivity& c = act(a);
      const TraceEvent& e = m_t.events[c.event];
      if (c.rank_index != m_r || c.cls != CpActivityClass::Cpu || !cpIsStreamWait(m_t.str(e.name))) continue;
      const int64_t lw = startOf(a);
      const auto it = e.correlation >= 0 ? syncs.find(e.correlation) : syncs.end();
      const bool has_stream = it != syncs.end() && it->second.stream >= 0;
      uint32_t target = kCpNone;
      for (uint32_t g : by_launch) {
        const uint32_t l = act(g).launch;
        if (startOf(l) <= lw) continue;
        const bool match = has_stream ? streamOf(g) == it->second.stream : m_t.events[act(l).event].track == e.track;
        if (match) {
          target = g;
          break;
        }
      }
      if (target == kCpNone) continue;
      bool from_args = false;
      uint32_t source = awaitedFromArgs(it != syncs.end() ? it->second.args : nullptr, a, by_launch, from_args);
      ++(from_args ? m_g.stream_waits_from_args : m_g.stream_waits_inferred);
      if (!from_args)
        for (uint32_t g : by_launch) {
          if (startOf(act(g).launch) >= lw) break;
          if (streamOf(g) != streamOf(target)) source = g;
        }
      if (source == kCpNone || source == target || endOf(source) > startOf(target)) continue;  // it did not hold the stream
      edge(act(source).end, act(target).start, CpEdgeKind::StreamWait, target);
      ++m_g.stream_wait_edges;
    }
  }

  CpGraph& m_g;
  const RankTrace& m_t;
  const TraceIndex& m_idx;
  uint32_t m_r;
  const HostClocks& m_clocks;
  const TraceSet& m_set;
  std::vector<uint32_t> m_act_of_event;  // by event: its activity, kCpNone
  std::vector<uint32_t> m_gpu, m_gpu_by_end;
};

}  // namespace

CpGraph buildCriticalPathGraph(const TraceSet& set, const HostClocks& clocks, const CollectiveMatch& match,
                               int64_t step) {
  CpGraph g;
  g.step = step;
  std::vector<std::unordered_map<uint32_t, uint32_t>> kernel_activity(set.ranks.size());
  for (uint32_t r = 0; r < set.ranks.size(); ++r) {
    const TraceIndex& idx = set.indexes[r];
    uint32_t step_event = kCpNone;
    for (const ProfilerStep& s : idx.steps)
      if (s.number == step) {
        step_event = s.event;
        break;
      }
    if (step_event == kCpNone || !cpIsHostOp(set.ranks[r].events[step_event])) continue;
    CpRankBuilder b(g, set, clocks, r);
    g.ranks.push_back(b.build(step_event));
    for (const TraceCollective& c : idx.collectives)
      if (c.kernel != kNone)
        if (const uint32_t a = b.activityOf(c.kernel); a != kCpNone && !g.activities[a].carried) kernel_activity[r][c.kernel] = a;
  }
  // Across ranks: no copy of a matched collective ends before its last copy started.
  for (const MatchedCollective& mc : match.collectives) {
    std::vector<std::pair<uint32_t, uint32_t>> copies;  // (rank index, activity)
    bool host_only = false;
    for (const CollectiveEntry& e : mc.entries) {
      const TraceCollective& c = set.indexes[e.rank_index].collectives[e.collective];
      if (c.kernel == kNone) {
        host_only = true;
        continue;
      }
      const auto it = kernel_activity[e.rank_index].find(c.kernel);
      if (it != kernel_activity[e.rank_index].end()) copies.push_back({uint32_t(e.rank_index), it->second});
    }
    if (host_only) ++g.host_collectives_skipped;
    if (copies.size() < 2) continue;
    size_t last = 0;  // ties: the lower rank (entries are by rank index)
    for (size_t i = 1; i < copies.size(); ++i)
      if (g.nodes[g.activities[copies[i].second].start].t_ns > g.nodes[g.activities[copies[last].second].start].t_ns)
        last = i;
    const CpActivity& la = g.activities[copies[last].second];
    const int64_t arrival = g.nodes[la.start].t_ns;
    const int peer = set.ranks[copies[last].first].rank;
    for (const auto& [r, a] : copies) {
      const CpActivity& ca = g.activities[a];
      if (g.nodes[ca.start].t_ns >= arrival) continue;
      // The copy's own span splits at the last arrival: waiting before, the transfer after.
      const uint32_t arrived = static_cast<uint32_t>(g.nodes.size());
      g.nodes.push_back({std::min(arrival, g.nodes[ca.end].t_ns), a, r});
      if (ca.body != UINT32_MAX) {
        g.edges[ca.body].kind = CpEdgeKind::Transfer;
        g.edges[ca.body].from = arrived;
      }
      g.edges.push_back({ca.start, arrived, CpEdgeKind::Waiting, a, peer});
      g.edges.push_back({la.start, arrived, CpEdgeKind::CrossRank, a, peer});
      ++g.cross_rank_edges;
    }
  }
  // In-edges by node, compact (a job's step can have millions of nodes).
  g.in_offsets.assign(g.nodes.size() + 1, 0);
  for (const CpEdge& e : g.edges) ++g.in_offsets[e.to + 1];
  for (size_t n = 0; n < g.nodes.size(); ++n) g.in_offsets[n + 1] += g.in_offsets[n];
  g.in_ids.resize(g.edges.size());
  std::vector<uint32_t> fill(g.in_offsets.begin(), g.in_offsets.end() - 1);
  for (uint32_t id = 0; id < g.edges.size(); ++id) g.in_ids[fill[g.edges[id].to]++] = id;
  return g;
}

}  // namespace shardscope::kineto
