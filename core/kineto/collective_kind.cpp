#include "kineto/collective_kind.h"

#include <string>

namespace shardscope::kineto {

std::string_view collectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::AllToAll: return "all_to_all";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::SendRecv: return "send_recv";
    case CollectiveKind::Barrier: return "barrier";
    case CollectiveKind::Unknown: break;
  }
  return "unknown";
}

CollectiveKind collectiveKindFromName(std::string_view name) {
  // Lower-case letters only: "all_reduce", "AllReduce", "allreduce_coalesced" all read "allreduce...".
  std::string s;
  s.reserve(name.size());
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') s.push_back(static_cast<char>(c - 'A' + 'a'));
    else if (c >= 'a' && c <= 'z') s.push_back(c);
  }
  const auto has = [&](const char* w) { return s.find(w) != std::string::npos; };
  if (has("reducescatter")) return CollectiveKind::ReduceScatter;
  if (has("allreduce")) return CollectiveKind::AllReduce;
  if (has("allgather")) return CollectiveKind::AllGather;
  if (has("alltoall")) return CollectiveKind::AllToAll;
  if (has("broadcast")) return CollectiveKind::Broadcast;
  if (has("barrier")) return CollectiveKind::Barrier;
  if (has("sendrecv") || has("send") || has("recv")) return CollectiveKind::SendRecv;
  if (has("reduce")) return CollectiveKind::Reduce;
  return CollectiveKind::Unknown;
}

int dtypeBytes(std::string_view dtype) {
  if (dtype.rfind("c10::", 0) == 0) dtype.remove_prefix(5);
  if (dtype == "Float" || dtype == "float" || dtype == "Int" || dtype == "int" || dtype == "UInt32" ||
      dtype == "ComplexHalf")
    return 4;
  if (dtype == "Double" || dtype == "double" || dtype == "Long" || dtype == "long" || dtype == "int64" ||
      dtype == "UInt64" || dtype == "ComplexFloat" || dtype == "long int" || dtype == "int64_t")
    return 8;
  if (dtype == "Half" || dtype == "half" || dtype == "BFloat16" || dtype == "Short" || dtype == "UInt16" ||
      dtype == "short int")
    return 2;
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || dtype == "QInt8" || dtype == "QUInt8" ||
      dtype.rfind("Float8", 0) == 0 || dtype == "bool" || dtype == "signed char" || dtype == "unsigned char")
    return 1;
  if (dtype == "ComplexDouble") return 16;
  return -1;
}

double busBandwidthFactor(CollectiveKind kind, int n) {
  if (n <= 0) return 1.0;
  const double dn = n;
  switch (kind) {
    case CollectiveKind::AllReduce: return 2.0 * (dn - 1) / dn;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll: return (dn - 1) / dn;
    default: return 1.0;
  }
}

}  // namespace shardscope::kineto
