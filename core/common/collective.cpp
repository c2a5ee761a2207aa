#include "common/collective.h"

#include <stdexcept>
#include <string>

namespace shardscope {

std::string_view collectiveName(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllGather: return "all_gather";
    case Collective::AllToAll: return "all_to_all";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::SendRecv: return "send_recv";
    case Collective::Barrier: return "barrier";
    case Collective::Unknown: break;
  }
  return "unknown";
}

std::string_view collectiveLabel(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all-reduce";
    case Collective::ReduceScatter: return "reduce-scatter";
    case Collective::AllGather: return "all-gather";
    case Collective::AllToAll: return "all-to-all";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::SendRecv: return "send/recv";
    case Collective::Barrier: return "barrier";
    case Collective::Unknown: break;
  }
  return "unknown collective";
}

Collective collectiveFromName(std::string_view name) {
  // Lower-case letters only: "all_reduce", "AllReduce", "allreduce_coalesced" all read "allreduce...".
  std::string s;
  s.reserve(name.size());
  for (char ch : name) {
    if (ch >= 'A' && ch <= 'Z') s.push_back(static_cast<char>(ch - 'A' + 'a'));
    else if (ch >= 'a' && ch <= 'z') s.push_back(ch);
  }
  const auto has = [&](const char* w) { return s.find(w) != std::string::npos; };
  if (has("reducescatter")) return Collective::ReduceScatter;
  if (has("allreduce")) return Collective::AllReduce;
  if (has("allgather")) return Collective::AllGather;
  if (has("alltoall")) return Collective::AllToAll;
  if (has("broadcast")) return Collective::Broadcast;
  if (has("barrier")) return Collective::Barrier;
  if (has("sendrecv") || has("send") || has("recv")) return Collective::SendRecv;
  if (has("reduce")) return Collective::Reduce;
  return Collective::Unknown;
}

uint64_t ringBytesSent(Collective c, int rank, int size, uint64_t count, uint64_t element_bytes, int root) {
  if (size < 1 || rank < 0 || rank >= size)
    throw std::invalid_argument("ringBytesSent: rank " + std::to_string(rank) + " must be in [0, size = " +
                                std::to_string(size) + ")");
  if (size == 1) return 0;
  const uint64_t p = static_cast<uint64_t>(size);
  const auto wrap = [size](int a) { return static_cast<uint64_t>(((a % size) + size) % size); };
  switch (c) {
    case Collective::AllReduce: {
      const uint64_t base = count / p, extra = count % p;
      const auto chunk = [&](uint64_t i) { return base + (i < extra ? 1 : 0); };
      // Reduce-scatter half: chunks r, r-1, …, r-P+2; all-gather half: r+1, r, …, r-P+3.
      uint64_t elements = 0;
      for (int j = 0; j < size - 1; ++j) elements += chunk(wrap(rank - j));
      for (int j = 0; j < size - 1; ++j) elements += chunk(wrap(rank + 1 - j));
      return elements * element_bytes;
    }
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AllToAll: return (p - 1) * count * element_bytes;
    case Collective::Broadcast: return wrap(rank) == wrap(root - 1) ? 0 : count * element_bytes;
    case Collective::Reduce: return wrap(rank) == wrap(root) ? 0 : count * element_bytes;  // a chain into the root
    case Collective::SendRecv: return count * element_bytes;
    case Collective::Barrier:
    case Collective::Unknown: return 0;
  }
  return 0;
}

double ringBytesPerRank(Collective c, double tensor_bytes, int size) {
  if (size <= 1) return 0.0;
  const double share = (size - 1.0) / size;
  switch (c) {
    case Collective::AllReduce: return 2.0 * share * tensor_bytes;
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AllToAll:
    case Collective::Broadcast:
    case Collective::Reduce: return share * tensor_bytes;
    case Collective::SendRecv:
    case Collective::Unknown: return tensor_bytes;
    case Collective::Barrier: return 0.0;
  }
  return 0.0;
}

double busBandwidthFactor(Collective c, int n) {
  if (n <= 1) return 0.0;
  const double dn = n;
  switch (c) {
    case Collective::AllReduce: return 2.0 * (dn - 1) / dn;
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AllToAll: return (dn - 1) / dn;
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::SendRecv:
    case Collective::Unknown: return 1.0;
    case Collective::Barrier: return 0.0;
  }
  return 0.0;
}

}  // namespace shardscope
