// The timeline at scale: EventStore ingest of 1M events in EngineBridge-sized
// batches (target >= 5M events/s), the first layout build, and the frame time
// of a 1600x900 TimelineView showing 1M events zoomed out and zoomed in
// (target 16 ms). Needs a QApplication: main() selects the offscreen platform
// before constructing it, so this runs without a display.
#include <benchmark/benchmark.h>

#include <QApplication>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <qcustomplot.h>

#include "inspect/event_store.h"
#include "inspect/timeline_layout.h"
#include "timeline_view.h"

using namespace shardscope;

namespace {

constexpr int kRanks = 8;
// SHARDSCOPE_BENCH_TIMELINE_EVENTS sets the run's size (default 1M; the README's 10M row uses 10000000).
const size_t kTotalEvents = [] {
  const char* n = std::getenv("SHARDSCOPE_BENCH_TIMELINE_EVENTS");
  const long long v = n ? std::atoll(n) : 0;
  return v >= 10'000 ? static_cast<size_t>(v) : size_t{1'000'000};
}();
constexpr size_t kBatch = 4096;  // EngineBridge::drain hands over up to a chunk per rank
constexpr int kBlocks = 16;      // one FSDP unit per block

// xorshift64*: deterministic across platforms, unlike std:: distributions.
struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  int64_t between(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

struct Recorder {
  std::vector<Event>& out;
  int16_t rank;
  int32_t step = 0;
  int64_t running = 0;  // bytes of Gathered + GradFull on this rank

  Event& add(EventKind kind, Lane lane, int64_t begin, int64_t end) {
    Event& e = out.emplace_back();
    e.begin_ns = begin;
    e.end_ns = end;
    e.rank = rank;
    e.step = step;
    e.lane = lane;
    e.kind = kind;
    e.op = static_cast<int32_t>(out.size());
    return e;
  }
  void memory(EventKind kind, Category category, int64_t at, int64_t bytes) {
    running += kind == EventKind::Alloc ? bytes : -bytes;
    Event& e = add(kind, Lane::Host, at, at);
    e.category = category;
    e.bytes = bytes;
    e.value = running;
  }
};

// One step of one rank of an FSDP run with prefetch, from t: 16 units
// gathered on the gather lane ahead of compute, forward and backward boxes of
// 20-160 µs, a reduce-scatter per unit on the reduce lane, Adam, and
// alloc/free instants for every gathered unit and full gradient (179 events).
// Returns the step's end. Per lane, begins ascend (as the engine records them).
int64_t recordStep(Recorder& rec, Rng& rng, int64_t t) {
  constexpr int64_t kUnitBytes = 14'155'776;  // bf16 GPT-2 block
  rec.add(EventKind::StepBegin, Lane::Host, t, t);
  int64_t compute = t + rng.between(5'000, 20'000);
  int64_t gather = compute;
  int64_t reduce = 0;
  for (int b = 0; b < kBlocks; ++b) {  // forward: gather unit b, then compute it
    const int64_t g0 = std::max(gather, compute - 60'000);  // prefetch: at most one unit ahead
    const int64_t g1 = g0 + rng.between(10'000, 60'000);
    rec.memory(EventKind::Alloc, Category::Gathered, g0, kUnitBytes);
    rec.add(EventKind::AllGather, Lane::Gather, g0, g1).unit = static_cast<int16_t>(b);
    gather = g1;
    const int64_t f0 = std::max(compute, g1);
    const int64_t f1 = f0 + rng.between(20'000, 80'000);
    rec.add(EventKind::Forward, Lane::Compute, f0, f1).block = static_cast<int16_t>(b);
    rec.memory(EventKind::Free, Category::Gathered, f1, kUnitBytes);
    compute = f1;
  }
  for (int b = kBlocks - 1; b >= 0; --b) {  // backward: gather, compute, reduce-scatter
    const int64_t g0 = std::max(gather, compute - 60'000);
    const int64_t g1 = g0 + rng.between(10'000, 60'000);
    rec.memory(EventKind::Alloc, Category::Gathered, g0, kUnitBytes);
    rec.add(EventKind::AllGather, Lane::Gather, g0, g1).unit = static_cast<int16_t>(b);
    gather = g1;
    const int64_t b0 = std::max(compute, g1);
    const int64_t b1 = b0 + rng.between(40'000, 160'000);
    rec.add(EventKind::Backward, Lane::Compute, b0, b1).block = static_cast<int16_t>(b);
    rec.memory(EventKind::Free, Category::Gathered, b1, kUnitBytes);
    rec.memory(EventKind::Alloc, Category::GradFull, b1, kUnitBytes);
    const int64_t r0 = std::max(reduce, b1);
    const int64_t r1 = r0 + rng.between(15'000, 70'000);
    Event& rs = rec.add(EventKind::ReduceScatter, Lane::Reduce, r0, r1);
    rs.unit = static_cast<int16_t>(b);
    rs.bytes = kUnitBytes;
    rs.value = rng.between(0, (r1 - r0) / 3);  // waiting for the slowest peer
    rec.memory(EventKind::Free, Category::GradFull, r1, kUnitBytes);
    reduce = r1;
    compute = b1;
  }
  const int64_t o0 = std::max(compute, reduce);
  const int64_t o1 = o0 + rng.between(100'000, 300'000);
  rec.add(EventKind::OptimizerStep, Lane::Compute, o0, o1);
  rec.add(EventKind::StepEnd, Lane::Host, o1, o1);
  ++rec.step;
  return o1;
}

// kRanks ranks in lockstep: every step starts on all ranks together after the
// slowest one finished the last (plus data loading); ranks differ by jitter.
std::vector<std::vector<Event>> makeRun() {
  const size_t per_rank = kTotalEvents / kRanks;
  std::vector<std::vector<Event>> events(kRanks);
  std::vector<Recorder> recs;
  std::vector<Rng> rngs;
  for (int r = 0; r < kRanks; ++r) {
    events[static_cast<size_t>(r)].reserve(per_rank + 200);
    recs.push_back({events[static_cast<size_t>(r)], static_cast<int16_t>(r)});
    rngs.push_back({0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(r + 1)});
  }
  Rng loader{42};
  int64_t t = 50'000;
  while (events[0].size() < per_rank) {
    int64_t end = t;
    for (int r = 0; r < kRanks; ++r)
      end = std::max(end, recordStep(recs[static_cast<size_t>(r)], rngs[static_cast<size_t>(r)], t));
    t = end + loader.between(30'000, 80'000);
  }
  for (auto& rank : events) rank.resize(per_rank);
  return events;
}

RunTrace meta() {
  RunTrace m;
  m.strategy = "fsdp";
  m.ranks = kRanks;
  m.config = RunConfig{};
  m.config->clock = ClockKind::Modeled;
  m.config->profile = "h100-nvlink";
  for (int b = 0; b < kBlocks; ++b) m.block_names.push_back("block" + std::to_string(b));
  return m;
}

const std::vector<std::vector<Event>>& run() {
  static const std::vector<std::vector<Event>> events = makeRun();
  return events;
}

// As EngineBridge::drain: each poll hands every rank's new events over in one
// batch; here every batch is kBatch events.
void ingest(EventStore& store) {
  const auto& events = run();
  for (size_t at = 0; at < events[0].size(); at += kBatch)
    for (int r = 0; r < kRanks; ++r) {
      const auto& rank = events[static_cast<size_t>(r)];
      const size_t n = std::min(kBatch, rank.size() - at);
      store.appendEvents(r, std::span<const Event>(rank.data() + at, n));
    }
}

void BM_StoreIngest(benchmark::State& state) {
  run();
  for (auto _ : state) {
    state.PauseTiming();
    auto store = std::make_unique<EventStore>();
    store->reset(meta());
    state.ResumeTiming();
    ingest(*store);
    benchmark::DoNotOptimize(store->eventCount());
    state.PauseTiming();
    store.reset();  // freeing 64 MB is not ingest
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kTotalEvents));
}
BENCHMARK(BM_StoreIngest)->Unit(benchmark::kMillisecond)->UseRealTime();

// Indexing 1M events into rows and per-lane search arrays, then the first
// layout of the whole run (a sort would happen there).
void BM_LayoutBuild(benchmark::State& state) {
  EventStore store;
  store.reset(meta());
  ingest(store);
  for (auto _ : state) {
    TimelineLayout layout;
    layout.sync(store);
    layout.layout(static_cast<double>(store.beginNs()), static_cast<double>(store.endNs()), 1500, 0,
                  static_cast<int>(layout.rows().size()) - 1);
    benchmark::DoNotOptimize(layout.items().size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kTotalEvents));
}
BENCHMARK(BM_LayoutBuild)->Unit(benchmark::kMillisecond)->UseRealTime();

// One view over the full 1M-event store, shown at 1600x900 (all 24 rows fit).
struct Scene {
  EventStore store;
  std::unique_ptr<TimelineView> view;
  Scene() {
    store.reset(meta());
    ingest(store);
    view = std::make_unique<TimelineView>(&store);
    view->resize(1600, 900);
    view->show();
    QApplication::processEvents();
    view->refresh();
    view->zoomToFit();
    QApplication::processEvents();
  }
};

// Made on first use and dropped in main() before the QApplication: a widget
// destroyed at exit, after it, crashes (and the JSON on a pipe is lost).
std::unique_ptr<Scene>& sceneSlot() {
  static std::unique_ptr<Scene> s;
  return s;
}
Scene& scene() {
  if (!sceneSlot()) sceneSlot() = std::make_unique<Scene>();
  return *sceneSlot();
}

// A frame is QCustomPlot::replot(rpImmediateRefresh): it redraws every layer
// into its raster paint buffer (the timeline plottable lays out and paints all
// its items there, uncached) and then repaints the widget from the buffers, as
// a pan or zoom does. toPixmap would paint the same items once but skip the
// widget's buffers, so it is not what the user waits for.
void frame(benchmark::State& state, double lo_ms, double hi_ms) {
  Scene& s = scene();
  QCustomPlot* plot = s.view->plot();
  plot->xAxis->setRange(lo_ms, hi_ms);
  plot->replot(QCustomPlot::rpImmediateRefresh);
  for (auto _ : state) plot->replot(QCustomPlot::rpImmediateRefresh);
  state.counters["draw_items"] = static_cast<double>(s.view->drawItemCount());
  state.counters["rows"] = static_cast<double>(s.view->layout().rows().size());
  state.counters["axis_px"] = plot->axisRect()->width();
}

void BM_FrameZoomedOut(benchmark::State& state) {
  Scene& s = scene();
  s.view->zoomToFit();
  const QCPRange r = s.view->plot()->xAxis->range();
  frame(state, r.lower, r.upper);
  state.counters["visible_events"] = static_cast<double>(kTotalEvents);
}
BENCHMARK(BM_FrameZoomedOut)->Unit(benchmark::kMillisecond)->UseRealTime();

// 1 ms in the middle of the run: ~30 boxes per rank, a few hundred in all.
void BM_FrameZoomedIn(benchmark::State& state) {
  Scene& s = scene();
  const double mid = static_cast<double>(s.store.beginNs() + s.store.endNs()) / 2e6;
  int64_t visible = 0;
  for (int r = 0; r < kRanks; ++r)
    for (const Event& e : s.store.events(r))
      visible += e.end_ns >= (mid - 0.5) * 1e6 && e.begin_ns <= (mid + 0.5) * 1e6;
  frame(state, mid - 0.5, mid + 0.5);
  state.counters["visible_events"] = static_cast<double>(visible);
}
BENCHMARK(BM_FrameZoomedIn)->Unit(benchmark::kMillisecond)->UseRealTime();

// What opening a 1M-event trace costs before the first picture: refresh()
// (layout sync, rows, legend, fit) and the first frame.
void BM_FirstRefreshAndFrame(benchmark::State& state) {
  Scene& s = scene();
  for (auto _ : state) {
    state.PauseTiming();
    s.store.reset(meta());
    ingest(s.store);
    state.ResumeTiming();
    s.view->refresh();
    s.view->zoomToFit();
    s.view->plot()->replot(QCustomPlot::rpImmediateRefresh);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kTotalEvents));
}
BENCHMARK(BM_FirstRefreshAndFrame)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

}  // namespace

int main(int argc, char** argv) {
  // Before QApplication reads it; an explicit setting (xcb under Xvfb) wins.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  sceneSlot().reset();
  return 0;
}
