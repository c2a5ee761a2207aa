#include "backend/cuda_backend.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <vector>

namespace shardscope {

namespace fs = std::filesystem;

namespace {

std::mutex g_mutex;
const CudaBackendApi* g_registered = nullptr;

#ifdef SHARDSCOPE_HAVE_CUDA
// Where the plugin may be: SHARDSCOPE_CUDA_BACKEND, else next to the program
// (the build tree puts it beside shardscope-cli), else ../lib/shardscope/backends
// (what the package installs).
std::vector<fs::path> candidates() {
  if (const char* file = std::getenv("SHARDSCOPE_CUDA_BACKEND"); file && *file) return {fs::path(file)};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return {exe.parent_path() / kCudaBackendFile, exe.parent_path().parent_path() / "lib" / "shardscope" / "backends" / kCudaBackendFile};
}

// The first candidate that exists; "" when none does.
fs::path pluginFile(const std::vector<fs::path>& paths) {
  for (const fs::path& path : paths) {
    std::error_code ec;
    if (fs::exists(path, ec)) return path;
  }
  return {};
}
#endif

struct Loaded {
  const CudaBackendApi* api = nullptr;
  std::string why;
};

Loaded loadPlugin() {
#ifndef SHARDSCOPE_HAVE_CUDA
  return {nullptr, "this build has no CUDA backend: it was configured without nvcc, cuBLAS or NCCL (see "
                   "docs/guide/gpu.md)"};
#else
  const std::vector<fs::path> paths = candidates();
  if (const fs::path path = pluginFile(paths); !path.empty()) {
    // RTLD_NOW: a missing CUDA library or symbol is reported here, once,
    // not as a crash in the middle of a run. RTLD_LOCAL: its symbols stay its own.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return {nullptr, "the CUDA backend " + path.string() + " could not be loaded: " + dlerror()};
    using Entry = const CudaBackendApi* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaBackendEntry));
    if (!entry) return {nullptr, path.string() + " is not a ShardScope CUDA backend (no " + kCudaBackendEntry + ")"};
    const CudaBackendApi* api = entry();
    if (!api || api->abi != kCudaBackendAbi || !api->make_runtime || !api->query_devices)
      return {nullptr, path.string() + " is a CUDA backend of another ShardScope build (interface " +
                           std::to_string(api ? api->abi : 0) + ", this program needs " +
                           std::to_string(kCudaBackendAbi) + "): reinstall or rebuild them together"};
    return {api, {}};  // never unloaded: runtimes and CUDA's own state outlive any caller
  }
  std::string where;
  for (const fs::path& path : paths) where += (where.empty() ? "" : " or ") + path.string();
  return {nullptr, "the CUDA backend " + std::string(kCudaBackendFile) + " was not found (looked for " +
                       (where.empty() ? std::string("the program's own folder") : where) +
                       "; SHARDSCOPE_CUDA_BACKEND names another file)"};
#endif
}

}  // namespace

void registerCudaBackend(const CudaBackendApi* api) {
  std::lock_guard lock(g_mutex);
  g_registered = api;
}

const CudaBackendApi* loadCudaBackend(std::string* why) {
  {
    std::lock_guard lock(g_mutex);
    if (g_registered) return g_registered;
  }
  static const Loaded loaded = loadPlugin();  // one attempt per process
  if (!loaded.api && why) *why = loaded.why;
  return loaded.api;
}

bool cudaBackendAvailable() {
  {
    std::lock_guard lock(g_mutex);
    if (g_registered) return true;
  }
#ifndef SHARDSCOPE_HAVE_CUDA
  return false;
#else
  return !pluginFile(candidates()).empty();
#endif
}

}  // namespace shardscope
