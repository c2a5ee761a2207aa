// A "fake GPU" DeviceRuntime in host memory, so the engine's device plumbing
// (queues, markers, cross-stream waits, device memory, deferred timing) runs
// and is checked on machines without a GPU. It behaves like CUDA as far as
// the engine can tell: work launched on a queue runs LATER on the queue's own
// worker thread, after a seeded random delay, so a missing marker or sync
// shows up as wrong bits, a poisoned (NaN) read, a TSan race or an ASan report.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "common/collective.h"
#include "common/errors.h"
#include "common/run_clock.h"
#include "backend/device_runtime.h"
#include "config/run_config.h"
#include "kernels/cpu_kernels.h"
#include "memory/memory_ledger.h"
#include "model/model.h"
#include "model/model_spec.h"

#if defined(__SANITIZE_ADDRESS__)
#define SHARDSCOPE_FAKE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHARDSCOPE_FAKE_ASAN 1
#endif
#endif
#if defined(SHARDSCOPE_FAKE_ASAN)
#include <sanitizer/asan_interface.h>
#define SHARDSCOPE_FAKE_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define SHARDSCOPE_FAKE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define SHARDSCOPE_FAKE_POISON(p, n) ((void)(p), (void)(n))
#define SHARDSCOPE_FAKE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace shardscope::testing {

struct HostFakeOptions {
  uint64_t seed = 1;
  int max_delay_us = 200;  // each queued closure first sleeps uniform [0, max] µs
  int gloo_timeout_ms = 30000;
  // Fault injection: the fault_op-th DeviceOps call queued on rank fault_rank
  // (1-based) fails on its queue, as an asynchronous kernel error does.
  int fault_rank = -1;
  int fault_op = 0;
};

// What the fake saw, for tests to assert on (shared with the test, outlives the Run).
struct HostFakeProbe {
  std::mutex mutex;
  std::vector<std::multiset<int64_t>> marker_ns;  // [rank] every value markerNs() returned
  std::vector<std::string> errors;                // closures that threw on a queue
  int64_t leaked_blocks = 0;                      // live at their device's destruction
  int64_t devices_made = 0, devices_destroyed = 0;
  std::atomic<int64_t> ops_queued{0}, ops_sync{0};                  // DeviceOps calls
  std::atomic<int64_t> collectives_queued{0}, collectives_sync{0};  // communicator calls
  std::atomic<int64_t> cross_queue_frees{0};  // frees whose block another queue owned

  void addError(std::string e) {
    std::lock_guard lock(mutex);
    errors.push_back(std::move(e));
  }
};

// ---- markers and queues ----------------------------------------------------

// Shared so a waitFor() closure can outlive the DeviceMarker object (CUDA's
// cudaStreamWaitEvent captures the event's state at call time).
struct HostMarkerState {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::chrono::steady_clock::time_point at{};
  void complete(bool timing) {
    {
      std::lock_guard lock(mutex);
      if (timing) at = std::chrono::steady_clock::now();
      done = true;
    }
    cv.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return done; });
  }
  bool isDone() {
    std::lock_guard lock(mutex);
    return done;
  }
};

// A device's sticky error, as a CUDA context's: the first work that fails on
// any of its queues makes every later synchronization on the device throw.
class HostDeviceFault {
 public:
  explicit HostDeviceFault(std::string device) : m_device(std::move(device)) {}
  void set(const std::string& queue, const std::string& what) {
    std::lock_guard lock(m_mutex);
    if (m_error.empty()) m_error = queue + ": " + what;
  }
  void throwIfSet() const {
    std::lock_guard lock(m_mutex);
    if (!m_error.empty()) throw RunError("host-fake " + m_device + " failed on queue " + m_error);
  }
  bool isSet() const {
    std::lock_guard lock(m_mutex);
    return !m_error.empty();
  }

 private:
  std::string m_device;
  mutable std::mutex m_mutex;
  std::string m_error;
};

class HostMarker final : public DeviceMarker {
 public:
  HostMarker(bool timing, std::shared_ptr<HostDeviceFault> fault)
      : m_timing(timing), m_state(std::make_shared<HostMarkerState>()), m_fault(std::move(fault)) {}
  void hostWait(const RunControl&) const override { waitDone(); }
  void waitDone() const {
    m_state->wait();
    m_fault->throwIfSet();  // cudaEventSynchronize returns the sticky error
  }
  bool timing() const { return m_timing; }
  const std::shared_ptr<HostMarkerState>& state() const { return m_state; }

 private:
  bool m_timing;
  std::shared_ptr<HostMarkerState> m_state;
  std::shared_ptr<HostDeviceFault> m_fault;
};

// A fake CUDA stream: a worker thread running closures in FIFO order. A
// closure that throws sets its device's sticky error (synchronize() and
// marker waits then throw it), but later closures still run, so every marker
// completes and nothing waits forever.
class HostQueue final : public DeviceQueue {
 public:
  HostQueue(std::string name, uint64_t seed, int max_delay_us, std::shared_ptr<HostFakeProbe> probe,
            std::shared_ptr<HostDeviceFault> fault, std::function<void(HostQueue*)> on_destroy)
      : m_name(std::move(name)), m_rng(seed), m_maxDelayUs(max_delay_us), m_probe(std::move(probe)),
        m_fault(std::move(fault)), m_onDestroy(std::move(on_destroy)) {
    m_worker = std::thread([this] { workerLoop(); });
  }
  ~HostQueue() override {
    // Forget first (no free can target this queue after), then drain and stop:
    // closures launched before the forget still run.
    if (m_onDestroy) m_onDestroy(this);
    {
      std::lock_guard lock(m_mutex);
      m_stopping = true;
    }
    m_cv.notify_all();
    m_worker.join();
  }
  HostQueue(const HostQueue&) = delete;
  HostQueue& operator=(const HostQueue&) = delete;

  // Device work (a kernel, a copy, a collective): like CUDA after a sticky
  // error, it no longer runs once the device has failed. (A collective aborted
  // under Gloo may still be receiving into its buffer; a later copy must not read it.)
  void launchKernel(std::function<void()> work) {
    launch([fault = m_fault, work = std::move(work)] {
      if (!fault->isSet()) work();
    });
  }
  void launch(std::function<void()> work) {
    {
      std::lock_guard lock(m_mutex);
      m_tasks.push_back(std::move(work));
    }
    m_cv.notify_one();
  }
  DeviceMarkerPtr mark(bool timing) override {
    auto marker = std::make_shared<HostMarker>(timing, m_fault);
    launch([state = marker->state(), timing] { state->complete(timing); });
    return marker;
  }
  void waitFor(const DeviceMarker& marker) override {
    const auto* host = dynamic_cast<const HostMarker*>(&marker);
    if (!host) throw std::logic_error("host-fake " + m_name + ": waitFor() on a marker of another runtime");
    launch([state = host->state()] { state->wait(); });
  }
  void synchronize(const RunControl&) override { drain(); }
  void drain() {
    auto drained = std::make_shared<HostMarkerState>();  // the worker may still be notifying when we return
    launch([drained] { drained->complete(false); });
    drained->wait();
    m_fault->throwIfSet();
  }
  void* nativeHandle() const override { return const_cast<HostQueue*>(this); }
  void bindThread() override {}  // one host "device": nothing to make current
  const std::string& name() const { return m_name; }

 private:
  void workerLoop() {
    std::uniform_int_distribution<int> delay(0, std::max(0, m_maxDelayUs));
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock lock(m_mutex);
        m_cv.wait(lock, [&] { return m_stopping || !m_tasks.empty(); });
        if (m_tasks.empty()) return;  // stopping and drained
        work = std::move(m_tasks.front());
        m_tasks.pop_front();
      }
      if (const int us = delay(m_rng); us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
      try {
        work();
      } catch (const std::exception& e) {
        m_fault->set(m_name, e.what());
        m_probe->addError(m_name + ": " + e.what());
      }
    }
  }

  std::string m_name;
  std::mt19937_64 m_rng;  // the worker's own
  int m_maxDelayUs;
  std::shared_ptr<HostFakeProbe> m_probe;
  std::shared_ptr<HostDeviceFault> m_fault;
  std::function<void(HostQueue*)> m_onDestroy;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<std::function<void()>> m_tasks;
  bool m_stopping = false;
  std::thread m_worker;
};

// The calling thread's queue, as the fake's own type (null on a host thread).
inline HostQueue* currentHostQueue() {
  DeviceQueue* q = currentDeviceQueue();
  if (!q) return nullptr;
  auto* host = dynamic_cast<HostQueue*>(q);
  if (!host) throw std::logic_error("host-fake: the current device queue is not a HostQueue");
  return host;
}

// ---- memory ----------------------------------------------------------------

// Host memory with a caching allocator's contract: allocate() books the
// ledger at call time (exactly what Buffer<T> books on the CPU backend) and
// zeroes on the current queue, over bytes that start poisoned (0xFF: NaN in
// bf16 and f32). free() books at call time; the block is released only once
// the freeing queue AND the owning (allocating) queue have reached the free,
// i.e. it is safe for work launched before it on those two queues and no
// others, which is what device/rank_device.h promises. Released blocks are
// poisoned (0xFF, and ASan-poisoned) and reused by later allocations of the
// same size, so a late reader or writer on a third queue is caught.
class HostDeviceMemory final : public DeviceMemory {
 public:
  HostDeviceMemory(int rank, MemoryLedger& ledger, std::shared_ptr<HostFakeProbe> probe,
                   std::shared_ptr<HostDeviceFault> fault)
      : m_rank(rank), m_ledger(ledger), m_probe(std::move(probe)), m_fault(std::move(fault)) {}
  ~HostDeviceMemory() override {
    std::lock_guard lock(m_mutex);
    {
      std::lock_guard plock(m_probe->mutex);
      m_probe->leaked_blocks += static_cast<int64_t>(m_live.size());
    }
    for (auto& [size, ptrs] : m_free)
      for (void* p : ptrs) {
        SHARDSCOPE_FAKE_UNPOISON(p, size);
        std::free(p);
      }
    for (void* p : m_retired) std::free(p);
    // Live blocks are leaked on purpose: something still points at them.
  }

  void* allocate(size_t bytes, Category category) override {
    HostQueue* q = currentHostQueue();
    const size_t capacity = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    void* p = nullptr;
    {
      std::lock_guard lock(m_mutex);
      auto it = m_free.find(capacity);
      if (it != m_free.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        SHARDSCOPE_FAKE_UNPOISON(p, capacity);  // still 0xFF from its release
      }
    }
    if (!p) {
      p = std::aligned_alloc(64, capacity);
      if (!p) throw std::bad_alloc();
      std::memset(p, 0xFF, capacity);  // fresh device memory is garbage
    }
    m_ledger.onAlloc(category, static_cast<int64_t>(bytes));
    {
      std::lock_guard lock(m_mutex);
      m_live[reinterpret_cast<uintptr_t>(p)] = {bytes, capacity, category, q};
      m_allocated += static_cast<int64_t>(bytes);
      m_allocatedPeak = std::max(m_allocatedPeak, m_allocated);
    }
    if (q) q->launch([p, bytes] { std::memset(p, 0, bytes); });
    else std::memset(p, 0, bytes);
    return p;
  }

  void free(void* ptr) noexcept override {
    if (!ptr) return;
    HostQueue* q = nullptr;
    try {
      q = currentHostQueue();
    } catch (const std::exception&) {
    }
    Block block;
    {
      std::lock_guard lock(m_mutex);
      auto it = m_live.find(reinterpret_cast<uintptr_t>(ptr));
      if (it == m_live.end()) {
        std::fprintf(stderr, "host-fake rank %d: free(%p) of memory that is not a live device allocation\n",
                     m_rank, ptr);
        std::abort();
      }
      block = it->second;
      m_live.erase(it);
      m_allocated -= static_cast<int64_t>(block.bytes);
      m_ledger.onFree(block.category, static_cast<int64_t>(block.bytes));
      std::vector<HostQueue*> barriers;
      if (q) barriers.push_back(q);
      if (block.owner && block.owner != q) {
        barriers.push_back(block.owner);
        if (q) m_probe->cross_queue_frees.fetch_add(1, std::memory_order_relaxed);
      }
      if (!barriers.empty()) {
        // Launched under m_mutex: a queue being destroyed forgets itself under
        // it too, so every barrier here is alive and runs the closure.
        auto remaining = std::make_shared<std::atomic<int>>(static_cast<int>(barriers.size()));
        for (HostQueue* b : barriers)
          b->launch([this, ptr, capacity = block.capacity, remaining] {
            if (remaining->fetch_sub(1) == 1) release(ptr, capacity);
          });
        return;
      }
    }
    release(ptr, block.capacity);  // a host-owned block freed on a host thread: at once
  }

  // Throws unless [p, p + bytes) lies inside one live allocation.
  void checkDevice(const void* p, size_t bytes, const char* what) const {
    if (bytes == 0) return;
    const auto a = reinterpret_cast<uintptr_t>(p);
    std::lock_guard lock(m_mutex);
    auto it = m_live.upper_bound(a);
    if (it != m_live.begin()) {
      --it;
      if (a >= it->first && a + bytes <= it->first + it->second.bytes) return;
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "host-fake rank %d: %s of %zu bytes at %p is not inside a live device buffer",
                  m_rank, what, bytes, p);
    throw std::logic_error(buf);
  }

  // A queue is going away: blocks it owns become host-owned (their later free
  // has nothing of that queue left to wait for).
  void forgetQueue(HostQueue* q) {
    std::lock_guard lock(m_mutex);
    for (auto& [addr, b] : m_live)
      if (b.owner == q) b.owner = nullptr;
  }

  RankDevice::MemoryReport report() const {
    std::lock_guard lock(m_mutex);
    RankDevice::MemoryReport r;
    r.allocated_bytes = r.reserved_bytes = m_allocated;
    r.allocated_peak = r.reserved_peak = m_allocatedPeak;
    return r;
  }

 private:
  struct Block {
    size_t bytes = 0, capacity = 0;
    Category category = Category::Workspace;
    HostQueue* owner = nullptr;  // allocating queue; null: a host thread's
  };
  void release(void* ptr, size_t capacity) {
    if (m_fault->isSet()) {
      // A failed device's memory is only given back with the device: a
      // collective aborted under Gloo may still be sending from or receiving
      // into it (the CPU backend keeps such buffers until the mesh is closed).
      std::lock_guard lock(m_mutex);
      m_retired.push_back(ptr);
      return;
    }
    std::memset(ptr, 0xFF, capacity);
    SHARDSCOPE_FAKE_POISON(ptr, capacity);
    std::lock_guard lock(m_mutex);
    m_free[capacity].push_back(ptr);
  }

  int m_rank;
  MemoryLedger& m_ledger;
  std::shared_ptr<HostFakeProbe> m_probe;
  mutable std::mutex m_mutex;
  std::map<uintptr_t, Block> m_live;
  std::unordered_map<size_t, std::vector<void*>> m_free;
  std::vector<void*> m_retired;  // freed after the device failed
  std::shared_ptr<HostDeviceFault> m_fault;
  int64_t m_allocated = 0, m_allocatedPeak = 0;
};

// ---- kernels -----------------------------------------------------------------

class HostDeviceOps final : public DeviceOps {
 public:
  HostDeviceOps(HostDeviceMemory& memory, std::shared_ptr<HostFakeProbe> probe,
                std::shared_ptr<HostDeviceFault> fault, int fault_op)
      : m_memory(memory), m_probe(std::move(probe)), m_fault(std::move(fault)), m_faultOp(fault_op) {}

  void copy(void* dst, const void* src, size_t bytes) override {
    m_memory.checkDevice(dst, bytes, "copy dst");
    m_memory.checkDevice(src, bytes, "copy src");
    run([=] { std::memcpy(dst, src, bytes); });
  }
  void upload(void* dst, const void* host_src, size_t bytes) override {
    m_memory.checkDevice(dst, bytes, "upload dst");
    // Pageable memory is staged at the call: the source may change right after.
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(host_src),
                                                      static_cast<const char*>(host_src) + bytes);
    run([dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
  }
  void download(void* host_dst, const void* src, size_t bytes) override {
    m_memory.checkDevice(src, bytes, "download src");
    if (HostQueue* q = currentHostQueue()) q->drain();
    m_fault->throwIfSet();  // a synchronous copy returns the sticky error
    std::memcpy(host_dst, src, bytes);
    m_probe->ops_sync.fetch_add(1, std::memory_order_relaxed);
  }
  void scaleBf16(bf16* y, float s, size_t n) override {
    m_memory.checkDevice(y, n * sizeof(bf16), "scaleBf16 y");
    run([=] { cpu::scaleBf16InPlace(y, s, n); });
  }
  void f32ToBf16(const float* in, bf16* out, size_t n) override {
    m_memory.checkDevice(in, n * sizeof(float), "f32ToBf16 in");
    m_memory.checkDevice(out, n * sizeof(bf16), "f32ToBf16 out");
    run([=] { cpu::f32ToBf16(in, out, n); });
  }
  void adamStep(float* master, float* m, float* v, const bf16* grad, bf16* param_out, size_t n,
                const cpu::AdamConfig& config, int step) override {
    m_memory.checkDevice(master, n * sizeof(float), "adamStep master");
    m_memory.checkDevice(m, n * sizeof(float), "adamStep m");
    m_memory.checkDevice(v, n * sizeof(float), "adamStep v");
    m_memory.checkDevice(grad, n * sizeof(bf16), "adamStep grad");
    m_memory.checkDevice(param_out, n * sizeof(bf16), "adamStep param_out");
    run([=] { cpu::adamStep(master, m, v, grad, param_out, n, config, step); });
  }

 private:
  // On a stream thread: launched on its queue; on a host thread: done at return.
  template <class F>
  void run(F&& work) {
    if (HostQueue* q = currentHostQueue()) {
      if (m_faultOp > 0 && m_queued.fetch_add(1) + 1 == m_faultOp)
        q->launch([] { throw std::runtime_error("injected device fault (an illegal memory access)"); });
      else q->launchKernel(std::forward<F>(work));
      m_probe->ops_queued.fetch_add(1, std::memory_order_relaxed);
    } else {
      m_fault->throwIfSet();
      work();
      m_probe->ops_sync.fetch_add(1, std::memory_order_relaxed);
    }
  }

  HostDeviceMemory& m_memory;
  std::shared_ptr<HostFakeProbe> m_probe;
  std::shared_ptr<HostDeviceFault> m_fault;
  int m_faultOp;  // 0: none
  std::atomic<int> m_queued{0};
};

// ---- model -------------------------------------------------------------------

// Sets the calling thread's current queue for a scope, restoring it after.
class ScopedCurrentQueue {
 public:
  explicit ScopedCurrentQueue(DeviceQueue* q) : m_saved(currentDeviceQueue()) { setCurrentDeviceQueue(q); }
  ~ScopedCurrentQueue() { setCurrentDeviceQueue(m_saved); }
  ScopedCurrentQueue(const ScopedCurrentQueue&) = delete;
  ScopedCurrentQueue& operator=(const ScopedCurrentQueue&) = delete;

 private:
  DeviceQueue* m_saved;
};

// The CPU model computes on the calling thread, so each call first drains the
// current queue (every device dependency the engine ordered before it has then
// run: gathers, copies, zeroing) and runs with no current queue (its own
// buffers are then synchronous host-thread allocations). onReady runs with the
// stream's queue current again, so what the engine launches from it is queued
// exactly as on a GPU, in the CPU model's order.
class HostFakeModel final : public Model {
 public:
  explicit HostFakeModel(std::unique_ptr<Model> cpu) : m_cpu(std::move(cpu)) {}
  void loadBatch(int step, int64_t first) override {
    onHost([&](DeviceQueue*) { m_cpu->loadBatch(step, first); });
  }
  void releaseBatch() override {
    onHost([&](DeviceQueue*) { m_cpu->releaseBatch(); });
  }
  void forward(int segment, const bf16* w, bool skip) override {
    onHost([&](DeviceQueue*) { m_cpu->forward(segment, w, skip); });
  }
  double loss() override {
    double l = 0;
    onHost([&](DeviceQueue*) { l = m_cpu->loss(); });
    return l;
  }
  double finishLoss(double from_loss) override { return m_cpu->finishLoss(from_loss); }
  void backward(int segment, const bf16* w, bf16* g, const std::function<void(int)>& onReady,
                bool skip) override {
    onHost([&](DeviceQueue* stream_queue) {
      std::function<void(int)> hook;
      if (onReady)
        hook = [&](int param) {
          ScopedCurrentQueue back(stream_queue);
          onReady(param);
        };
      m_cpu->backward(segment, w, g, hook, skip);
    });
  }
  int localBatch() const override { return m_cpu->localBatch(); }
  double forwardFlops(int segment) const override { return m_cpu->forwardFlops(segment); }

 private:
  template <class F>
  void onHost(F&& f) {
    DeviceQueue* q = currentDeviceQueue();
    if (q) static_cast<HostQueue*>(q)->drain();
    ScopedCurrentQueue none(nullptr);
    f(q);
  }
  std::unique_ptr<Model> m_cpu;
};

// ---- collectives -------------------------------------------------------------

class HostDeviceRuntime;

// A Gloo communicator whose work runs on the caller's queue, as NCCL's does:
// a call on a stream thread launches the Gloo call on the stream's queue and
// returns; on a host thread (the setup broadcast) it is done at return. Bytes
// are counted at the call with the ring formula, and each Gloo call checks
// the formula against what Gloo really sent.
class HostFakeCommunicator final : public Communicator {
 public:
  HostFakeCommunicator(std::unique_ptr<Communicator> gloo, int global_rank, HostDeviceRuntime& runtime,
                       std::shared_ptr<HostFakeProbe> probe)
      : m_gloo(std::move(gloo)), m_globalRank(global_rank), m_runtime(runtime), m_probe(std::move(probe)) {}

  int rank() const override { return m_gloo->rank(); }
  int size() const override { return m_gloo->size(); }
  std::string backendName() const override { return "host-fake(gloo)"; }

  void allReduce(void* data, size_t count, DType dtype) override {
    checkDevice(data, count * dtypeSize(dtype), "allReduce data");
    launch(ringBytesSent(Collective::AllReduce, rank(), size(), count, dtypeSize(dtype)), "allReduce",
           [=](Communicator& g) { g.allReduce(data, count, dtype); });
  }
  void reduceScatter(const void* input, void* output, size_t count, DType dtype) override {
    checkDevice(input, count * static_cast<size_t>(size()) * dtypeSize(dtype), "reduceScatter input");
    checkDevice(output, count * dtypeSize(dtype), "reduceScatter output");
    launch(ringBytesSent(Collective::ReduceScatter, rank(), size(), count, dtypeSize(dtype)), "reduceScatter",
           [=](Communicator& g) { g.reduceScatter(input, output, count, dtype); });
  }
  void allGather(const void* input, void* output, size_t count, DType dtype) override {
    checkDevice(input, count * dtypeSize(dtype), "allGather input");
    checkDevice(output, count * static_cast<size_t>(size()) * dtypeSize(dtype), "allGather output");
    launch(ringBytesSent(Collective::AllGather, rank(), size(), count, dtypeSize(dtype)), "allGather",
           [=](Communicator& g) { g.allGather(input, output, count, dtype); });
  }
  void broadcast(void* data, size_t count, DType dtype, int root) override {
    checkDevice(data, count * dtypeSize(dtype), "broadcast data");
    launch(ringBytesSent(Collective::Broadcast, rank(), size(), count, dtypeSize(dtype), root), "broadcast",
           [=](Communicator& g) { g.broadcast(data, count, dtype, root); });
  }
  void barrier() override {
    // Gloo's barrier is a one-float all-reduce.
    launch(ringBytesSent(Collective::AllReduce, rank(), size(), 1, dtypeSize(DType::F32)), "barrier",
           [](Communicator& g) { g.barrier(); });
  }
  uint64_t bytesSent() const override { return m_bytes.load(std::memory_order_relaxed); }
  void abort() override { m_gloo->abort(); }

 private:
  inline void checkDevice(const void* p, size_t bytes, const char* what) const;
  template <class F>
  void launch(uint64_t bytes, const char* op, F&& call) {
    m_bytes.fetch_add(bytes, std::memory_order_relaxed);
    auto work = [g = m_gloo.get(), bytes, op, call = std::forward<F>(call)] {
      const uint64_t before = g->bytesSent();
      call(*g);
      const uint64_t sent = g->bytesSent() - before;
      if (sent != bytes)
        throw std::logic_error(std::string("host-fake ") + op + ": Gloo sent " + std::to_string(sent) +
                               " bytes, the ring formula counted " + std::to_string(bytes));
    };
    if (HostQueue* q = currentHostQueue()) {
      q->launchKernel(std::move(work));
      m_probe->collectives_queued.fetch_add(1, std::memory_order_relaxed);
    } else {
      work();
      m_probe->collectives_sync.fetch_add(1, std::memory_order_relaxed);
    }
  }

  std::unique_ptr<Communicator> m_gloo;
  int m_globalRank;
  HostDeviceRuntime& m_runtime;
  std::shared_ptr<HostFakeProbe> m_probe;
  std::atomic<uint64_t> m_bytes{0};
};

// ---- rank device and runtime ---------------------------------------------------

class HostRankDevice final : public RankDevice {
 public:
  HostRankDevice(int rank, MemoryLedger& ledger, const HostFakeOptions& options,
                 std::shared_ptr<HostFakeProbe> probe, HostDeviceRuntime& runtime);
  ~HostRankDevice() override;

  std::string name() const override { return "host-fake GPU " + std::to_string(m_rank); }
  DeviceMemory& memory() override { return m_memory; }
  HostDeviceMemory& hostMemory() { return m_memory; }
  DeviceOps& ops() override { return m_ops; }
  std::unique_ptr<DeviceQueue> makeQueue(const std::string& name, int /*priority*/) override {
    const uint64_t seed = m_options.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(m_rank) * 64 +
                          static_cast<uint64_t>(m_queues++);
    return std::make_unique<HostQueue>("rank" + std::to_string(m_rank) + "." + name, seed, m_options.max_delay_us,
                                       m_probe, m_fault, [this](HostQueue* q) { m_memory.forgetQueue(q); });
  }
  std::unique_ptr<Model> makeModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch,
                                   uint64_t seed) override {
    return std::make_unique<HostFakeModel>(shardscope::makeModel(spec, ledger, local_batch, seed));
  }
  void syncOrigin(const RunClock& clock) override {
    // The run clock read between two steady reads that lie < 200 ns apart
    // (retried if preempted): marker times then map to within 100 ns.
    for (int attempt = 0; attempt < 100; ++attempt) {
      const auto before = std::chrono::steady_clock::now();
      m_clockOrigin = clock.nowNs();
      const auto after = std::chrono::steady_clock::now();
      m_steadyOrigin = before + (after - before) / 2;
      if (after - before < std::chrono::nanoseconds(200)) break;
    }
  }
  int64_t markerNs(const DeviceMarker& timing_marker) override {
    const auto* m = dynamic_cast<const HostMarker*>(&timing_marker);
    if (!m || !m->timing()) throw std::logic_error("host-fake markerNs: not a timing marker of this runtime");
    if (!m->state()->isDone()) throw std::logic_error("host-fake markerNs: the marker is not complete yet");
    const int64_t ns =
        m_clockOrigin +
        std::chrono::duration_cast<std::chrono::nanoseconds>(m->state()->at - m_steadyOrigin).count();
    std::lock_guard lock(m_probe->mutex);
    m_probe->marker_ns[static_cast<size_t>(m_rank)].insert(ns);
    return ns;
  }
  MemoryReport memoryReport() const override { return m_memory.report(); }

 private:
  int m_rank;
  HostFakeOptions m_options;
  std::shared_ptr<HostFakeProbe> m_probe;
  HostDeviceRuntime& m_runtime;
  std::shared_ptr<HostDeviceFault> m_fault;
  HostDeviceMemory m_memory;
  HostDeviceOps m_ops;
  int m_queues = 0;
  std::chrono::steady_clock::time_point m_steadyOrigin{};
  int64_t m_clockOrigin = 0;
};

class HostDeviceRuntime final : public DeviceRuntime {
 public:
  HostDeviceRuntime(const RunConfig& config, HostFakeOptions options, std::shared_ptr<HostFakeProbe> probe)
      : m_ranks(config.ranks), m_options(options), m_probe(std::move(probe)),
        m_devices(static_cast<size_t>(config.ranks), nullptr) {
    std::lock_guard lock(m_probe->mutex);
    m_probe->marker_ns.assign(static_cast<size_t>(config.ranks), {});
  }
  std::string describe() const override { return "host-fake: " + std::to_string(m_ranks) + " ranks"; }
  std::unique_ptr<RankDevice> makeRankDevice(int rank, MemoryLedger& ledger) override {
    return std::make_unique<HostRankDevice>(rank, ledger, m_options, m_probe, *this);
  }
  std::vector<std::unique_ptr<Communicator>> createGroup(const std::string& name,
                                                         const std::vector<int>& members) override {
    auto gloo = createGlooGroup(static_cast<int>(members.size()), "fake." + name, m_options.gloo_timeout_ms);
    std::vector<std::unique_ptr<Communicator>> group;
    for (size_t i = 0; i < gloo.size(); ++i)
      group.push_back(std::make_unique<HostFakeCommunicator>(std::move(gloo[i]), members[i], *this, m_probe));
    return group;
  }

  void attach(int rank, HostRankDevice* device) {
    std::lock_guard lock(m_mutex);
    m_devices[static_cast<size_t>(rank)] = device;
  }
  // Collective buffers must be the calling rank's device memory.
  void checkDevice(int rank, const void* p, size_t bytes, const char* what) {
    std::lock_guard lock(m_mutex);
    HostRankDevice* d = m_devices[static_cast<size_t>(rank)];
    if (!d) throw std::logic_error(std::string("host-fake ") + what + ": rank " + std::to_string(rank) +
                                   " has no device (a collective before makeRankDevice or after its end)");
    d->hostMemory().checkDevice(p, bytes, what);
  }

 private:
  int m_ranks;
  HostFakeOptions m_options;
  std::shared_ptr<HostFakeProbe> m_probe;
  std::mutex m_mutex;
  std::vector<HostRankDevice*> m_devices;
};

inline HostRankDevice::HostRankDevice(int rank, MemoryLedger& ledger, const HostFakeOptions& options,
                                      std::shared_ptr<HostFakeProbe> probe, HostDeviceRuntime& runtime)
    : m_rank(rank), m_options(options), m_probe(probe), m_runtime(runtime),
      m_fault(std::make_shared<HostDeviceFault>("GPU " + std::to_string(rank))), m_memory(rank, ledger, probe, m_fault),
      m_ops(m_memory, probe, m_fault, rank == options.fault_rank ? options.fault_op : 0) {
  m_runtime.attach(rank, this);
  std::lock_guard lock(m_probe->mutex);
  ++m_probe->devices_made;
}

inline HostRankDevice::~HostRankDevice() {
  m_runtime.attach(m_rank, nullptr);
  std::lock_guard lock(m_probe->mutex);
  ++m_probe->devices_destroyed;
}

inline void HostFakeCommunicator::checkDevice(const void* p, size_t bytes, const char* what) const {
  m_runtime.checkDevice(m_globalRank, p, bytes, what);
}

// Registers the fake as the process's GPU runtime; returns the probe the
// runtimes it builds report to (register once per Run to keep probes apart).
inline std::shared_ptr<HostFakeProbe> registerHostDeviceRuntime(HostFakeOptions options = {}) {
  auto probe = std::make_shared<HostFakeProbe>();
  registerDeviceRuntime([options, probe](const RunConfig& config) -> std::unique_ptr<DeviceRuntime> {
    return std::make_unique<HostDeviceRuntime>(config, options, probe);
  });
  return probe;
}

}  // namespace shardscope::testing
