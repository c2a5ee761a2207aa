#include "comm/process_group.h"

namespace shardscope {

namespace {
constexpr int kSetupTimeoutMs = 120000;
}

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

}  // namespace shardscope
