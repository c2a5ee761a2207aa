// The CUDA backend's host-side logic, which runs without a GPU: the caching
// allocator's size classes and block pool (over a fake backend with events the
// test completes by hand), the emulated group's rendezvous and collectives (over
// a host-memory executor), ring byte counts against MetaCommunicator, the check
// macros' messages, and kernel argument checks that throw before any launch.
#include <QtTest>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <thread>

#include "comm/meta_communicator.h"
#include "common/errors.h"
#include "cuda/block_pool.h"
#include "cuda/caching_allocator.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/emulated_group.h"
#include "memory/memory_ledger.h"
#include "tensor/bf16.h"

using namespace shardscope;
using namespace shardscope::gpu;

namespace {

StreamHandle fakeStream(uintptr_t id) { return reinterpret_cast<StreamHandle>(id); }

// Host memory with an optional capacity, and events that complete only when the
// test says so.
class FakeBackend final : public BlockPoolBackend {
 public:
  size_t capacity = SIZE_MAX;  // bytes the "device" holds
  size_t used = 0;
  int allocs = 0, releases = 0;
  std::vector<std::unique_ptr<bool>> events;  // *event == done
  std::vector<StreamHandle> eventStreams;
  int liveEvents = 0;

  void* allocate(size_t bytes) override {
    if (used + bytes > capacity) return nullptr;
    used += bytes;
    ++allocs;
    void* p = std::malloc(bytes);
    m_sizes[p] = bytes;
    return p;
  }
  void release(void* ptr) override {
    used -= m_sizes.at(ptr);
    m_sizes.erase(ptr);
    ++releases;
    std::free(ptr);
  }
  EventId recordEvent(StreamHandle stream) override {
    events.push_back(std::make_unique<bool>(false));
    eventStreams.push_back(stream);
    ++liveEvents;
    return events.back().get();
  }
  bool eventDone(EventId event) override { return *static_cast<bool*>(event); }
  void destroyEvent(EventId) override { --liveEvents; }
  void completeAll() {
    for (auto& e : events) *e = true;
  }

 private:
  std::map<void*, size_t> m_sizes;
};

// Runs collectives on host memory, synchronously, as the CUDA executor would on a GPU.
class HostExecutor final : public CollectiveExecutor {
 public:
  std::atomic<int> launches{0};
  std::atomic<int> aborts{0};
  std::function<void()> failLaunch;  // throws, when set

  void abort() override { ++aborts; }
  void markReady(int, const CollectivePost&) override {}
  void join(int, const CollectivePost&, int) override {}
  void launch(const std::vector<CollectivePost>& posts, int last) override {
    ++launches;
    if (failLaunch) failLaunch();
    const CollectivePost& p = posts[static_cast<size_t>(last)];
    const size_t P = posts.size(), e = dtypeSize(p.dtype), n = p.count;
    auto get = [&](const void* base, size_t i) {
      return p.dtype == DType::F32 ? static_cast<const float*>(base)[i]
                                   : toFloat(static_cast<const bf16*>(base)[i]);
    };
    auto put = [&](void* base, size_t i, float v) {
      if (p.dtype == DType::F32) static_cast<float*>(base)[i] = v;
      else static_cast<bf16*>(base)[i] = toBf16(v);
    };
    switch (p.op) {
      case Collective::AllReduce:
      case Collective::ReduceScatter: {
        const bool scatter = p.op == Collective::ReduceScatter;
        for (size_t j = 0; j < (scatter ? n * P : n); ++j) {
          float sum = 0.0f;
          for (size_t q = 0; q < P; ++q) sum += get(posts[q].input, j);
          if (scatter) put(posts[j / n].output, j % n, sum);
          else for (size_t o = 0; o < P; ++o) put(posts[o].output, j, sum);
        }
        break;
      }
      case Collective::AllGather:
        for (size_t d = 0; d < P; ++d) {
          for (size_t s = 0; s < P; ++s) {
            char* chunk = static_cast<char*>(posts[d].output) + s * n * e;
            if (chunk != posts[s].input) std::memcpy(chunk, posts[s].input, n * e);
          }
        }
        break;
      case Collective::Broadcast:
        for (size_t d = 0; d < P; ++d) {
          if (posts[d].output != posts[static_cast<size_t>(p.root)].input) {
            std::memcpy(posts[d].output, posts[static_cast<size_t>(p.root)].input, n * e);
          }
        }
        break;
      case Collective::Barrier:
        break;
      default:
        QFAIL("not a GpuCommunicator collective");
    }
  }
};

struct HostGroup {
  HostExecutor* executor = nullptr;
  std::vector<std::unique_ptr<GpuCommunicator>> comms;
};

HostGroup makeHostGroup(int P) {
  auto executor = std::make_unique<HostExecutor>();
  HostGroup g;
  g.executor = executor.get();
  std::vector<StreamHandle> streams;
  for (int r = 0; r < P; ++r) streams.push_back(fakeStream(0x100 + static_cast<uintptr_t>(r)));
  g.comms = createEmulatedGroup(P, std::move(executor), /*device=*/0, streams);
  return g;
}

// fn(rank) on P threads; returns each rank's exception text ("" if none).
std::vector<std::string> onThreads(int P, const std::function<void(int)>& fn) {
  std::vector<std::string> errors(static_cast<size_t>(P));
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const RunAborted&) {
        errors[static_cast<size_t>(r)] = "aborted";
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

template <class F>
QString thrownText(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestCudaHostLogic : public QObject {
  Q_OBJECT

 private slots:
  void sizeClasses_data() {
    QTest::addColumn<qulonglong>("bytes");
    QTest::addColumn<qulonglong>("cls");
    const qulonglong MiB = 1 << 20;
    QTest::newRow("1 B") << 1ull << 512ull;
    QTest::newRow("512 B") << 512ull << 512ull;
    QTest::newRow("513 B") << 513ull << 1024ull;
    QTest::newRow("1 MiB") << MiB << MiB;
    QTest::newRow("1 MiB + 1") << MiB + 1 << MiB + MiB / 8;
    QTest::newRow("3 MiB") << 3 * MiB << 3 * MiB;
    QTest::newRow("3 MiB + 1") << 3 * MiB + 1 << 3 * MiB + MiB / 4;
    QTest::newRow("1 GiB + 1") << (1ull << 30) + 1 << (1ull << 30) + (1ull << 27);
  }
  void sizeClasses() {
    QFETCH(qulonglong, bytes);
    QFETCH(qulonglong, cls);
    QCOMPARE(static_cast<qulonglong>(sizeClassBytes(bytes)), cls);
  }

  void sizeClassesBoundWaste() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sizeClassBytes(0));
    size_t previous = 0;
    for (size_t b = 1; b < (size_t{64} << 20); b = b * 9 / 8 + 7) {
      const size_t c = sizeClassBytes(b);
      QVERIFY(c >= b);
      QVERIFY(c >= previous);  // monotone
      if (b > kSmallLimit) QVERIFY2(c - b <= b / 8, qPrintable(QString::number(b)));
      else QVERIFY(c - b < kSmallGranule);
      previous = c;
    }
  }

  void poolBooksLedgerAndStats() {
    FakeBackend backend;
    MemoryLedger ledger(0, nullptr, nullptr);
    BlockPool pool(backend, &ledger, "test");
    const StreamHandle s = fakeStream(1);
    void* a = pool.allocate(1000, Category::Grad, s);
    void* b = pool.allocate(3 << 20, Category::Activation, s);
    QCOMPARE(ledger.current(Category::Grad), int64_t{1000});
    QCOMPARE(ledger.current(Category::Activation), int64_t{3 << 20});
    AllocatorStats st = pool.stats();
    QCOMPARE(st.allocated_bytes, int64_t{1000 + (3 << 20)});
    QCOMPARE(st.in_use_bytes, int64_t{1024 + (3 << 20)});
    QCOMPARE(st.reserved_bytes, st.in_use_bytes);
    QCOMPARE(st.backend_allocs, int64_t{2});
    pool.free(b);
    st = pool.stats();
    QCOMPARE(ledger.current(Category::Activation), int64_t{0});
    QCOMPARE(ledger.peak(Category::Activation), int64_t{3 << 20});
    QCOMPARE(st.allocated_bytes, int64_t{1000});
    QCOMPARE(st.reserved_bytes, int64_t{1024 + (3 << 20)});  // cached, not returned
    QCOMPARE(st.cached_bytes, int64_t{3 << 20});
    QVERIFY(pool.describe().find("reserved 3 MiB") != std::string::npos);
    // Same stream, same class (3 MiB - 5 rounds to 3 MiB): reused, no backend call.
    void* c = pool.allocate((3 << 20) - 5, Category::Workspace, s);
    QCOMPARE(c, b);
    QCOMPARE(pool.stats().backend_allocs, int64_t{2});
    QCOMPARE(pool.stats().reuses, int64_t{1});
    QCOMPARE(ledger.current(Category::Workspace), int64_t{(3 << 20) - 5});
    pool.free(c);
    // Another stream never gets this stream's block.
    void* d = pool.allocate(3 << 20, Category::Workspace, fakeStream(2));
    QVERIFY(d != b);
    QCOMPARE(pool.stats().backend_allocs, int64_t{3});
    pool.free(d);
    pool.free(a);
    pool.releaseCached();
    QCOMPARE(pool.stats().reserved_bytes, int64_t{0});
    QCOMPARE(backend.used, size_t{0});
    QCOMPARE(backend.releases, 3);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, pool.free(a));  // double free
  }

  void crossStreamFreeWaitsForEvents() {
    FakeBackend backend;
    BlockPool pool(backend, nullptr, "test");
    const StreamHandle s1 = fakeStream(1), s2 = fakeStream(2), s3 = fakeStream(3);
    void* p = pool.allocate(4096, Category::Bucket, s1);
    pool.markUsedOn(p, s2);
    pool.markUsedOn(p, s3);
    pool.markUsedOn(p, s2);  // counted once
    pool.markUsedOn(p, s1);  // the owner needs no event
    pool.free(p);
    QCOMPARE(backend.eventStreams.size(), size_t{2});
    QCOMPARE(pool.stats().pending_bytes, int64_t{4096});
    void* q = pool.allocate(4096, Category::Bucket, s1);
    QVERIFY2(q != p, "reused while s2/s3 may still read it");
    *backend.events[0] = true;  // s2 done, s3 not yet
    pool.free(q);
    void* r = pool.allocate(4096, Category::Bucket, s1);
    QCOMPARE(r, q);  // q was free at once (no other stream); p still pending
    *backend.events[1] = true;
    void* t = pool.allocate(4096, Category::Bucket, s1);
    QCOMPARE(t, p);
    QCOMPARE(backend.liveEvents, 0);
    QCOMPARE(pool.stats().pending_bytes, int64_t{0});
    pool.free(r);
    pool.free(t);
  }

  void outOfMemoryReleasesCacheThenThrows() {
    FakeBackend backend;
    backend.capacity = 8 << 20;
    MemoryLedger ledger(0, nullptr, nullptr);
    BlockPool pool(backend, &ledger, "rank 3 GPU 0");
    void* a = pool.allocate(6 << 20, Category::Param, fakeStream(1));
    pool.free(a);  // cached on stream 1
    // Stream 2 needs 6 MiB: only fits once stream 1's cache goes back.
    void* b = pool.allocate(6 << 20, Category::Param, fakeStream(2));
    QVERIFY(b != nullptr);
    QCOMPARE(backend.releases, 1);
    const QString text = thrownText([&] { pool.allocate(4 << 20, Category::Param, fakeStream(2)); });
    QVERIFY2(text.contains("out of device memory on rank 3 GPU 0") && text.contains("allocated 6 MiB"),
             qPrintable(text));
    QCOMPARE(ledger.current(Category::Param), int64_t{6 << 20});  // the failure booked nothing
    pool.free(b);
  }

  void metaDeviceBufferBooksWithoutCuda() {
    MemoryLedger ledger(0, nullptr, nullptr, /*meta=*/true);
    CachingAllocator alloc(0, ledger);  // constructing touches no CUDA call
    {
      DeviceBuffer<bf16> grads(alloc, Category::Grad, 1000);
      QCOMPARE(ledger.current(Category::Grad), int64_t{2000});
      QCOMPARE(reinterpret_cast<uintptr_t>(grads.data()), kMetaAddress);
      DeviceBuffer<bf16> moved = std::move(grads);
      QCOMPARE(moved.bytes(), size_t{2000});
      QVERIFY(grads.empty());
    }
    QCOMPARE(ledger.current(Category::Grad), int64_t{0});
    QCOMPARE(ledger.peak(Category::Grad), int64_t{2000});
    QCOMPARE(alloc.stats().reserved_bytes, int64_t{0});
  }

  void ringBytesMatchMetaCommunicator() {
    for (int P : {1, 2, 3, 4, 7}) {
      auto meta = createMetaGroup(P);
      for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{1003}}) {
        for (DType dt : {DType::F32, DType::BF16}) {
          for (int r = 0; r < P; ++r) {
            Communicator& m = *meta[static_cast<size_t>(r)];
            auto check = [&](Collective op, int root, const std::function<void()>& call) {
              const uint64_t before = m.bytesSent();
              call();
              QCOMPARE(ringBytesSent(op, r, P, count, dtypeSize(dt), root), m.bytesSent() - before);
            };
            check(Collective::AllReduce, 0, [&] { m.allReduce(nullptr, count, dt); });
            check(Collective::ReduceScatter, 0, [&] { m.reduceScatter(nullptr, nullptr, count, dt); });
            check(Collective::AllGather, 0, [&] { m.allGather(nullptr, nullptr, count, dt); });
            for (int root = 0; root < P; ++root) {
              check(Collective::Broadcast, root, [&] { m.broadcast(nullptr, count, dt, root); });
            }
          }
        }
      }
    }
    // A 4-rank all-reduce of 1000 f32 moves 2 (P-1)/P of the buffer per rank.
    QCOMPARE(ringBytesSent(Collective::AllReduce, 0, 4, 1000, dtypeSize(DType::F32)), uint64_t{6000});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ringBytesSent(Collective::AllGather, 4, 4, 1, dtypeSize(DType::F32)));
  }

  void emulatedCollectivesExact_data() {
    QTest::addColumn<bool>("bf16Data");
    QTest::addColumn<bool>("inPlace");
    QTest::newRow("f32") << false << false;
    QTest::newRow("f32 in place") << false << true;
    QTest::newRow("bf16") << true << false;
    QTest::newRow("bf16 in place") << true << true;
  }
  void emulatedCollectivesExact() {
    QFETCH(bool, bf16Data);
    QFETCH(bool, inPlace);
    const int P = 4;
    const size_t n = 1003;
    const DType dt = bf16Data ? DType::BF16 : DType::F32;
    const size_t e = dtypeSize(dt);
    HostGroup g = makeHostGroup(P);
    auto value = [](int r, size_t i) { return static_cast<float>((r + 1) * 3 + static_cast<int>(i % 7)); };
    auto write = [&](std::vector<char>& buf, size_t i, float v) {
      if (bf16Data) reinterpret_cast<bf16*>(buf.data())[i] = toBf16(v);
      else reinterpret_cast<float*>(buf.data())[i] = v;
    };
    auto read = [&](const std::vector<char>& buf, size_t i) {
      return bf16Data ? toFloat(reinterpret_cast<const bf16*>(buf.data())[i])
                      : reinterpret_cast<const float*>(buf.data())[i];
    };
    std::vector<std::string> bad(P);
    const auto errors = onThreads(P, [&](int r) {
      GpuCommunicator& c = *g.comms[static_cast<size_t>(r)];
      std::string& why = bad[static_cast<size_t>(r)];
      if (c.stream() != fakeStream(0x100 + static_cast<uintptr_t>(r))) why = "wrong default stream";
      auto expect = [&](const char* what, const std::vector<char>& buf, size_t offset, size_t count,
                        const std::function<float(size_t)>& want) {
        for (size_t i = 0; i < count && why.empty(); ++i) {
          if (read(buf, offset + i) != want(i)) why = std::string(what) + " at " + std::to_string(i);
        }
      };
      auto sumAt = [&](size_t i) {
        float s = 0;
        for (int q = 0; q < P; ++q) s += value(q, i);
        return s;
      };
      std::vector<char> a(n * e);
      for (size_t i = 0; i < n; ++i) write(a, i, value(r, i));
      c.allReduce(a.data(), n, dt);
      expect("allReduce", a, 0, n, sumAt);

      std::vector<char> in(n * P * e), out(n * e);
      for (size_t i = 0; i < n * P; ++i) write(in, i, value(r, i));
      char* rsOut = inPlace ? in.data() + static_cast<size_t>(r) * n * e : out.data();
      c.reduceScatter(in.data(), rsOut, n, dt);
      if (inPlace) expect("reduceScatter", in, static_cast<size_t>(r) * n, n, [&](size_t i) { return sumAt(r * n + i); });
      else expect("reduceScatter", out, 0, n, [&](size_t i) { return sumAt(r * n + i); });

      std::vector<char> gathered(n * P * e);
      char* agIn = inPlace ? gathered.data() + static_cast<size_t>(r) * n * e : out.data();
      std::vector<char> mine(n * e);
      for (size_t i = 0; i < n; ++i) write(mine, i, value(r, i));
      std::memcpy(agIn, mine.data(), n * e);
      c.allGather(agIn, gathered.data(), n, dt);
      expect("allGather", gathered, 0, n * P, [&](size_t i) { return value(static_cast<int>(i / n), i % n); });

      std::vector<char> b(n * e);
      for (size_t i = 0; i < n; ++i) write(b, i, value(r, i));
      c.broadcast(b.data(), n, dt, 2);
      expect("broadcast", b, 0, n, [&](size_t i) { return value(2, i); });
      c.barrier();
      const uint64_t want = ringBytesSent(Collective::AllReduce, r, P, n, dtypeSize(dt)) +
                            ringBytesSent(Collective::ReduceScatter, r, P, n, dtypeSize(dt)) +
                            ringBytesSent(Collective::AllGather, r, P, n, dtypeSize(dt)) +
                            ringBytesSent(Collective::Broadcast, r, P, n, dtypeSize(dt), 2);
      if (why.empty() && c.bytesSent() != want) why = "bytesSent " + std::to_string(c.bytesSent());
    });
    for (int r = 0; r < P; ++r) {
      QVERIFY2(errors[r].empty(), errors[r].c_str());
      QVERIFY2(bad[r].empty(), bad[r].c_str());
    }
    QCOMPARE(g.executor->launches.load(), 5);  // one launch per collective, not per rank
    QCOMPARE(g.comms[0]->backendName(), std::string("cuda-emulated"));
  }

  void emulatedMismatchFailsEveryRank() {
    const int P = 4;
    HostGroup g = makeHostGroup(P);
    std::vector<float> buf(16 * P);
    const auto errors = onThreads(P, [&](int r) {
      GpuCommunicator& c = *g.comms[static_cast<size_t>(r)];
      if (r == 2) c.allGather(buf.data(), buf.data(), 4, DType::F32);
      else c.allReduce(buf.data() + 16 * r, 4, DType::F32);
    });
    for (int r = 0; r < P; ++r) {
      QVERIFY2(QString::fromStdString(errors[r]).contains("rank 0 called all_reduce(count 4, f32), rank 2 called all_gather(count 4, f32)"),
               errors[r].c_str());
    }
    QCOMPARE(g.executor->launches.load(), 0);
  }

  void emulatedLaunchFailureReachesEveryRank() {
    const int P = 3;
    HostGroup g = makeHostGroup(P);
    g.executor->failLaunch = [] { throw std::runtime_error("cudaErrorIllegalAddress (simulated)"); };
    float x[4] = {};
    const auto errors = onThreads(P, [&](int r) { g.comms[static_cast<size_t>(r)]->allReduce(x, 1, DType::F32); });
    for (const auto& e : errors) QVERIFY2(QString::fromStdString(e).contains("all_reduce launch failed: cudaErrorIllegalAddress"), e.c_str());
  }

  void emulatedAbortWakesWaiters() {
    const int P = 4;
    HostGroup g = makeHostGroup(P);
    std::atomic<int> waiting{0};
    std::thread aborter([&] {
      while (waiting.load() < P - 1) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let them block
      g.comms[3]->abort();
    });
    const auto errors = onThreads(P - 1, [&](int r) {  // rank 3 never arrives
      ++waiting;
      g.comms[static_cast<size_t>(r)]->barrier();
    });
    aborter.join();
    for (const auto& e : errors) QCOMPARE(e, std::string("aborted"));
    // The executor hears it too: NCCL's aborts its communicators (kernels in flight).
    QVERIFY(g.executor->aborts.load() >= 1);
    QVERIFY_THROWS_EXCEPTION(RunAborted, g.comms[0]->barrier());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, g.comms[0]->broadcast(nullptr, 1, DType::F32, 4));
  }

  void checkMacrosNameTheErrorAndHint() {
    QString text = thrownText([] { CUDA_CHECK(cudaErrorMemoryAllocation); });
    QVERIFY2(text.startsWith("cudaErrorMemoryAllocation failed at ") &&
                 text.contains("test_cuda_host_logic.cpp:"),
             qPrintable(text));
    QVERIFY2(text.contains(": cudaErrorMemoryAllocation: ") && text.contains("hint: out of device memory"),
             qPrintable(text));
    text = thrownText([] { CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED); });
    QVERIFY2(text.contains("CUBLAS_STATUS_NOT_SUPPORTED") && text.contains("16-byte"), qPrintable(text));
    text = thrownText([] { NCCL_CHECK(ncclInvalidUsage); });
    QVERIFY2(text.contains("ncclInvalidUsage") && text.contains("same collectives"), qPrintable(text));
    QVERIFY(thrownText([] { CUDA_CHECK(cudaSuccess); }).isEmpty());
  }

  void kernelArgumentsCheckedBeforeLaunch() {
    // None of these may reach the device: they throw (or return) on the host.
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             layerNormForward<float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 4, 0, 1e-5f, nullptr));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             causalSoftmaxForward<bf16>(nullptr, nullptr, 1, 9, 8, 1.0f, nullptr));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             crossEntropy<float>(nullptr, nullptr, nullptr, nullptr, 10, 5, 9, nullptr));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             mseLoss<float>(nullptr, nullptr, nullptr, nullptr, -1, 5, 9, nullptr));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             adamStep(nullptr, nullptr, nullptr, nullptr, nullptr, 10, cpu::AdamConfig{}, 0, nullptr));
    const QString text = thrownText([] { addBias<float>(nullptr, nullptr, -2, 3, nullptr); });
    QVERIFY2(text.contains("rows = -2"), qPrintable(text));
    // Empty work launches nothing (a launch here, with no driver, would throw).
    addBias<float>(nullptr, nullptr, 0, 3, nullptr);
    geluForward<bf16>(nullptr, nullptr, 0, nullptr);
    residualAdd<float>(nullptr, nullptr, nullptr, 0, nullptr);
    bf16ToF32(nullptr, nullptr, 0, nullptr);
    adamStep(nullptr, nullptr, nullptr, nullptr, nullptr, 0, cpu::AdamConfig{}, 1, nullptr);
  }
};

QTEST_GUILESS_MAIN(TestCudaHostLogic)
#include "test_cuda_host_logic.moc"
