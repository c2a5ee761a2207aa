// One rank's handle on a communicator group, the way strategies talk to
// collectives: it numbers each collective (seq), runs the fingerprint check,
// records the trace event on the caller's lane and counts the bytes the rank
// actually sent, per kind, for the current step. Modeled clock: a collective
// with a link ticket shares the rank's link with the other ticketed ones.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/collective_monitor.h"
#include "comm/communicator.h"
#include "comm/link_arbiter.h"
#include "rank/comm_bytes.h"
#include "rank/rank_context.h"

namespace shardscope {

struct CollectiveTag {
  int bucket = -1;
  int unit = -1;
  int32_t dep = -1;  // op id that launched this collective (dependency arrow)
  int32_t op = -1;   // preassigned op id (so others can depend on it), or -1
  // From ProcessGroup::takeLinkTicket at enqueue, or -1: the transfer gets the
  // link to itself (what a single comm stream already guarantees).
  int64_t link_ticket = -1;
  int block = -1;  // model segment whose op issued it (tensor-parallel all-reduces), or -1
};

// What one pipeline transfer is: whose activations (or gradient) it carries.
// The receiver checks it against what arrived; a hang report names it.
struct P2pTag {
  int microbatch = 0;
  int chunk = 0;          // model chunk (interleaved schedule), 0 otherwise
  bool gradient = false;  // false: activations forward; true: their gradient backward
  int block = -1;         // the model segment that produced it
  int32_t dep = -1;       // op id it depends on (the compute op that produced it)
};

class ProcessGroup {
 public:
  ProcessGroup(int group_id, std::string name, Communicator& comm, CollectiveCheck& monitor,
               RankContext& ctx);

  int groupRank() const { return m_comm.rank(); }
  int groupSize() const { return m_comm.size(); }
  const std::string& name() const { return m_name; }
  const std::vector<int>& members() const { return m_monitor.members(); }  // global ranks

  // Modeled clock: the link this rank's transfers in this group use (shared
  // with its other groups on the same link level). Set before the run's steps.
  void setLinkArbiter(LinkArbiter* link) { m_link = link; }
  // The enqueuing (host) thread, right before it enqueues a collective that can
  // overlap another of this rank's on the same link: its place in the link's
  // order. -1 when the clock is measured (nothing to arbitrate).
  int64_t takeLinkTicket();

  void allReduce(void* data, size_t count, DType dtype, const CollectiveTag& tag, Lane lane);
  void reduceScatter(const void* input, void* output, size_t count, DType dtype,
                     const CollectiveTag& tag, Lane lane);
  void allGather(const void* input, void* output, size_t count, DType dtype,
                 const CollectiveTag& tag, Lane lane);
  void broadcast(void* data, size_t count, DType dtype, int root, Lane lane);

  // Pipeline stages (a "pp" group: group rank = stage): `count` elements to /
  // from group rank `peer`, on the calling stream, drawn on the comm lane.
  // send() returns at once; the envelope tells the receiver what it carries
  // and (modeled clock) when it lands. recv() waits for it: a sender that
  // never sends within the group's timeout is a RunError naming both stages,
  // the microbatch and what was expected; a message other than the expected
  // one is a RunError naming both. flushSends(): every send so far delivered.
  void send(const void* data, size_t count, DType dtype, int peer, const P2pTag& tag);
  void recv(void* data, size_t count, DType dtype, int peer, const P2pTag& tag);
  void flushSends();
  // How long recv() waits for a sender before it reports a hang (ms).
  void setPointToPointTimeout(int timeout_ms) { m_p2pTimeoutMs = timeout_ms; }
  int pointToPointTimeout() const { return m_p2pTimeoutMs; }

  // Bytes sent since the last resetStepBytes() (thread-safe to read after the
  // streams that use this group are synchronised).
  CommBytes stepBytes() const { return m_stepBytes; }
  void resetStepBytes() { m_stepBytes = {}; }

 private:
  template <class Fn>
  void run(EventKind kind, int64_t bytes, const CollectiveTag& tag, Lane lane, Fn&& fn);

  int m_groupId;
  std::string m_name;
  Communicator& m_comm;
  CollectiveCheck& m_monitor;
  RankContext& m_ctx;
  LinkArbiter* m_link = nullptr;
  int m_seq = 0;
  CommBytes m_stepBytes;
  int m_p2pTimeoutMs = 3000;
  std::vector<int> m_sentTo, m_receivedFrom;  // point-to-point messages per peer (Event::seq)
};

}  // namespace shardscope
