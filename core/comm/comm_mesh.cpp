#include "comm/comm_mesh.h"

#include "trace/run_trace.h"

#include "comm/gloo_communicator.h"
#include "comm/meta_communicator.h"
#include "comm/peer_fingerprint_check.h"
#include "common/log.h"
#include "common/thread_start.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace shardscope {

namespace {
// "0..7" for a run of ranks, "0, 4, .., 12" for a stride, else the list.
std::string rankList(const std::vector<int>& m) {
  if (m.size() < 3) return m.size() == 2 ? std::to_string(m[0]) + ", " + std::to_string(m[1]) : std::to_string(m[0]);
  const int stride = m[1] - m[0];
  bool even = true;
  for (size_t i = 1; i < m.size(); ++i) even &= m[i] - m[i - 1] == stride;
  const std::string first = std::to_string(m.front()), last = std::to_string(m.back());
  if (even) return stride == 1 ? first + ".." + last : first + ", " + std::to_string(m[1]) + ", .., " + last;
  std::string s;
  for (size_t i = 0; i < m.size(); ++i) s += (i ? ", " : "") + std::to_string(m[i]);
  return s;
}
}  // namespace

CommMesh::CommMesh(int ranks, int shard_group, RankStatusBoard& board, RunControl& control,
                   int timeout_ms, int transport_timeout_ms, bool meta, CommunicatorFactory* gpu, int tp, int pp)
    : m_ranks(ranks), m_shardGroup(shard_group), m_meta(meta), m_gpu(gpu), m_timeoutMs(timeout_ms) {
  // The same layout a trace reader derives from the config (trace/run_trace.h).
  for (CommGroup& g : meshGroups(ranks, shard_group, tp, pp))
    addGroup(g.name, std::move(g.ranks), board, control, timeout_ms, transport_timeout_ms);
}

CommMesh::CommMesh(int ranks, int shard_group, int tp, int pp, const MeshProcess& process, int timeout_ms,
                   int transport_timeout_ms, CommunicatorFactory* device)
    : m_ranks(ranks), m_shardGroup(shard_group), m_meta(false), m_gpu(device), m_timeoutMs(timeout_ms) {
  // Every process connects its groups in the mesh's one order, so the lowest
  // group not yet connected always has all its members at its rendezvous.
  for (CommGroup& g : meshGroups(ranks, shard_group, tp, pp)) {
    const int id = static_cast<int>(m_specs.size());
    const int size = static_cast<int>(g.ranks.size());
    const auto it = std::find(g.ranks.begin(), g.ranks.end(), process.rank);
    std::vector<std::unique_ptr<Communicator>> comms(static_cast<size_t>(size));
    std::unique_ptr<CollectiveCheck> check;
    if (it != g.ranks.end()) {
      const int group_rank = static_cast<int>(it - g.ranks.begin());
      auto comm = connectGlooMember(size, group_rank, process.prefix + "/" + g.name, *process.store, process.hostname,
                                    transport_timeout_ms, process.connect_timeout_ms);
      check = std::make_unique<PeerFingerprintCheck>(g.name, g.ranks, *comm, std::chrono::milliseconds(timeout_ms));
      if (device) {
        // Gloo first: its connect has met every member, so the device
        // transport's bootstrap starts with all of them there.
        m_checkComms.push_back(std::move(comm));
        comms[static_cast<size_t>(group_rank)] = device->connectMember(g.name, g.ranks, group_rank, process);
      } else {
        comms[static_cast<size_t>(group_rank)] = std::move(comm);
      }
    }
    m_comms.push_back(std::move(comms));
    m_monitors.push_back(std::move(check));
    m_specs.push_back({id, g.name, std::move(g.ranks)});
  }
}

CommMesh::~CommMesh() {
  // Tearing a Gloo group down costs time per connection; do the groups in
  // parallel, and in this thread what no new thread can be started for.
  JoinedThreads workers;
  auto close = [this, &workers](std::unique_ptr<Communicator>& comm) {
    if (!comm) return;
    if (m_meta) {  // no connection to tear down: a thread each would cost more than the close
      comm.reset();
      return;
    }
    try {
      workers.start("closing a communicator", [&comm] { comm.reset(); });
    } catch (const ResourceError&) {
      comm.reset();
    }
  };
  for (auto& group : m_comms)
    for (auto& comm : group) close(comm);
  for (auto& comm : m_checkComms) close(comm);
  workers.joinAll();
}

void CommMesh::addGroup(const std::string& name, std::vector<int> members, RankStatusBoard& board,
                        RunControl& control, int timeout_ms, int transport_timeout_ms) {
  const int id = static_cast<int>(m_specs.size());
  const int size = static_cast<int>(members.size());
  if (m_meta) m_comms.push_back(createMetaGroup(size));
  else if (m_gpu) m_comms.push_back(m_gpu->createGroup(name, members));
  else m_comms.push_back(createGlooGroup(size, name, transport_timeout_ms));
  auto monitor = std::make_unique<CollectiveMonitor>(name, members, board, control, std::chrono::milliseconds(timeout_ms));
  m_inProcess.push_back(monitor.get());
  m_monitors.push_back(std::move(monitor));
  spdlog::logger& log = logger(LogComponent::Comm);
  if (log.should_log(spdlog::level::debug))
    SPDLOG_LOGGER_DEBUG(&log, "group {} '{}': {} ranks ({}) over {}", id, name, size, rankList(members),
                        m_meta ? "meta (no transport)" : m_gpu ? "the device runtime" : "gloo");
  m_specs.push_back({id, name, std::move(members)});
}

void CommMesh::setSimulated(const std::vector<bool>& simulated_by_rank) {
  for (CollectiveMonitor* monitor : m_inProcess) monitor->setSimulated(simulated_by_rank);
}

void CommMesh::abortAll() {
  for (auto& group : m_comms)
    for (auto& comm : group)
      if (comm) comm->abort();
  for (auto& comm : m_checkComms) comm->abort();
}

namespace {

// Files group `id` named `name` under its role in g.
void fileGroup(CommMesh::RankGroups& g, const std::string& name, int id) {
  if (name == "world") g.world = id;
  else if (name.ends_with(".gather")) g.gather = id;
  else if (name.ends_with(".reduce")) g.reduce = id;
  else if (name.starts_with("replica") || name.find(".replica") != std::string::npos) g.replicate = id;
  else if (name.starts_with("tp")) g.tensor = id;
  else if (name.starts_with("dp")) g.data = id;
  else if (name.starts_with("pp")) g.pipeline = id;
}

}  // namespace

CommMesh::RankGroups CommMesh::groupsOf(int rank) const {
  RankGroups g;
  for (const CommGroupSpec& spec : m_specs) {
    if (std::find(spec.members.begin(), spec.members.end(), rank) == spec.members.end()) continue;
    fileGroup(g, spec.name, spec.id);
  }
  return g;
}

std::vector<CommMesh::RankGroups> CommMesh::groupsByRank(const std::vector<CommGroup>& groups, int ranks) {
  std::vector<RankGroups> out(static_cast<size_t>(ranks > 0 ? ranks : 0));
  for (const CommGroup& group : groups)
    for (int member : group.ranks)
      if (member >= 0 && member < ranks) fileGroup(out[static_cast<size_t>(member)], group.name, group.id);
  return out;
}

std::unique_ptr<ProcessGroup> CommMesh::makeProcessGroup(int id, int rank, RankContext& ctx) {
  const CommGroupSpec& spec = m_specs.at(id);
  const auto it = std::find(spec.members.begin(), spec.members.end(), rank);
  const auto group_rank = static_cast<size_t>(it - spec.members.begin());
  if (it == spec.members.end() || !m_comms[id][group_rank])
    throw RunError("rank " + std::to_string(rank) + " has no member in group '" + spec.name + "' in this process");
  auto group = std::make_unique<ProcessGroup>(id, spec.name, *m_comms[id][group_rank], *m_monitors[id], ctx);
  group->setPointToPointTimeout(m_timeoutMs);
  return group;
}

}  // namespace shardscope
