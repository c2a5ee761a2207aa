// CudaRuntime: core's DeviceRuntime on CUDA. A rank's host thread has no queue:
// what it launches (setup uploads, the initial broadcast, staging allocations)
// goes on the rank's host stream and is complete at return, so no stream needs
// a marker for it. Stream threads launch asynchronously on their own CUDA stream.
#include "cuda/cuda_runtime.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "cuda/caching_allocator.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/cuda_stream.h"
#include "cuda/device_query.h"
#include "cuda/emulated_communicator.h"
#include "cuda/emulated_group.h"
#include "cuda/gpu_gpt_model.h"
#include "cuda/gpu_mlp_model.h"
#include "cuda/nccl_communicator.h"
#include "backend/device_runtime.h"
#include "comm/comm_mesh.h"
#include "comm/unique_id_exchange.h"
#include "config/run_config.h"
#include "model/model_spec.h"

namespace shardscope::gpu {

namespace {

StreamHandle streamOf(const DeviceQueue& queue) { return static_cast<StreamHandle>(queue.nativeHandle()); }

// How long the host waits for one stream's work before calling it hung, as
// PyTorch's NCCL watchdog does (its default is 10 minutes): 100x --timeout-ms,
// at least a minute.
struct Watchdog {
  std::string rank;  // "rank 2"
  std::chrono::milliseconds limit;
};

// Polls instead of cudaEventSynchronize / cudaStreamSynchronize, so a stopped
// run is not held by a kernel that never finishes (a peer died mid-collective),
// and a hung one fails the run. Spins with yields first: the usual wait, the
// end of a step, is short.
template <class Done>
void pollUntil(Done&& done, const RunControl& control, const Watchdog& watchdog, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  while (!done()) {
    if (control.isAborted()) throw RunAborted();
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited > watchdog.limit) {
      throw RunError(watchdog.rank + ": the GPU has not finished " + what + " after " +
                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(waited).count()) +
                     " s (a collective that never completes?); every rank stops. The watchdog is 100x "
                     "--timeout-ms");
    }
    if (waited < std::chrono::microseconds(200))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// A rank's events, recycled: creating one takes the context's lock, and a step
// marks every op twice (its span) plus every hand-off between streams.
// Re-recording an event is safe once it is back here: waits already enqueued
// on it keep the state they saw.
class EventPool {
 public:
  EventPool(int device, Watchdog watchdog) : m_device(device), m_watchdog(std::move(watchdog)) {}
  const Watchdog& watchdog() const { return m_watchdog; }
  std::unique_ptr<CudaEvent> take(bool timing) {
    {
      std::lock_guard lock(m_mutex);
      auto& free = timing ? m_timing : m_plain;
      if (!free.empty()) {
        auto event = std::move(free.back());
        free.pop_back();
        return event;
      }
    }
    return std::make_unique<CudaEvent>(timing ? CudaEvent::Timing::On : CudaEvent::Timing::Off, m_device);
  }
  void give(std::unique_ptr<CudaEvent> event) {
    std::lock_guard lock(m_mutex);
    (event->timing() ? m_timing : m_plain).push_back(std::move(event));
  }

 private:
  int m_device;
  Watchdog m_watchdog;
  std::mutex m_mutex;
  std::vector<std::unique_ptr<CudaEvent>> m_timing, m_plain;
};

class CudaMarker final : public DeviceMarker {
 public:
  CudaMarker(std::shared_ptr<EventPool> pool, bool timing) : m_pool(std::move(pool)), m_event(m_pool->take(timing)) {}
  ~CudaMarker() override { m_pool->give(std::move(m_event)); }
  CudaMarker(const CudaMarker&) = delete;
  CudaMarker& operator=(const CudaMarker&) = delete;
  void hostWait(const RunControl& control) const override {
    pollUntil([&] { return m_event->isComplete(); }, control, m_pool->watchdog(), "a stream's work before an event");
  }
  CudaEvent& event() const { return *m_event; }

 private:
  std::shared_ptr<EventPool> m_pool;
  std::unique_ptr<CudaEvent> m_event;
};

class CudaQueue final : public DeviceQueue {
 public:
  CudaQueue(int device, const std::string& name, int priority, std::shared_ptr<EventPool> events)
      : m_stream(device, name, priority), m_events(std::move(events)) {}
  DeviceMarkerPtr mark(bool timing) override {
    auto marker = std::make_shared<CudaMarker>(m_events, timing);
    marker->event().record(m_stream.handle());
    return marker;
  }
  void waitFor(const DeviceMarker& marker) override {
    m_stream.waitEvent(static_cast<const CudaMarker&>(marker).event());
  }
  void synchronize(const RunControl& control) override {
    pollUntil([&] { return m_stream.isIdle(); }, control, m_events->watchdog(), "stream " + m_stream.name());
  }
  void* nativeHandle() const override { return m_stream.handle(); }
  void bindThread() override { CUDA_CHECK(cudaSetDevice(m_stream.device())); }

 private:
  CudaStream m_stream;
  std::shared_ptr<EventPool> m_events;
};

// Where a call from this thread goes: the current queue's stream, or the
// rank's host stream (then the caller synchronizes before returning).
struct Launch {
  StreamHandle stream;
  bool host;
};
Launch launchOn(StreamHandle host_stream) {
  if (DeviceQueue* q = currentDeviceQueue()) return {streamOf(*q), false};
  return {host_stream, true};
}

class CudaMemory final : public DeviceMemory {
 public:
  CudaMemory(CachingAllocator& allocator, StreamHandle host_stream)
      : m_allocator(allocator), m_hostStream(host_stream) {}
  void* allocate(size_t bytes, Category category) override {
    const Launch at = launchOn(m_hostStream);
    void* ptr = m_allocator.allocate(bytes, category, at.stream);
    CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, at.stream));
    if (at.host) CUDA_CHECK(cudaStreamSynchronize(at.stream));
    return ptr;
  }
  void free(void* ptr) noexcept override {
    try {
      // Freed from a stream's task: the block may be reused only after the
      // work that stream launched so far (the allocator records an event).
      if (DeviceQueue* q = currentDeviceQueue()) m_allocator.markUsedOn(ptr, streamOf(*q));
      m_allocator.free(ptr);
    } catch (const std::exception&) {
      // Only a lost context fails here, and the memory went with it.
    }
  }

 private:
  CachingAllocator& m_allocator;
  StreamHandle m_hostStream;
};

class CudaOps final : public DeviceOps {
 public:
  explicit CudaOps(StreamHandle host_stream) : m_hostStream(host_stream) {}
  void copy(void* dst, const void* src, size_t bytes) override {
    const Launch at = launchOn(m_hostStream);
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, at.stream));
    finish(at);
  }
  void upload(void* dst, const void* host_src, size_t bytes) override {
    // Pageable host memory is staged by the driver before the call returns.
    const Launch at = launchOn(m_hostStream);
    CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, at.stream));
    finish(at);
  }
  void download(void* host_dst, const void* src, size_t bytes) override {
    const Launch at = launchOn(m_hostStream);
    CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, at.stream));
    CUDA_CHECK(cudaStreamSynchronize(at.stream));
  }
  void scaleBf16(bf16* y, float s, size_t n) override {
    const Launch at = launchOn(m_hostStream);
    gpu::scaleBf16(y, s, n, at.stream);
    finish(at);
  }
  void f32ToBf16(const float* in, bf16* out, size_t n) override {
    const Launch at = launchOn(m_hostStream);
    gpu::f32ToBf16(in, out, n, at.stream);
    finish(at);
  }
  void adamStep(float* master, float* m, float* v, const bf16* grad, bf16* param_out, size_t n,
                const cpu::AdamConfig& config, int step) override {
    const Launch at = launchOn(m_hostStream);
    gpu::adamStep(master, m, v, grad, param_out, n, config, step, at.stream);
    finish(at);
  }

 private:
  static void finish(const Launch& at) {
    if (at.host) CUDA_CHECK(cudaStreamSynchronize(at.stream));
  }
  StreamHandle m_hostStream;
};

std::string deviceName(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

class CudaRankDevice final : public RankDevice {
 public:
  CudaRankDevice(int rank, int device, MemoryLedger& ledger, std::chrono::milliseconds watchdog)
      : m_device(device),
        m_name("GPU " + std::to_string(device) + " (" + deviceName(device) + ")"),
        m_hostStream(device, "rank" + std::to_string(rank) + ".host"),
        m_allocator(device, ledger, m_hostStream.handle(), "rank " + std::to_string(rank) + " " + m_name),
        m_memory(m_allocator, m_hostStream.handle()),
        m_ops(m_hostStream.handle()),
        m_events(std::make_shared<EventPool>(device, Watchdog{"rank " + std::to_string(rank), watchdog})) {
    // The rank's host thread launches on this device from now on.
    CUDA_CHECK(cudaSetDevice(device));
  }
  ~CudaRankDevice() override {
    cudaSetDevice(m_device);
    cudaDeviceSynchronize();  // nothing of this rank may still be using its blocks
  }

  std::string name() const override { return m_name; }
  DeviceMemory& memory() override { return m_memory; }
  DeviceOps& ops() override { return m_ops; }
  std::unique_ptr<DeviceQueue> makeQueue(const std::string& name, int priority) override {
    return std::make_unique<CudaQueue>(m_device, name, priority, m_events);
  }
  std::unique_ptr<Model> makeModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch,
                                   uint64_t seed) override {
    switch (spec.shape().kind) {
      case ModelKind::Mlp: return std::make_unique<GpuMlpModel>(spec, ledger, local_batch, seed);
      case ModelKind::Gpt: return std::make_unique<GpuGptModel>(spec, ledger, local_batch, seed);
    }
    throw std::invalid_argument("CudaRankDevice::makeModel: unknown model kind");
  }
  void syncOrigin(const RunClock& clock) override {
    m_origin = std::make_unique<CudaEvent>(CudaEvent::Timing::On, m_device);
    m_origin->record(m_hostStream.handle());
    m_origin->synchronize();
    m_originNs = clock.nowNs();
  }
  int64_t markerNs(const DeviceMarker& timing_marker) override {
    const auto& marker = static_cast<const CudaMarker&>(timing_marker);
    return m_originNs + static_cast<int64_t>(static_cast<double>(elapsedMs(*m_origin, marker.event())) * 1e6);
  }
  MemoryReport memoryReport() const override {
    const DeviceMemoryCheck check = m_allocator.crossCheck();
    const AllocatorStats stats = m_allocator.stats();
    MemoryReport r;
    r.allocated_bytes = stats.allocated_bytes;
    r.allocated_peak = stats.allocated_peak;
    r.reserved_bytes = stats.reserved_bytes;
    r.reserved_peak = stats.reserved_peak;
    r.device_used_bytes = static_cast<int64_t>(check.used_bytes);
    r.device_total_bytes = static_cast<int64_t>(check.total_bytes);
    return r;
  }

 private:
  int m_device;
  std::string m_name;
  CudaStream m_hostStream;
  CachingAllocator m_allocator;
  CudaMemory m_memory;
  CudaOps m_ops;
  std::shared_ptr<EventPool> m_events;
  std::unique_ptr<CudaEvent> m_origin;
  int64_t m_originNs = 0;
};

// A GPU communicator as the engine calls it: on a stream thread the collective
// is enqueued on that stream and returns; on a host thread (the setup
// broadcast) it runs on a stream of its own and is complete at return.
class QueueCommunicator final : public Communicator {
 public:
  explicit QueueCommunicator(std::unique_ptr<GpuCommunicator> inner)
      : m_inner(std::move(inner)), m_hostStream(m_inner->device(), "collective.host") {}
  int rank() const override { return m_inner->rank(); }
  int size() const override { return m_inner->size(); }
  std::string backendName() const override { return m_inner->backendName(); }
  void allReduce(void* data, size_t count, DType dtype) override {
    call([&] { m_inner->allReduce(data, count, dtype); });
  }
  void reduceScatter(const void* input, void* output, size_t count, DType dtype) override {
    call([&] { m_inner->reduceScatter(input, output, count, dtype); });
  }
  void allGather(const void* input, void* output, size_t count, DType dtype) override {
    call([&] { m_inner->allGather(input, output, count, dtype); });
  }
  void broadcast(void* data, size_t count, DType dtype, int root) override {
    call([&] { m_inner->broadcast(data, count, dtype, root); });
  }
  void barrier() override {
    call([&] { m_inner->barrier(); });
  }
  uint64_t bytesSent() const override { return m_inner->bytesSent(); }
  void abort() override { m_inner->abort(); }

 private:
  template <class Fn>
  void call(Fn&& fn) {
    const Launch at = launchOn(m_hostStream.handle());
    m_inner->setStream(at.stream);
    fn();
    if (at.host) m_hostStream.synchronize();
  }
  std::unique_ptr<GpuCommunicator> m_inner;
  CudaStream m_hostStream;
};

// NCCL ranks as threads of one process. NCCL does not allow issuing on two
// communicators of one device from two threads at once, and wants every GPU to
// see the launches of its communicators in one order; here a rank's gather and
// reduce streams are separate threads with separate communicators. So each
// collective is launched when all its ranks have posted it (the emulated
// group's rendezvous), by the last to arrive, for every member inside one
// ncclGroupStart/End, under one process-wide lock: a collective reaches all its
// GPUs as a unit, and all GPUs see one global launch order. Each op goes on its
// own rank's stream, so no cross-stream events are needed.
class NcclExecutor final : public CollectiveExecutor {
 public:
  explicit NcclExecutor(std::vector<std::unique_ptr<NcclCommunicator>> comms) : m_comms(std::move(comms)) {}
  void markReady(int, const CollectivePost&) override {}
  void launch(const std::vector<CollectivePost>& posts, int) override {
    static std::mutex launch_mutex;
    std::lock_guard lock(launch_mutex);
    NCCL_CHECK(ncclGroupStart());
    try {
      for (size_t q = 0; q < posts.size(); ++q) {
        const CollectivePost& p = posts[q];
        NcclCommunicator& comm = *m_comms[q];
        comm.setStream(p.stream);
        switch (p.op) {
          case Collective::AllReduce: comm.allReduce(p.output, p.count, p.dtype); break;
          case Collective::ReduceScatter: comm.reduceScatter(p.input, p.output, p.count, p.dtype); break;
          case Collective::AllGather: comm.allGather(p.input, p.output, p.count, p.dtype); break;
          case Collective::Broadcast: comm.broadcast(p.output, p.count, p.dtype, p.root); break;
          case Collective::Barrier: break;  // the rendezvous already met every rank on the host
          default: throw std::logic_error("NCCL launch of " + std::string(collectiveName(p.op)) + ": not a GpuCommunicator call");
        }
      }
    } catch (...) {
      ncclGroupEnd();
      throw;
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  void join(int, const CollectivePost&, int) override {}
  void abort() override {
    for (auto& comm : m_comms) comm->abort();
  }

 private:
  std::vector<std::unique_ptr<NcclCommunicator>> m_comms;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  explicit CudaRuntime(const RunConfig& config)
      : m_emulated(config.backend == Backend::CudaEmulated),
        m_watchdog(std::max<int64_t>(60'000, 100 * int64_t{config.timeout_ms})) {
    const std::string flag = "--backend " + backendName(config.backend);
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
      const std::string why =
          status != cudaSuccess ? std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status)
                                : "the driver reports 0 devices";
      cudaGetLastError();
      throw ConfigError(flag + " needs an NVIDIA GPU, and no CUDA device is visible (" + why +
                        "); check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --backend cpu");
    }
    if (config.launch == shardscope::Launch::Processes && m_emulated) {
      throw ConfigError("--backend cuda-emulated --launch processes: cuda-emulated runs every rank on GPU 0 inside "
                        "one process (collectives as device copies), so its ranks cannot be processes; use "
                        "--launch threads, or --backend cuda --launch processes for one GPU per rank process");
    }
    m_timeout = std::chrono::milliseconds(config.timeout_ms);
    if (!m_emulated && config.launch == shardscope::Launch::Processes) {
      // One rank process per GPU of this node, as torchrun starts them (the
      // launcher checks before it starts any; each worker again on its node).
      m_nodeRank = config.node_rank;
      m_procsPerNode = config.procsPerNode();
      if (m_procsPerNode > count) {
        std::ostringstream os;
        os << flag << " --launch processes runs one rank process per GPU (NCCL refuses two ranks on one device): "
           << "node " << config.node_rank << " starts " << m_procsPerNode << " (--nproc-per-node, else --ranks / "
           << "--nnodes) and shows " << count << " visible GPU" << (count == 1 ? "" : "s")
           << " (after CUDA_VISIBLE_DEVICES); use --nproc-per-node " << count << " with more --nnodes, or --ranks "
           << count;
        throw ConfigError(os.str());
      }
    } else if (!m_emulated && config.ranks > count) {
      std::ostringstream os;
      os << flag << " runs one rank per GPU (NCCL refuses two ranks on one device): --ranks " << config.ranks
         << " needs " << config.ranks << " visible GPUs and this machine shows " << count
         << "; use --ranks " << count << ", or --backend cuda-emulated --ranks " << config.ranks
         << " to run " << config.ranks << " ranks on one GPU";
      throw ConfigError(os.str());
    }
    m_ranks = config.ranks;
    m_gpuName = deviceName(0);
  }

  std::string describe() const override {
    std::ostringstream os;
    if (m_process) {
      os << "cuda: rank " << m_process->rank << " of " << m_ranks << " on GPU " << localDevice() << " ("
         << m_gpuName << "), a process of its own, NCCL " << NCCL_MAJOR << "." << NCCL_MINOR << "." << NCCL_PATCH
         << " across processes";
    } else if (m_procsPerNode > 0) {
      os << "cuda: " << m_ranks << " rank process" << (m_ranks > 1 ? "es" : "") << ", one per GPU ("
         << m_procsPerNode << " on this node, " << m_gpuName << "), NCCL " << NCCL_MAJOR << "." << NCCL_MINOR << "."
         << NCCL_PATCH << " across processes";
    } else if (m_emulated) {
      os << "cuda-emulated: " << m_ranks << " rank" << (m_ranks > 1 ? "s" : "") << " on GPU 0 (" << m_gpuName
         << "), collectives as device copies";
    } else {
      os << "cuda: " << m_ranks << " rank" << (m_ranks > 1 ? "s" : "") << " on GPU"
         << (m_ranks > 1 ? "s 0-" + std::to_string(m_ranks - 1) : " 0") << " (" << m_gpuName << "), NCCL "
         << NCCL_MAJOR << "." << NCCL_MINOR << "." << NCCL_PATCH;
    }
    return os.str();
  }

  std::unique_ptr<RankDevice> makeRankDevice(int rank, MemoryLedger& ledger) override {
    if (m_process) return std::make_unique<CudaRankDevice>(rank, localDevice(), ledger, m_watchdog);
    return std::make_unique<CudaRankDevice>(rank, m_emulated ? 0 : rank, ledger, m_watchdog);
  }

  // One rank per process, as torchrun starts them: the rank's device is its
  // index on its node (after CUDA_VISIBLE_DEVICES).
  void setProcess(const MeshProcess& process) override {
    if (m_emulated || m_procsPerNode == 0)
      throw ConfigError("--backend " + std::string(m_emulated ? "cuda-emulated" : "cuda") +
                        " runs this process's ranks as threads; a rank process needs --backend cuda --launch processes");
    const int local = process.rank - m_nodeRank * m_procsPerNode;
    if (local < 0 || local >= m_procsPerNode || (process.local_rank >= 0 && process.local_rank != local))
      throw ConfigError("rank " + std::to_string(process.rank) + " is not one of node " + std::to_string(m_nodeRank) +
                        "'s " + std::to_string(m_procsPerNode) + " ranks (--node-rank, --nproc-per-node)");
    m_process = process;
    m_localDevice = local;
    m_gpuName = deviceName(local);
  }

  std::unique_ptr<Communicator> connectMember(const std::string& name, const std::vector<int>& members,
                                              int group_rank, const MeshProcess& process) override {
    if (!m_process || !process.store)
      throw RunError("group '" + name + "': connectMember() needs setProcess() and a rendezvous store first");
    // As torchrun + NCCL: the group's first member makes the id, the store
    // carries it to the others, and each joins with its group rank.
    TokenExchange x;
    x.key = process.prefix + "/nccl/" + name;
    x.group = name;
    x.store_name = process.store_name.empty() ? "(unnamed)" : process.store_name;
    x.bytes = sizeof(ncclUniqueId::internal);
    x.timeout = std::max(std::chrono::milliseconds(process.connect_timeout_ms), m_timeout);
    const std::vector<uint8_t> id = exchangeToken(*process.store, x, group_rank == 0, [] { return makeNcclUniqueId(); });
    const int size = static_cast<int>(members.size());
    std::unique_ptr<NcclCommunicator> comm;
    try {
      comm = joinNcclGroup(id, group_rank, size, localDevice());
    } catch (const std::exception& e) {
      throw RunError("group '" + name + "': rank " + std::to_string(process.rank) + " (group rank " +
                     std::to_string(group_rank) + " of " + std::to_string(size) + ", GPU " +
                     std::to_string(localDevice()) + ") could not join NCCL: " + e.what());
    }
    // Each communicator is used by one thread (its stream's), as NCCL allows;
    // no cross-process launch order is imposed, as in PyTorch's process groups.
    return std::make_unique<QueueCommunicator>(std::move(comm));
  }

  std::vector<std::unique_ptr<Communicator>> createGroup(const std::string& name,
                                                         const std::vector<int>& members) override {
    std::vector<std::unique_ptr<Communicator>> out;
    if (m_process) throw RunError("group '" + name + "': a rank process connects its groups with connectMember()");
    if (m_emulated) {
      for (auto& comm : createEmulatedGroup(static_cast<int>(members.size()), 0))
        out.push_back(std::make_unique<QueueCommunicator>(std::move(comm)));
    } else {
      // One clique per group over its members' GPUs (group rank i on GPU members[i]),
      // launched through the rendezvous (NcclExecutor).
      const int size = static_cast<int>(members.size());
      auto group = std::make_shared<EmulatedGroup>(size, std::make_unique<NcclExecutor>(createNcclGroup(members)));
      for (int r = 0; r < size; ++r) {
        const int device = members[static_cast<size_t>(r)];
        out.push_back(std::make_unique<QueueCommunicator>(
            std::make_unique<EmulatedCommunicator>(group, r, device, nullptr, "nccl")));
      }
    }
    return out;
  }

 private:
  int localDevice() const { return m_localDevice; }

  bool m_emulated;
  std::chrono::milliseconds m_watchdog;
  int m_ranks = 0;
  int m_nodeRank = 0, m_procsPerNode = 0;  // --launch processes: this node's ranks, one per GPU
  int m_localDevice = 0;
  std::chrono::milliseconds m_timeout{0};
  std::string m_gpuName;
  std::optional<MeshProcess> m_process;  // set when this process hosts one rank (--launch processes)
};

}  // namespace

const CudaBackendApi* cudaBackendApi() {
  static const CudaBackendApi api{
      kCudaBackendAbi, [](const RunConfig& config) -> std::unique_ptr<DeviceRuntime> { return std::make_unique<CudaRuntime>(config); },
      &queryCudaDevices};
  return &api;
}

void registerCudaRuntime() { registerCudaBackend(cudaBackendApi()); }

}  // namespace shardscope::gpu
