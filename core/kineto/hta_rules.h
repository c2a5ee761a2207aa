// Holistic Trace Analysis' name rules for GPU kernels, as in HTA's
// hta/utils/utils.py (get_kernel_type, is_comm_kernel, is_memory_kernel,
// is_compute_kernel):
//   COMMUNICATION  re.match(r"^nccl.*Kernel")      (ncclKernel_*, ncclDevKernel_*)
//   MEMORY         re.match(r"(^Memcpy)|(^Memset)|(^dma)")
//   COMPUTATION    not re.match(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
//   OTHER          the rest (a name containing "Sync" or "Memcpy", e.g. "Event Sync")
#pragma once

#include <string_view>

namespace shardscope::kineto {

enum class HtaKernelType { Communication, Memory, Computation, Other };

inline HtaKernelType htaKernelType(std::string_view name) {
  const auto starts = [&](std::string_view p) { return name.rfind(p, 0) == 0; };
  const auto contains = [&](std::string_view p) { return name.find(p) != std::string_view::npos; };
  if (starts("nccl") && name.find("Kernel", 4) != std::string_view::npos) return HtaKernelType::Communication;
  if (starts("Memcpy") || starts("Memset") || starts("dma")) return HtaKernelType::Memory;
  if (contains("Memcpy") || starts("Memset") || contains("Sync")) return HtaKernelType::Other;
  return HtaKernelType::Computation;
}

inline std::string_view htaKernelTypeName(HtaKernelType t) {
  switch (t) {
    case HtaKernelType::Communication: return "COMMUNICATION";
    case HtaKernelType::Memory: return "MEMORY";
    case HtaKernelType::Computation: return "COMPUTATION";
    case HtaKernelType::Other: break;
  }
  return "OTHER";
}

}  // namespace shardscope::kineto
