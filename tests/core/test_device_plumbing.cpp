// The engine's GPU plumbing, proven without a GPU on the host-fake runtime
// (host_device_runtime.h: queues that run work later on their own threads,
// markers, a caching allocator's free contract). A fake-GPU run must give the
// CPU run's bits, ledger and traffic; its spans must come from queue markers
// and respect the device order the engine set up; missing or failing runtimes
// and cancels must end cleanly.
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "common/errors.h"
#include "device/cpu_stream.h"
#include "engine/run.h"
#include "rank/step_gate.h"
#include "host_device_runtime.h"
#include "parallel/fsdp_units.h"

using namespace shardscope;
using namespace shardscope::testing;

namespace {

constexpr int kRanks = 4;

// SHARDSCOPE_FAKE_SEED / SHARDSCOPE_FAKE_DELAY_US shake other interleavings.
HostFakeOptions fakeOptions(uint64_t seed) {
  HostFakeOptions o;
  o.seed = qEnvironmentVariableIsSet("SHARDSCOPE_FAKE_SEED") ? qEnvironmentVariableIntValue("SHARDSCOPE_FAKE_SEED") : seed;
  if (qEnvironmentVariableIsSet("SHARDSCOPE_FAKE_DELAY_US"))
    o.max_delay_us = qEnvironmentVariableIntValue("SHARDSCOPE_FAKE_DELAY_US");
  return o;
}

RunConfig config(const QString& strategy, const QString& variant = {}) {
  RunConfig c;
  c.strategy = *parseStrategy(strategy.toStdString());
  c.ranks = kRanks;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 16;
  c.steps = 3;
  c.lr = 1e-3;
  c.bucket_mb = 0.1;  // several buckets on the small model
  c.first_bucket_mb = 0.02;
  if (c.strategy == Strategy::Hsdp) c.shard_group = 2;
  if (variant.contains("prefetch-none")) c.prefetch = Prefetch::None;
  if (variant.contains("reshard-off")) c.reshard_after_forward = false;
  if (variant.contains("unit-blocks")) c.unit_blocks = 2;
  return c;
}

// One config run on the CPU backend and on the fake GPU (cached: the
// equivalence and timing tests share runs).
struct RunPair {
  RunConfig config;
  RunResult cpu, fake;
  RunTrace cpu_trace, fake_trace;
  std::shared_ptr<HostFakeProbe> probe;
};

const RunPair& runPair(const QString& strategy, const QString& variant = {}) {
  static std::map<QString, std::unique_ptr<RunPair>> cache;
  auto& slot = cache[strategy + "/" + variant];
  if (slot) return *slot;
  auto pair = std::make_unique<RunPair>();
  pair->config = config(strategy, variant);
  {
    Run cpu(pair->config);
    pair->cpu = cpu.execute();
    pair->cpu_trace = cpu.trace();
  }
  RunConfig gpu = pair->config;
  gpu.backend = Backend::CudaEmulated;
  pair->probe = registerHostDeviceRuntime(fakeOptions(7));
  {
    Run fake(gpu);
    pair->fake = fake.execute();
    pair->fake_trace = fake.trace();
  }
  slot = std::move(pair);
  return *slot;
}

bool bitEqual(const auto& a, const auto& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
}

// Kinds whose span a GPU run takes from markers on the stream's queue.
bool deviceTimed(EventKind k) {
  switch (k) {
    case EventKind::Forward:
    case EventKind::Backward:
    case EventKind::Loss:
    case EventKind::OptimizerStep:
    case EventKind::Wait:
    case EventKind::Copy:
    case EventKind::AllReduce:
    case EventKind::ReduceScatter:
    case EventKind::AllGather: return true;
    default: return false;
  }
}

// Sum of Alloc bytes per category over a rank's events.
std::array<int64_t, kCategoryCount> allocatedBytes(const std::vector<Event>& events) {
  std::array<int64_t, kCategoryCount> sum{};
  for (const Event& e : events)
    if (e.kind == EventKind::Alloc) sum[size_t(e.category)] += e.bytes;
  return sum;
}

std::array<int, kEventKindCount> kindCounts(const std::vector<Event>& events) {
  std::array<int, kEventKindCount> n{};
  for (const Event& e : events) ++n[size_t(e.kind)];
  return n;
}

int64_t largestAlloc(const std::vector<Event>& events, Category c) {
  int64_t m = 0;
  for (const Event& e : events)
    if (e.kind == EventKind::Alloc && e.category == c) m = std::max(m, e.bytes);
  return m;
}

// Categories one thread allocates and another frees: zero2's buckets (compute
// -> comm), FSDP's gathered units (gather -> compute) and full gradients
// (compute -> reduce).
bool crossThread(const RunConfig& c, Category k) {
  if (c.strategy == Strategy::Zero2) return k == Category::Bucket;
  if (c.isSharded()) return k == Category::Gathered || k == Category::GradFull;
  return false;
}

// limit_all_gathers (test_strategies.cpp's bound): the root unit plus at most
// two block units with prefetch, one without; everything with reshard off.
void verifyGatheredBound(const RunConfig& c, int64_t peak) {
  const FsdpUnits units(ModelSpec(c.model), c.unitBlocks(), c.shardGroupSize());
  const int64_t root = units.units()[0].padded * 2, unit = units.maxBlockUnitElements() * 2;
  int64_t all = 0;
  for (const FsdpUnit& u : units.units()) all += u.padded * 2;
  if (!c.reshardAfterForward()) {
    QCOMPARE(peak, all);
    return;
  }
  const int k = c.prefetchMode() == Prefetch::None ? 1 : 2;
  QVERIFY2(root + unit <= peak && peak <= root + k * unit,
           qPrintable(QString("gathered peak %1 B outside [%2, %3]").arg(peak).arg(root + unit).arg(root + k * unit)));
}

int64_t maxEnd(const std::vector<Event>& events, int step, auto pred) {
  int64_t t = -1;
  for (const Event& e : events)
    if (e.step == step && pred(e)) t = std::max(t, e.end_ns);
  return t;
}

QString name(EventKind k) { return QString::fromUtf8(eventKindName(k).data(), int(eventKindName(k).size())); }

// A runtime whose devices cannot be made (a rank's GPU fails at start).
class FailingDeviceRuntime final : public DeviceRuntime {
 public:
  explicit FailingDeviceRuntime(const RunConfig& c) : m_inner(c, {}, std::make_shared<HostFakeProbe>()) {}
  std::string describe() const override { return "failing"; }
  std::unique_ptr<RankDevice> makeRankDevice(int rank, MemoryLedger&) override {
    throw std::runtime_error("GPU " + std::to_string(rank) + " fell off the bus");
  }
  std::vector<std::unique_ptr<Communicator>> createGroup(const std::string& n, const std::vector<int>& m) override {
    return m_inner.createGroup(n, m);
  }

 private:
  HostDeviceRuntime m_inner;
};

}  // namespace

class TestDevicePlumbing : public QObject {
  Q_OBJECT

 private slots:
  // CpuStream's device rules, each against device work that lands 1 ms late:
  // synchronize() drains the queue; a task enqueued from another stream's
  // task sees what that stream launched; record()/waitEvent() orders the
  // waiting queue; a host thread waiting on an event waits for the device.
  void streamRules() {
    RunControl control;
    auto probe = std::make_shared<HostFakeProbe>();
    auto late = [](int* x, int v) {
      currentHostQueue()->launch([x, v] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        *x = v;
      });
    };
    for (uint64_t round = 0; round < 4; ++round) {
      int x = 0, seen_cross = -1, seen_event = -1;  // outlive the streams' closures
      auto fault = std::make_shared<HostDeviceFault>("GPU 0");
      CpuStream a("a", control, 1, std::make_unique<HostQueue>("a", round, 300, probe, fault, nullptr));
      CpuStream b("b", control, 2, std::make_unique<HostQueue>("b", round + 100, 300, probe, fault, nullptr));
      a.enqueue([&] { late(&x, 1); });
      a.synchronize();
      QCOMPARE(x, 1);

      a.enqueue([&] {
        late(&x, 2);
        b.enqueue([&] { currentHostQueue()->launch([&] { seen_cross = x; }); });
      });
      a.synchronize();  // b's task is enqueued now
      b.synchronize();
      QCOMPARE(seen_cross, 2);

      a.enqueue([&] { late(&x, 3); });
      b.waitEvent(a.record());
      b.enqueue([&] { currentHostQueue()->launch([&] { seen_event = x; }); });
      b.synchronize();
      QCOMPARE(seen_event, 3);

      a.enqueue([&] { late(&x, 4); });
      a.record()->wait(control);  // host thread: waits for the marker itself
      QCOMPARE(x, 4);
      a.synchronize();
    }
    QVERIFY(probe->errors.empty());
  }

  void equivalence_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("variant");
    for (const char* s : {"ddp", "zero1", "zero2", "zero3"}) QTest::newRow(s) << QString(s) << QString();
    QTest::newRow("zero3 prefetch none") << "zero3" << "prefetch-none";
    QTest::newRow("fsdp unit-blocks 2, reshard off") << "fsdp" << "unit-blocks,reshard-off";
    QTest::newRow("hsdp G=2") << "hsdp" << QString();
  }

  // Same bits as the CPU run: the fake GPU runs the same kernels in the order
  // the engine's markers impose, so any missing dependency (a queue reading
  // before another wrote, a buffer freed under a reader) changes a bit or
  // reads the allocator's NaN poison. Ledger and traffic match too.
  void equivalence() {
    QFETCH(QString, strategy);
    QFETCH(QString, variant);
    const RunPair& p = runPair(strategy, variant);
    const HostFakeProbe& probe = *p.probe;
    QCOMPARE(QString::fromStdString(p.fake.device), QString("host-fake: %1 ranks").arg(kRanks));
    QVERIFY2(probe.errors.empty(), probe.errors.empty() ? "" : probe.errors.front().c_str());

    QCOMPARE(p.fake.losses.size(), size_t(p.config.steps));
    QVERIFY2(bitEqual(p.fake.losses, p.cpu.losses),
             qPrintable(QString("losses %1 vs CPU %2").arg(p.fake.losses.back(), 0, 'g', 17).arg(p.cpu.losses.back(), 0, 'g', 17)));
    QCOMPARE(p.fake.final_master.size(), p.cpu.final_master.size());
    for (size_t i = 0; i < p.cpu.final_master.size(); ++i)
      if (std::memcmp(&p.fake.final_master[i], &p.cpu.final_master[i], sizeof(float)) != 0)
        QFAIL(qPrintable(QString("final_master[%1] = %2, CPU %3").arg(i).arg(p.fake.final_master[i]).arg(p.cpu.final_master[i])));

    const int64_t n = p.cpu.params;
    for (int r = 0; r < kRanks; ++r) {
      const RankResult& g = p.fake.ranks[size_t(r)];
      const RankResult& c = p.cpu.ranks[size_t(r)];
      QCOMPARE(g.comm_bytes.all_reduce, c.comm_bytes.all_reduce);
      QCOMPARE(g.comm_bytes.reduce_scatter, c.comm_bytes.reduce_scatter);
      QCOMPARE(g.comm_bytes.all_gather, c.comm_bytes.all_gather);
      QCOMPARE(g.comm_bytes.broadcast, c.comm_bytes.broadcast);
      QVERIFY(g.fire_order == c.fire_order);
      QVERIFY(g.unit_order == c.unit_order);
      // The same buffers were allocated (by bytes and category); a GPU run
      // adds one: the initial weights' staging buffer for the broadcast.
      auto fake_bytes = allocatedBytes(p.fake_trace.events[size_t(r)]);
      const auto cpu_bytes = allocatedBytes(p.cpu_trace.events[size_t(r)]);
      fake_bytes[size_t(Category::Workspace)] -= 4 * n;
      for (int k = 0; k < kCategoryCount; ++k)
        QVERIFY2(fake_bytes[size_t(k)] == cpu_bytes[size_t(k)],
                 qPrintable(QString("rank %1 %2: %3 B allocated, CPU %4 B").arg(r)
                                .arg(QString::fromUtf8(categoryName(Category(k)).data())).arg(fake_bytes[size_t(k)]).arg(cpu_bytes[size_t(k)])));
      // Peaks: the same where one thread allocates and frees a category.
      // Workspace also holds the staging buffer during setup. Where one thread
      // allocates and another frees, the peak follows the host threads' timing
      // (GPU streams return at once) and is checked against the design's bounds.
      for (int k = 0; k < kCategoryCount; ++k) {
        const Category cat = Category(k);
        const int64_t got = g.ledger.peak[size_t(k)], want = c.ledger.peak[size_t(k)];
        const QString what = QString("rank %1 %2 peak: %3 B, CPU %4 B").arg(r)
                                 .arg(QString::fromUtf8(categoryName(cat).data())).arg(got).arg(want);
        if (cat == Category::Workspace) {
          QVERIFY2(got == std::max(want, 4 * n), qPrintable(what));
        } else if (crossThread(p.config, cat)) {
          const int64_t largest = largestAlloc(p.fake_trace.events[size_t(r)], cat);
          QVERIFY2(largest <= got && got <= cpu_bytes[size_t(k)], qPrintable(what));
        } else {
          QVERIFY2(got == want, qPrintable(what));
        }
      }
      QCOMPARE(g.ledger.model_state_peak, c.ledger.model_state_peak);
      if (p.config.isSharded()) verifyGatheredBound(p.config, g.ledger.peak[size_t(Category::Gathered)]);
      // The device's books are the ledger's (taken when the last step ended).
      QVERIFY(g.device_memory.has_value());
      QVERIFY(!c.device_memory.has_value());
      int64_t live = 0;
      for (int64_t b : g.ledger.current) live += b;
      QCOMPARE(g.device_memory->allocated_bytes, live);
      QVERIFY(g.device_memory->allocated_peak >= g.ledger.peak[size_t(Category::Param)]);
    }
    // Work really went through queues: only the setup broadcast ran on a host thread.
    QCOMPARE(probe.collectives_sync.load(), int64_t(kRanks));
    QVERIFY(probe.collectives_queued.load() > 0);
    QVERIFY(probe.ops_queued.load() > 0);
    if (strategy != "ddp" && strategy != "zero1") QVERIFY(probe.cross_queue_frees.load() > 0);
    QCOMPARE(probe.devices_made, int64_t(kRanks));
    QCOMPARE(probe.devices_destroyed, int64_t(kRanks));
    QCOMPARE(probe.leaked_blocks, int64_t(0));
  }

  void deviceTiming_data() {
    QTest::addColumn<QString>("strategy");
    for (const char* s : {"ddp", "zero2", "zero3"}) QTest::newRow(s) << QString(s);
  }

  // Every span of a step's device work comes from two timing markers, lies
  // inside its step, and keeps the order the engine's markers impose across
  // queues (a collective after the bucket it reduces, the optimizer after the
  // reductions, a unit's compute after its gather). None is lost: each kind
  // has as many events as on the CPU.
  void deviceTiming() {
    QFETCH(QString, strategy);
    const RunPair& p = runPair(strategy);
    for (int r = 0; r < kRanks; ++r) {
      const std::vector<Event>& ev = p.fake_trace.events[size_t(r)];
      const auto fake_n = kindCounts(ev), cpu_n = kindCounts(p.cpu_trace.events[size_t(r)]);
      for (int k = 0; k < kEventKindCount; ++k) {
        const int extra = EventKind(k) == EventKind::Alloc || EventKind(k) == EventKind::Free ? 1 : 0;  // staging
        QVERIFY2(fake_n[size_t(k)] == cpu_n[size_t(k)] + extra,
                 qPrintable(QString("rank %1 %2: %3 events, CPU %4").arg(r).arg(name(EventKind(k))).arg(fake_n[size_t(k)]).arg(cpu_n[size_t(k)])));
      }
      const std::multiset<int64_t>& markers = p.probe->marker_ns[size_t(r)];
      std::map<int, std::pair<int64_t, int64_t>> steps;  // step -> (StepBegin, StepEnd)
      for (const Event& e : ev) {
        if (e.kind == EventKind::StepBegin) steps[e.step].first = e.begin_ns;
        if (e.kind == EventKind::StepEnd) steps[e.step].second = e.begin_ns;
      }
      QCOMPARE(int(steps.size()), p.config.steps);
      std::map<Lane, std::vector<const Event*>> lanes;
      int timed = 0;
      for (const Event& e : ev) {
        if (!deviceTimed(e.kind)) continue;
        const QString what = QString("rank %1 step %2 %3 [%4, %5]").arg(r).arg(e.step).arg(name(e.kind)).arg(e.begin_ns).arg(e.end_ns);
        QVERIFY2(e.step >= 0, qPrintable(what + ": device work outside a step"));
        QVERIFY2(markers.count(e.begin_ns) > 0, qPrintable(what + ": begin is not a marker's time"));
        QVERIFY2(e.end_ns == e.begin_ns || markers.count(e.end_ns) > 0, qPrintable(what + ": end is not a marker's time"));
        QVERIFY2(e.begin_ns <= e.end_ns, qPrintable(what));
        // A device span cannot tell waiting for peers from moving data: no wait share.
        if (e.bytes > 0 && e.lane != Lane::Compute) QVERIFY2(e.value == 0, qPrintable(what + ": a peer-wait share"));
        const auto [begin, end] = steps.at(e.step);
        QVERIFY2(begin <= e.begin_ns && e.end_ns <= end,
                 qPrintable(what + QString(": outside its step [%1, %2]").arg(begin).arg(end)));
        lanes[e.lane].push_back(&e);
        ++timed;
      }
      QVERIFY(timed > 0);
      // One queue per lane runs its spans one after another.
      for (auto& [lane, spans] : lanes) {
        std::sort(spans.begin(), spans.end(), [](const Event* a, const Event* b) { return a->begin_ns < b->begin_ns; });
        for (size_t i = 1; i < spans.size(); ++i)
          QVERIFY2(spans[i - 1]->end_ns <= spans[i]->begin_ns,
                   qPrintable(QString("rank %1 lane %2: %3 ends at %4 after %5 begins at %6").arg(r).arg(int(lane))
                                  .arg(name(spans[i - 1]->kind)).arg(spans[i - 1]->end_ns).arg(name(spans[i]->kind)).arg(spans[i]->begin_ns)));
      }
      for (const auto& [s, bounds] : steps) {
        (void)bounds;
        checkStepOrder(ev, s, r, strategy);
        if (QTest::currentTestFailed()) return;
      }
    }
  }

  // No runtime registered: a GPU backend is refused at construction, naming --backend.
  void missingRuntimeNamesBackend() {
    registerDeviceRuntime(DeviceRuntimeFactory{});
    for (Backend b : {Backend::Cuda, Backend::CudaEmulated}) {
      RunConfig c = config("ddp");
      c.backend = b;
      try {
        Run run(c);
        QFAIL("a GPU backend without a runtime was accepted");
      } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("--backend " + QString::fromStdString(backendName(b))), e.what());
      }
    }
  }

  // The runtime's own refusal (no device, too few GPUs) reaches the caller as is.
  void runtimeRefusalSurfaces() {
    const std::string message = "--backend cuda-emulated: no CUDA device is visible (cudaGetDeviceCount: 0)";
    registerDeviceRuntime([message](const RunConfig&) -> std::unique_ptr<DeviceRuntime> { throw ConfigError(message); });
    RunConfig c = config("zero2");
    c.backend = Backend::CudaEmulated;
    try {
      Run run(c);
      QFAIL("the factory's ConfigError was swallowed");
    } catch (const ConfigError& e) {
      QCOMPARE(std::string(e.what()), message);
    }
  }

  // A device that fails on its rank's thread fails the run with the rank named.
  void rankDeviceFailureFailsRun() {
    registerDeviceRuntime([](const RunConfig& c) -> std::unique_ptr<DeviceRuntime> {
      return std::make_unique<FailingDeviceRuntime>(c);
    });
    RunConfig c = config("ddp");
    c.backend = Backend::CudaEmulated;
    Run run(c);
    try {
      run.execute();
      QFAIL("the run succeeded without devices");
    } catch (const RunError& e) {
      QVERIFY2(QString(e.what()).contains("fell off the bus") && QString(e.what()).contains("rank "), e.what());
    }
  }

  // GPU backends measure with CUDA events: a modeled clock is refused.
  void modeledClockRefused() {
    registerHostDeviceRuntime();
    for (Backend b : {Backend::Cuda, Backend::CudaEmulated}) {
      RunConfig c = config("ddp");
      c.backend = b;
      c.clock = ClockKind::Modeled;
      try {
        validate(c);
        QFAIL("--clock modeled with a GPU backend was accepted");
      } catch (const ConfigError& e) {
        const QString m = e.what();
        QVERIFY2(m.contains("--clock") || m.contains("--backend"), e.what());
      }
      QVERIFY_THROWS_EXCEPTION(ConfigError, Run{c});
    }
  }

  void asyncDeviceFaultFailsRun_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("op");  // rank 1's n-th queued kernel (ddp ~250 per run, zero3 ~18)
    QTest::newRow("ddp, a bucket copy") << "ddp" << 40;
    QTest::newRow("ddp, step 2") << "ddp" << 200;
    QTest::newRow("zero3") << "zero3" << 10;
  }

  // A kernel that fails on its queue (asynchronously, as on a GPU) fails the
  // run with the device's message at the rank's next synchronization, on
  // whichever queue it ran; nothing hangs.
  void asyncDeviceFaultFailsRun() {
    QFETCH(QString, strategy);
    QFETCH(int, op);
    HostFakeOptions o = fakeOptions(3);
    o.fault_rank = 1;
    o.fault_op = op;
    auto probe = registerHostDeviceRuntime(o);
    RunConfig c = config(strategy);
    c.backend = Backend::CudaEmulated;
    {
      Run run(c);
      try {
        run.execute();
        QFAIL("the device fault was lost");
      } catch (const RunError& e) {
        QVERIFY2(QString(e.what()).contains("injected device fault"), e.what());
      }
    }
    QCOMPARE(probe->devices_destroyed, probe->devices_made);
    QCOMPARE(probe->leaked_blocks, int64_t(0));
  }

  void cancelMidRun_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("ddp") << "ddp";
    QTest::newRow("zero3") << "zero3";
  }

  // Stopping a fake-GPU run mid-step: queues drain (aborted collectives fail
  // on their queue), nothing hangs or leaks, wait() reports the cancel.
  void cancelMidRun() {
    QFETCH(QString, strategy);
    auto probe = registerHostDeviceRuntime(fakeOptions(11));
    RunConfig c = config(strategy);
    c.backend = Backend::CudaEmulated;
    c.steps = 100000;  // would run for hours
    {
      Run run(c);
      run.start();
      while (run.stepsDone() < 1 && !run.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      run.cancel();
      QVERIFY_THROWS_EXCEPTION(RunAborted, run.wait());
      QVERIFY(run.finished());
      QVERIFY(!run.trace().events[0].empty());
    }
    QCOMPARE(probe->devices_destroyed, probe->devices_made);
    QCOMPARE(probe->leaked_blocks, int64_t(0));
  }

  // Stepping a GPU run by op: at every stop the device spans of the ops the
  // ranks have passed are already in their logs (the gate settles them), not
  // held back until the step ends; and releasing the stops runs the step out.
  void steppingShowsDeviceSpansAtStops() {
    registerHostDeviceRuntime(fakeOptions(13));
    RunConfig c = config("zero3");
    c.backend = Backend::CudaEmulated;
    c.steps = 1;
    Run run(c);
    run.gate().enable();
    run.gate().pause();
    run.start();
    uint64_t stop_id = 0;
    int checked = 0;
    for (int op = 0; op < 4; ++op) {
      std::vector<GatePoint> points;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      uint64_t id = 0;
      while (std::chrono::steady_clock::now() < deadline && !run.gate().stopped(&points, &id)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      QVERIFY2(id != stop_id && !points.empty(), "the ranks did not stop");
      stop_id = id;
      const GatePoint at = points.front();
      if (at.kind == EventKind::Forward && op >= 2) {
        // Forward ops 0 .. op-1 ran; each rank's log already holds their spans.
        for (int r = 0; r < kRanks; ++r) {
          int forwards = 0;
          for (const Event& e : run.eventLog(r).snapshot())
            if (e.kind == EventKind::Forward && e.step == 0) ++forwards;
          QVERIFY2(forwards >= op, qPrintable(QString("rank %1 stopped before forward op %2 but its log shows %3 "
                                                      "forward spans").arg(r).arg(op).arg(forwards)));
        }
        ++checked;
      }
      run.gate().step(StepMode::NextOp);
    }
    QVERIFY(checked > 0);
    run.gate().resume();
    run.wait();
  }

  void cleanupTestCase() { registerDeviceRuntime(DeviceRuntimeFactory{}); }

 private:
  // Device order inside one step of one rank, from the spans' marker times.
  void checkStepOrder(const std::vector<Event>& ev, int step, int rank, const QString& strategy) {
    const QString where = QString("rank %1 step %2: ").arg(rank).arg(step);
    int64_t optimizer_begin = -1, optimizer_end = -1;
    for (const Event& e : ev)
      if (e.step == step && e.kind == EventKind::OptimizerStep) optimizer_begin = e.begin_ns, optimizer_end = e.end_ns;
    QVERIFY2(optimizer_begin >= 0, qPrintable(where + "no optimizer step"));
    if (strategy == "ddp" || strategy == "zero2") {
      // A bucket's collective starts after its bucket was ready; the optimizer
      // after every reduction (and DDP's copy-out) on the comm queue.
      const EventKind reduce = strategy == "ddp" ? EventKind::AllReduce : EventKind::ReduceScatter;
      std::map<int, int64_t> ready;
      for (const Event& e : ev)
        if (e.step == step && e.kind == EventKind::BucketReady) ready[e.bucket] = e.begin_ns;
      int reductions = 0;
      for (const Event& e : ev) {
        if (e.step != step || e.kind != reduce) continue;
        ++reductions;
        QVERIFY2(ready.count(e.bucket) && ready[e.bucket] <= e.begin_ns,
                 qPrintable(where + QString("bucket %1's collective began at %2, before it was ready").arg(e.bucket).arg(e.begin_ns)));
      }
      QCOMPARE(reductions, int(ready.size()));
      const int64_t reduced = maxEnd(ev, step, [&](const Event& e) { return e.lane == Lane::Comm && (e.kind == reduce || e.kind == EventKind::Copy); });
      QVERIFY2(reduced <= optimizer_begin, qPrintable(where + "the optimizer began before the reductions ended"));
      if (strategy == "zero2") {
        // The updated shards are all-gathered after the optimizer wrote them.
        for (const Event& e : ev)
          if (e.step == step && e.kind == EventKind::AllGather)
            QVERIFY2(optimizer_end <= e.begin_ns, qPrintable(where + "an all-gather began before the optimizer ended"));
      }
      return;
    }
    // zero3: a unit computes after its gathers; its reduce-scatter starts after
    // its backward; the optimizer after every reduce-scatter.
    std::map<int, std::vector<const Event*>> gathers, forwards, backwards, reduces;
    for (const Event& e : ev) {
      if (e.step != step || e.unit < 0) continue;
      if (e.kind == EventKind::AllGather) gathers[e.unit].push_back(&e);
      if (e.kind == EventKind::Forward) forwards[e.unit].push_back(&e);
      if (e.kind == EventKind::Backward) backwards[e.unit].push_back(&e);
      if (e.kind == EventKind::ReduceScatter) reduces[e.unit].push_back(&e);
    }
    QVERIFY(!gathers.empty());
    for (auto& [unit, list] : gathers) {
      std::sort(list.begin(), list.end(), [](const Event* a, const Event* b) { return a->begin_ns < b->begin_ns; });
      const QString u = where + QString("unit %1: ").arg(unit);
      for (const Event* f : forwards[unit])
        QVERIFY2(list.front()->end_ns <= f->begin_ns, qPrintable(u + "forward began before its all-gather ended"));
      int64_t last_backward_end = -1;
      for (const Event* b : backwards[unit]) {
        QVERIFY2(list.back()->end_ns <= b->begin_ns, qPrintable(u + "backward began before its all-gather ended"));
        last_backward_end = std::max(last_backward_end, b->end_ns);
      }
      QCOMPARE(reduces[unit].size(), size_t(1));
      QVERIFY2(last_backward_end <= reduces[unit].front()->begin_ns, qPrintable(u + "reduce-scatter began before backward ended"));
      QVERIFY2(reduces[unit].front()->end_ns <= optimizer_begin, qPrintable(u + "the optimizer began before the reduce-scatter ended"));
    }
  }
};

QTEST_APPLESS_MAIN(TestDevicePlumbing)
#include "test_device_plumbing.moc"
