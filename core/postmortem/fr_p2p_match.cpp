#include "postmortem/fr_p2p_match.h"

#include <map>
#include <tuple>

namespace shardscope::postmortem {

namespace {

// A non-negative decimal at the front of s, advancing it; -1 when there is none.
int64_t frP2pNumber(std::string_view& s) {
  int64_t v = -1;
  while (!s.empty() && s.front() >= '0' && s.front() <= '9' && v < (int64_t(1) << 40)) {
    v = (v < 0 ? 0 : v) * 10 + (s.front() - '0');
    s.remove_prefix(1);
  }
  return v;
}

struct FrP2pSide {
  std::vector<const FrEntry*> ops;  // this side's ops of the pair, in its ring's order
  const FrRankDump* dump = nullptr;
};

}  // namespace

std::optional<FrP2pOp> frP2pOp(std::string_view n) {
  if (const size_t colon = n.find(':'); colon != std::string_view::npos) n.remove_prefix(colon + 1);
  FrP2pOp op;
  std::string_view arrow;
  if (n.rfind("send ", 0) == 0) {
    op.send = true;
    arrow = "->";
  } else if (n.rfind("recv ", 0) == 0) {
    arrow = "<-";
  } else {
    return std::nullopt;
  }
  n.remove_prefix(5);
  op.self = frP2pNumber(n);
  if (op.self < 0 || n.rfind(arrow, 0) != 0) return std::nullopt;
  n.remove_prefix(2);
  op.peer = frP2pNumber(n);
  if (op.peer < 0 || !n.empty()) return std::nullopt;
  return op;
}

std::vector<FrP2pFinding> matchFrP2p(const std::vector<FrRankDump>& dumps, std::vector<std::string>& notes) {
  std::map<int, const FrRankDump*> by_rank;
  for (const FrRankDump& d : dumps) by_rank[d.rank] = &d;
  // (group, sender, receiver) in global ranks -> the sender's sends and the receiver's receives.
  using Pair = std::tuple<std::string, int64_t, int64_t>;
  std::map<Pair, std::pair<FrP2pSide, FrP2pSide>> pairs;
  for (const FrRankDump& d : dumps) {
    for (const FrEntry& e : d.entries) {
      const std::optional<FrP2pOp> op = frP2pOp(e.profiling_name);
      if (!op || op->self == op->peer) continue;
      // Group ranks -> global ranks through pg_config (a subgroup's rank 1 is its second member).
      int64_t peer = op->peer;
      if (const auto g = d.pg_ranks.find(e.pg_name); g != d.pg_ranks.end() && peer < int64_t(g->second.size()))
        peer = g->second[static_cast<size_t>(peer)];
      const Pair key = op->send ? Pair{e.pg_name, d.rank, peer} : Pair{e.pg_name, peer, d.rank};
      FrP2pSide& side = op->send ? pairs[key].first : pairs[key].second;
      side.dump = &d;
      side.ops.push_back(&e);
    }
  }
  std::vector<FrP2pFinding> out;
  for (auto& [key, sides] : pairs) {
    const auto& [pg, src, dst] = key;
    const auto sender = by_rank.find(static_cast<int>(src));
    const auto receiver = by_rank.find(static_cast<int>(dst));
    if (sender == by_rank.end() || receiver == by_rank.end()) continue;  // a rank without a dump: said per group
    const auto cut = [](const FrRankDump* d) { return !d->entries.empty() && d->entries.front().record_id > 0; };
    if (cut(sender->second) || cut(receiver->second)) {
      notes.push_back("p2p from rank " + std::to_string(src) + " to rank " + std::to_string(dst) + " of pg " + pg +
                      ": not matched, a ring lost its oldest entries");
      continue;
    }
    const std::vector<const FrEntry*>& sends = sides.first.ops;
    const std::vector<const FrEntry*>& recvs = sides.second.ops;
    for (size_t k = 0; k < std::max(sends.size(), recvs.size()); ++k) {
      FrMismatch m;
      m.pg = m.pg_name = pg;
      m.seq = static_cast<int64_t>(k + 1);
      const std::string nth = " #" + std::to_string(k + 1);
      const FrEntry* e = nullptr;  // the op whose time dates the finding
      int waiting = -1;
      if (k < sends.size() && k < recvs.size()) {
        if (sends[k]->sizes != recvs[k]->sizes) m.kind = "size";
        else if (sends[k]->dtypes != recvs[k]->dtypes) m.kind = "dtype";
        else continue;
        m.op = "send";
        m.ranks = {static_cast<int>(dst)};
        const std::string& theirs = m.kind == "size" ? sends[k]->sizes : sends[k]->dtypes;
        const std::string& mine = m.kind == "size" ? recvs[k]->sizes : recvs[k]->dtypes;
        m.detail = "rank " + std::to_string(dst) + "'s recv" + nth + " from rank " + std::to_string(src) + " has " +
                   m.kind + "s " + mine.substr(0, 120) + ", the send " + theirs.substr(0, 120);
        e = sends[k];
      } else if ((k >= recvs.size() ? sends[k] : recvs[k])->state == FrState::Completed) {
        break;  // its peer's op did run (a completed send was received): that dump was taken earlier
      } else if (k >= recvs.size()) {
        m.kind = "p2p";
        m.op = "send";
        m.ranks = {static_cast<int>(dst)};
        m.detail = "the recv matching rank " + std::to_string(src) + "'s send" + nth + " to it";
        e = sends[k];
        waiting = static_cast<int>(src);
      } else {
        m.kind = "p2p";
        m.op = "recv";
        m.ranks = {static_cast<int>(src)};
        m.detail = "the send matching rank " + std::to_string(dst) + "'s recv" + nth + " from it";
        e = recvs[k];
        waiting = static_cast<int>(dst);
      }
      m.pg_desc = e->pg_desc;
      if (waiting >= 0 && e->state != FrState::Completed) {
        m.waiting_ranks = {waiting};
        m.since_ns = e->time_started_ns > 0 ? e->time_started_ns : e->time_created_ns;
        if (const auto f = frLastFrame(*e)) m.frames_by_rank[waiting] = *f;
      }
      // The culprit's last entry: where it went instead.
      const FrRankDump* culprit = by_rank[m.ranks.front()];
      if (!culprit->entries.empty())
        if (const auto f = frLastFrame(culprit->entries.back())) m.frames_by_rank[m.ranks.front()] = *f;
      out.push_back({std::move(m), e->time_created_ns > 0 ? e->time_created_ns : INT64_MAX});
      break;  // later ops of the pair are shifted by this one: only the first is known
    }
  }
  return out;
}

}  // namespace shardscope::postmortem
