// Text and JSON forms of a CudaInventory. The runtime's error text is kept
// verbatim: on a machine without a GPU it is the whole answer to "why not".
#include "devices_report.h"

#include <cstdio>
#include <sstream>

#include "trace/json_writer.h"

namespace shardscope {
namespace {

constexpr const char* kNoCuda =
    "built without CUDA (SHARDSCOPE_CUDA=OFF, or nvcc/NCCL not found at configure time)";

std::string gib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB",
                static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string computeCapability(const CudaDeviceInfo& device) {
  return std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor);
}

// CUDA versions as "13.0", or null where the library reported none (0).
void writeVersion(JsonWriter& json, std::string_view name, int version) {
  json.key(name);
  if (version > 0) json.value(cudaVersionString(version));
  else json.null();
}

}  // namespace

std::string formatDevicesReport(const std::optional<CudaInventory>& inventory) {
  if (!inventory) return std::string(kNoCuda) + "\n";
  std::ostringstream out;
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
  std::ostringstream out;
  {
    JsonWriter json(out, 2);
    json.beginObject();
    json.member("cuda_built", inventory.has_value());
    if (!inventory) {
      json.member("error", kNoCuda);
    } else {
      json.member("runtime_ok", inventory->runtime_ok);
      json.member("error", inventory->error);
      writeVersion(json, "runtime_version", inventory->runtime_version);
      writeVersion(json, "driver_version", inventory->driver_version);
      json.member("nccl_version", inventory->nccl_version);
      json.key("devices").beginArray();
      for (const CudaDeviceInfo& device : inventory->devices) {
        json.beginObject()
            .member("index", device.index)
            .member("name", device.name)
            .member("compute_capability", computeCapability(device))
            .member("sm_count", device.sm_count)
            .member("total_bytes", device.total_bytes)
            .member("free_bytes", device.free_bytes)
            .member("kernel_ok", device.kernel_ok)
            .member("error", device.error)
            .endObject();
      }
      json.endArray();
    }
    json.endObject();
  }  // the writer flushes on destruction
  out << "\n";
  return out.str();
}

}  // namespace shardscope
