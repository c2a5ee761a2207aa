#include "comm/process_group.h"

#include <cstring>

namespace shardscope {

namespace {
constexpr int kSetupTimeoutMs = 120000;

// What travels ahead of a pipeline transfer's payload: what it carries (the
// receiver checks it) and, on the modeled clock, when it lands.
struct P2pEnvelope {
  int32_t microbatch = 0;
  int32_t chunk = 0;
  int32_t gradient = 0;
  int32_t step = 0;
  int64_t bytes = 0;
  int64_t arrival_ns = 0;  // modeled: the send's time plus the transfer's
};

std::string carried(const P2pTag& t) {
  return "microbatch " + std::to_string(t.microbatch) + "'s " + (t.gradient ? "gradient" : "activations") +
         (t.chunk > 0 ? " (model chunk " + std::to_string(t.chunk) + ")" : "");
}
std::string carried(const P2pEnvelope& e) {
  return carried(P2pTag{e.microbatch, e.chunk, e.gradient != 0});
}
}  // namespace

ProcessGroup::ProcessGroup(int group_id, std::string name, Communicator& comm,
                           CollectiveCheck& monitor, RankContext& ctx)
    : m_groupId(group_id), m_name(std::move(name)), m_comm(comm), m_monitor(monitor), m_ctx(ctx) {}

int64_t ProcessGroup::takeLinkTicket() {
  return m_link && m_ctx.cost ? m_link->takeTicket(m_ctx.clock.nowNs()) : -1;
}

template <class Fn>
void ProcessGroup::run(EventKind kind, int64_t bytes, const CollectiveTag& tag, Lane lane, Fn&& fn) {
  const Fingerprint fp{kind, m_groupId, tag.bucket, tag.unit, bytes, m_seq++};
  Event fields;
  fields.bytes = bytes;
  fields.bucket = static_cast<int16_t>(tag.bucket);
  fields.unit = static_cast<int16_t>(tag.unit);
  fields.block = static_cast<int16_t>(tag.block);
  fields.group = static_cast<int16_t>(m_groupId);
  fields.seq = fp.seq;
  fields.dep = tag.dep;
  fields.op = tag.op;
  const uint64_t sent_before = m_comm.bytesSent();
  {
    // The collective starts when its stream reaches it, as a NCCL kernel does:
    // the event spans waiting for the peers (the fingerprint check; its share
    // goes in `value`) and the transfer itself.
    ScopedEvent scope(m_ctx, lane, kind, fields);
    m_ctx.setStatus(lane, "in " + describe(fp) + " on group " + m_name);
    const auto timeout = kind == EventKind::Broadcast ? std::chrono::milliseconds(kSetupTimeoutMs)
                                                      : std::chrono::milliseconds(-1);
    const int64_t start = m_monitor.check(m_comm.rank(), fp, m_ctx.clock.nowNs(), timeout);
    m_ctx.clock.advanceTo(start);  // modeled: a collective starts when its last rank arrives
    // On a GPU the span is device time, which cannot tell waiting from moving.
    scope.event().value = scope.deviceTimed() ? 0 : m_ctx.clock.nowNs() - scope.event().begin_ns;
    fn();
    if (m_ctx.cost) {
      // A pipelined broadcast ends for everyone when the payload has crossed
      // the chain; the ring collectives cost what this rank sent.
      const double sent_now = kind == EventKind::Broadcast ? static_cast<double>(bytes)
                                                           : static_cast<double>(m_comm.bytesSent() - sent_before);
      const int64_t transfer_ns = m_ctx.cost->collectiveNs(kind, sent_now, m_monitor.members());
      if (m_link && tag.link_ticket >= 0) {
        // The data has moved (real time); only the modeled placement waits for
        // the earlier tickets, so the link's calendar is built in issue order.
        const int64_t from = m_ctx.clock.nowNs();
        m_link->waitTurn(tag.link_ticket);
        const std::vector<LinkInterval> pieces = m_link->place(tag.link_ticket, from, transfer_ns);
        m_link->release(tag.link_ticket, pieces);
        m_ctx.clock.advanceTo(pieces.empty() ? from : pieces.back().end);
      } else {
        m_ctx.clock.advance(transfer_ns);
      }
    }
  }
  const auto sent = static_cast<int64_t>(m_comm.bytesSent() - sent_before);
  switch (kind) {
    case EventKind::AllReduce: m_stepBytes.all_reduce += sent; break;
    case EventKind::ReduceScatter: m_stepBytes.reduce_scatter += sent; break;
    case EventKind::AllGather: m_stepBytes.all_gather += sent; break;
    default: m_stepBytes.broadcast += sent; break;
  }
  m_ctx.setStatus(lane, "");
}

void ProcessGroup::allReduce(void* data, size_t count, DType dtype, const CollectiveTag& tag,
                             Lane lane) {
  run(EventKind::AllReduce, static_cast<int64_t>(count * dtypeSize(dtype)), tag, lane,
      [&] { m_comm.allReduce(data, count, dtype); });
}

void ProcessGroup::reduceScatter(const void* input, void* output, size_t count, DType dtype,
                                 const CollectiveTag& tag, Lane lane) {
  const auto full = static_cast<int64_t>(count * m_comm.size() * dtypeSize(dtype));
  run(EventKind::ReduceScatter, full, tag, lane,
      [&] { m_comm.reduceScatter(input, output, count, dtype); });
}

void ProcessGroup::allGather(const void* input, void* output, size_t count, DType dtype,
                             const CollectiveTag& tag, Lane lane) {
  const auto full = static_cast<int64_t>(count * m_comm.size() * dtypeSize(dtype));
  run(EventKind::AllGather, full, tag, lane,
      [&] { m_comm.allGather(input, output, count, dtype); });
}

void ProcessGroup::broadcast(void* data, size_t count, DType dtype, int root, Lane lane) {
  // Setup only (initial weights): rank 0 may still be initialising while the
  // others arrive, so the fingerprint check waits longer than for a step's collectives.
  run(EventKind::Broadcast, static_cast<int64_t>(count * dtypeSize(dtype)), {}, lane,
      [&] { m_comm.broadcast(data, count, dtype, root); });
}

void ProcessGroup::send(const void* data, size_t count, DType dtype, int peer, const P2pTag& tag) {
  const auto bytes = static_cast<int64_t>(count * dtypeSize(dtype));
  const std::vector<int>& ranks = members();
  if (m_sentTo.empty()) m_sentTo.assign(ranks.size(), 0);
  Event e;
  e.lane = Lane::Comm;
  e.kind = EventKind::Send;
  e.op = m_ctx.newOp();
  e.dep = tag.dep;
  e.bytes = bytes;
  e.group = static_cast<int16_t>(m_groupId);
  e.block = static_cast<int16_t>(tag.block);
  e.param = static_cast<int16_t>(tag.microbatch);
  e.unit = static_cast<int16_t>(tag.chunk);
  e.seq = m_sentTo[static_cast<size_t>(peer)]++;
  e.flags = tag.gradient ? kEventGradient : 0;
  P2pEnvelope env{tag.microbatch, tag.chunk, tag.gradient ? 1 : 0, m_ctx.currentStep(), bytes, 0};
  e.begin_ns = m_ctx.clock.nowNs();
  // The send is asynchronous (an isend): the sender's clock does not wait for
  // it; its span is the transfer's time on the link (modeled), else the post.
  e.end_ns = e.begin_ns + (m_ctx.cost ? m_ctx.cost->pointToPointNs(double(bytes), ranks[static_cast<size_t>(m_comm.rank())],
                                                                     ranks[static_cast<size_t>(peer)])
                                      : 0);
  env.arrival_ns = e.end_ns;
  m_comm.send(&env, sizeof env, data, static_cast<size_t>(bytes), peer);
  if (!m_ctx.cost) e.end_ns = m_ctx.clock.nowNs();
  m_stepBytes.send += bytes;
  m_ctx.record(e);
}

void ProcessGroup::recv(void* data, size_t count, DType dtype, int peer, const P2pTag& tag) {
  const auto bytes = static_cast<int64_t>(count * dtypeSize(dtype));
  const std::vector<int>& ranks = members();
  if (m_receivedFrom.empty()) m_receivedFrom.assign(ranks.size(), 0);
  const int me = m_comm.rank();
  const int peer_rank = ranks[static_cast<size_t>(peer)];
  const auto stage = [&ranks](int s) {
    return "stage " + std::to_string(s) + " (rank " + std::to_string(ranks[static_cast<size_t>(s)]) + ")";
  };
  Event fields;
  fields.bytes = bytes;
  fields.group = static_cast<int16_t>(m_groupId);
  fields.block = static_cast<int16_t>(tag.block);
  fields.param = static_cast<int16_t>(tag.microbatch);
  fields.unit = static_cast<int16_t>(tag.chunk);
  fields.seq = m_receivedFrom[static_cast<size_t>(peer)]++;
  fields.dep = tag.dep;
  fields.flags = tag.gradient ? kEventGradient : 0;
  ScopedEvent scope(m_ctx, Lane::Comm, EventKind::Recv, fields);
  m_ctx.setStatus(Lane::Comm, "waiting in recv for " + carried(tag) + " from " + stage(peer));
  P2pEnvelope env;
  if (!m_comm.recv(&env, sizeof env, data, static_cast<size_t>(bytes), peer, std::chrono::milliseconds(m_p2pTimeoutMs))) {
    // When the peer waits on this stage in turn, what it waits for is the
    // send that never happened: its status names it.
    const std::string peer_status = m_ctx.board.get(peer_rank);
    throw RunError("pipeline hang: " + stage(me) + " waited " + std::to_string(m_p2pTimeoutMs) + " ms for " +
                   carried(tag) + " from " + stage(peer) + ", which never sent " + (tag.gradient ? "it" : "them") +
                   (peer_status.empty() ? std::string(" (it waits in no transfer or collective: it took another branch, or stopped)")
                                        : "; " + stage(peer) + " is " + peer_status) +
                   ". A stage that skips a send (a rank-dependent branch) stops every stage that waits on it.");
  }
  if (env.microbatch != tag.microbatch || env.chunk != tag.chunk || (env.gradient != 0) != tag.gradient ||
      env.bytes != bytes || env.step != m_ctx.currentStep())
    throw RunError("pipeline mismatch: " + stage(me) + " expected " + carried(tag) + " (" + std::to_string(bytes) +
                   " bytes) from " + stage(peer) + " but received " + carried(env) + " (" +
                   std::to_string(env.bytes) + " bytes): the two stages run different schedules");
  const int64_t begin = scope.event().begin_ns;
  m_ctx.clock.advanceTo(env.arrival_ns);  // modeled: it lands when the sender's transfer does
  // The share of the span before the data started to move: waiting for the sender.
  const int64_t transfer = m_ctx.cost ? m_ctx.cost->pointToPointNs(double(bytes), peer_rank, ranks[static_cast<size_t>(me)]) : 0;
  scope.event().value = std::max<int64_t>(0, m_ctx.clock.nowNs() - begin - transfer);
  m_ctx.setStatus(Lane::Comm, "");
}

void ProcessGroup::flushSends() { m_comm.flushSends(); }

}  // namespace shardscope
