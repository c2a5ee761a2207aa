// Text and JSON forms of a CudaInventory. The runtime's error text is kept
// verbatim: on a machine without a GPU it is the whole answer to "why not".
#include "cli/devices_report.h"
#include "common/units.h"

#include <cstdio>
#include <sstream>

#include "common/json_tree.h"

namespace shardscope {
namespace {

constexpr const char* kNoCuda =
    "built without CUDA (SHARDSCOPE_CUDA=OFF, or nvcc/NCCL not found at configure time)";

std::string gib(size_t bytes) { return bytesText(static_cast<double>(bytes), 1, ByteUnit::GiB); }

std::string computeCapability(const CudaDeviceInfo& device) {
  return std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor);
}

// CUDA versions as "13.0", or null where the library reported none (0).
Json versionJson(int version) { return version > 0 ? Json(cudaVersionString(version)) : Json(nullptr); }

}  // namespace

std::string formatDevicesReport(const std::optional<CudaInventory>& inventory) {
  if (!inventory) return std::string(kNoCuda) + "\n";
  std::ostringstream out;
  if (!inventory->backend_loaded) {
    out << "built with CUDA, but " << inventory->error << "\n";
    return out.str();
  }
  out << "CUDA runtime " << cudaVersionString(inventory->runtime_version) << ", driver "
      << cudaVersionString(inventory->driver_version) << ", NCCL " << inventory->nccl_version
      << "\n";
  if (inventory->devices.empty()) {
    out << "no CUDA device visible: " << inventory->error << "\n";
    if (inventory->driver_version == 0)
      out << "hint: no NVIDIA driver is loadable here (libcuda.so.1); "
             "install one or run on a GPU node\n";
    return out.str();
  }
  char line[256];
  std::snprintf(line, sizeof(line), "%-5s %-28s %-4s %5s %12s %12s  %s\n", "index", "name",
                "cc", "SMs", "total", "free", "runs kernels");
  out << line;
  for (const CudaDeviceInfo& device : inventory->devices) {
    std::snprintf(line, sizeof(line), "%-5d %-28s %-4s %5d %12s %12s  %s\n", device.index,
                  device.name.c_str(), computeCapability(device).c_str(), device.sm_count,
                  gib(device.total_bytes).c_str(), gib(device.free_bytes).c_str(),
                  device.kernel_ok ? "yes" : "no");
    out << line;
  }
  for (const CudaDeviceInfo& device : inventory->devices) {
    if (!device.error.empty()) out << "device " << device.index << ": " << device.error << "\n";
  }
  return out.str();
}

std::string formatDevicesReportJson(const std::optional<CudaInventory>& inventory) {
  Json json;
  json["cuda_built"] = inventory.has_value();
  if (!inventory) {
    json["error"] = kNoCuda;
  } else {
    json["backend_loaded"] = inventory->backend_loaded;
    json["runtime_ok"] = inventory->runtime_ok;
    json["error"] = inventory->error;
    json["runtime_version"] = versionJson(inventory->runtime_version);
    json["driver_version"] = versionJson(inventory->driver_version);
    json["nccl_version"] = inventory->nccl_version;
    Json& devices = json["devices"] = Json::array();
    for (const CudaDeviceInfo& device : inventory->devices) {
      Json d;
      d["index"] = device.index;
      d["name"] = device.name;
      d["compute_capability"] = computeCapability(device);
      d["sm_count"] = device.sm_count;
      d["total_bytes"] = device.total_bytes;
      d["free_bytes"] = device.free_bytes;
      d["kernel_ok"] = device.kernel_ok;
      d["error"] = device.error;
      devices.push_back(std::move(d));
    }
  }
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace shardscope
