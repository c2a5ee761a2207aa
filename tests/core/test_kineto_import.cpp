// A PyTorch profiler job as a RunTrace (core/kineto/kineto_run_trace): the
// 4-rank FSDP fixture (tests/data/kineto/fsdp_job, make_fsdp_job.py) has per
// step 4 forward all-gathers (root, layers.0-2) and 3 backward re-gathers, 4
// reduce-scatters, 12 forward GEMMs under "## forward ##", 12 backward GEMMs
// on the autograd thread, 4 optimizer kernels under Optimizer.step; steps
// ProfilerStep#10-12. Every count below follows from that script.
#include <QTemporaryDir>
#include <QtTest>
#include <zlib.h>

#include <fstream>
#include <iterator>

#include <map>

#include "inspect/collective_exposure.h"
#include "inspect/event_store.h"
#include "input/input_detect.h"
#include "kineto/kineto_run_trace.h"
#include "kineto/trace_set.h"

using namespace shardscope;
using KKind = shardscope::EventKind;

namespace {

const std::string kJob = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/fsdp_job";
const std::string kTwoRanks = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/two_ranks";

int count(const std::vector<Event>& events, KKind kind) {
  int n = 0;
  for (const Event& e : events) n += e.kind == kind;
  return n;
}

}  // namespace

class TestKinetoImport : public QObject {
  Q_OBJECT

 private slots:
  void labelsNamePhasesAndModules() {
    QCOMPARE(kineto::phaseOfLabel("DistributedDataParallel.forward"), KKind::Forward);
    QCOMPARE(kineto::phaseOfLabel("## forward ##"), KKind::Forward);
    QCOMPARE(kineto::phaseOfLabel("FSDP::pre_backward (layers.1)"), KKind::Backward);
    QCOMPARE(kineto::phaseOfLabel("autograd::engine::evaluate_function: MmBackward0"), KKind::Backward);
    QCOMPARE(kineto::phaseOfLabel("Optimizer.step#AdamW.step"), KKind::OptimizerStep);
    QCOMPARE(kineto::phaseOfLabel("aten::linear"), KKind::Kernel);
    QCOMPARE(std::string(*kineto::fsdpAllGatherModule("FSDP::all_gather (layers.3)")), std::string("layers.3"));
    QCOMPARE(std::string(*kineto::fsdpAllGatherModule("FSDP::all_gather ()")), std::string());
    QVERIFY(kineto::fsdpAllGatherModule("FSDP::all_gather_copy_out (layers.3)").has_value());
    QVERIFY(!kineto::fsdpAllGatherModule("FSDP::pre_forward (layers.3)").has_value());
  }

  void sniffsKinetoInputs() {
    QCOMPARE(detectInput(kJob).kind, InputKind::KinetoFolder);
    QCOMPARE(detectInput(kJob + "/rank0.json.gz").kind, InputKind::KinetoTrace);  // a .gz
    QCOMPARE(detectInput(kTwoRanks + "/rank0_int_ts.json").kind, InputKind::KinetoTrace);
    QVERIFY(kineto::looksLikeKinetoJson("  [{\"name\": \"aten::mm\"}]"));
    QVERIFY(!kineto::looksLikeKinetoJson("{\"traceEvents\":[\n{\"ph\":\"X\",\"cat\":\"forward\"}"));
    const std::string own = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/golden/ddp.trace.json";
    QCOMPARE(detectInput(own).kind, InputKind::ShardScopeTrace);
    // gzip content under a .json name (analyze reads it by its bytes): a Kineto trace too.
    QTemporaryDir dir;
    const std::string named_json = dir.filePath("rank0.json").toStdString();
    {
      std::ifstream in(kTwoRanks + "/rank0_int_ts.json", std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      gzFile gz = gzopen(named_json.c_str(), "wb");
      QVERIFY(gz);
      QCOMPARE(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
      gzclose(gz);
    }
    QCOMPARE(detectInput(named_json).kind, InputKind::KinetoTrace);
    QVERIFY(detectInput(named_json).gzip);
    QCOMPARE(kineto::loadTraceSet({named_json}).ranks[0].events.size(),
             kineto::loadTraceSet({kTwoRanks + "/rank0_int_ts.json"}).ranks[0].events.size());
  }

  void tracksPerStreamAndThread() {
    const RunTrace t = kineto::importedRunTrace(kineto::loadTraceSet({kJob}));
    QCOMPARE(t.ranks, 4);
    QVERIFY(t.imported);
    QVERIFY(!t.config);
    const auto& tracks = t.imported->tracks[0];
    QCOMPARE(tracks.size(), size_t(5));
    QCOMPARE(tracks[0].name, std::string("stream 7"));
    QCOMPARE(tracks[0].role, Lane::Compute);
    QCOMPARE(tracks[1].name, std::string("stream 20 · NCCL"));
    QCOMPARE(tracks[1].role, Lane::Comm);
    QCOMPARE(tracks[2].name, std::string("stream 24 · NCCL"));
    QCOMPARE(tracks[3].name, std::string("thread 4100 (python3)"));
    QCOMPARE(tracks[3].role, Lane::Host);
    QCOMPARE(tracks[4].name, std::string("thread 4200 (pt_autograd_0)"));
    // Every event's lane is one of its rank's tracks.
    for (int r = 0; r < 4; ++r)
      for (const Event& e : t.events[static_cast<size_t>(r)]) {
        QCOMPARE(int(e.rank), r);
        QVERIFY(static_cast<size_t>(e.lane) < t.imported->tracks[static_cast<size_t>(r)].size());
      }
  }

  void collectivesKindsBytesAndGroups() {
    const RunTrace t = kineto::importedRunTrace(kineto::loadTraceSet({kJob}));
    for (int r = 0; r < 4; ++r) {
      const auto& ev = t.events[static_cast<size_t>(r)];
      QCOMPARE(count(ev, KKind::AllGather), 3 * 7);
      QCOMPARE(count(ev, KKind::ReduceScatter), 3 * 4);
      QCOMPARE(count(ev, KKind::Forward), 3 * 12);
      QCOMPARE(count(ev, KKind::Backward), 3 * 12);
      QCOMPARE(count(ev, KKind::OptimizerStep), 3 * 4);
      QCOMPARE(count(ev, KKind::StepBegin), 3);
      QCOMPARE(count(ev, KKind::StepEnd), 3);
    }
    // The world group ("[0, 1, 2, 3]" is every rank): group 0; bytes = elements × 2 (bf16).
    QCOMPARE(t.groups.size(), size_t(1));
    std::map<int64_t, int> gather_sizes;
    int seq = 0;
    for (const Event& e : t.events[0]) {
      if (e.kind == KKind::AllGather) {
        QCOMPARE(int(e.group), 0);
        ++gather_sizes[e.bytes];
      }
      if (e.kind == KKind::AllGather || e.kind == KKind::ReduceScatter) QCOMPARE(e.seq, seq++);
      if (e.kind == KKind::StepBegin) QVERIFY(e.step == 10 || e.step == 11 || e.step == 12);
    }
    QCOMPARE(gather_sizes[2'097'152 * 2], 3);      // the root, gathered once per step
    QCOMPARE(gather_sizes[8'388'608 * 2], 3 * 6);  // three layers, forward and backward
  }

  void kernelsDependOnTheirLaunch() {
    const RunTrace t = kineto::importedRunTrace(kineto::loadTraceSet({kJob}));
    const auto& text = *t.imported->text;
    const auto& ev = t.events[1];
    std::map<int32_t, const Event*> by_op;
    for (const Event& e : ev) by_op[e.op] = &e;
    int kernels = 0;
    for (const Event& e : ev) {
      if (e.kind != KKind::Forward && e.kind != KKind::AllGather) continue;
      ++kernels;
      QVERIFY(e.dep >= 0);
      QVERIFY(by_op.count(e.dep));
      QCOMPARE(text.name(1, e.dep), std::string("cudaLaunchKernel"));
      QCOMPARE(text.category(1, e.dep), std::string("cuda_runtime"));
      QVERIFY(by_op[e.dep]->begin_ns <= e.begin_ns);  // launched before it ran
      QCOMPARE(by_op[e.dep]->kind, KKind::CpuOp);
    }
    QCOMPARE(kernels, 3 * (12 + 7));
    QVERIFY(text.name(1, ev.back().op).size() > 0);
  }

  void memoryBooksWhatTheAllocatorSaid() {
    kineto::TraceSet set = kineto::loadTraceSet({kJob});
    std::vector<int64_t> totals;
    for (const kineto::MemorySample& m : set.ranks[2].memory) totals.push_back(m.total_allocated);
    const RunTrace t = kineto::importedRunTrace(std::move(set));
    std::array<int64_t, kCategoryCount> books{};
    size_t sample = 0;
    int64_t max_gathered = 0;
    bool first = true;
    for (const Event& e : t.events[2]) {
      if (e.kind != KKind::Alloc && e.kind != KKind::Free) continue;
      books[static_cast<size_t>(e.category)] = e.value;
      if (first) {  // the memory held before the window: 3 GiB, unattributed
        first = false;
        QCOMPARE(e.category, Category::Workspace);
        QCOMPARE(e.value, int64_t(3'221'225'472));
        continue;
      }
      int64_t sum = 0;
      for (int64_t b : books) sum += b;
      QVERIFY(sample < totals.size());
      QCOMPARE(sum, totals[sample++]);  // the ledger's total is the trace's Total Allocated, sample by sample
      if (e.category == Category::Gathered) QVERIFY(e.unit >= 0 && e.unit < 4);
      max_gathered = std::max(max_gathered, books[static_cast<size_t>(Category::Gathered)]);
    }
    QCOMPARE(sample, totals.size());
    // At most the root and one layer gathered at once; nothing left after the step.
    QCOMPARE(max_gathered, int64_t(2 * (2'097'152 + 8'388'608)));
    QCOMPARE(books[static_cast<size_t>(Category::Gathered)], int64_t(0));
    QCOMPARE(t.imported->unit_names, (std::vector<std::string>{"root", "layers.0", "layers.1", "layers.2"}));
    QCOMPARE(t.imported->reserved[2].size(), totals.size());
    QVERIFY(t.imported->reserved[2].front().second >= totals.front());
  }

  void fsdpModulesOfCollectivesAndTheirExposure() {
    EventStore store;
    store.setFromTrace(kineto::importedRunTrace(kineto::loadTraceSet({kJob})));
    const std::vector<CollectiveExposure> step = collectiveExposure(store, 0, 11);
    QCOMPARE(step.size(), size_t(7 + 4));
    int64_t last = INT64_MIN;
    for (const CollectiveExposure& c : step) {
      QVERIFY(c.begin_ns >= last);  // in the order they ran
      last = c.begin_ns;
      QVERIFY(c.unit >= 0);
      QVERIFY(c.exposed_ns >= 0 && c.exposed_ns <= c.dur_ns);
    }
    // The first all-gather of a step (the root's) runs before any GEMM: nothing hides it.
    QCOMPARE(step.front().kind, EventKind::AllGather);
    QCOMPARE(step.front().exposed_ns, step.front().dur_ns);
    const std::vector<UnitExposure> units = unitExposure(store, step);
    QCOMPARE(units.size(), size_t(8));  // 4 modules × (all-gather, reduce-scatter)
    std::map<std::pair<std::string, EventKind>, int> counts;
    for (const UnitExposure& u : units) counts[{u.name, u.kind}] = u.count;
    QCOMPARE((counts[{"root", EventKind::AllGather}]), 1);  // the root stays gathered into backward
    QCOMPARE((counts[{"layers.1", EventKind::AllGather}]), 2);
    QCOMPARE((counts[{"layers.2", EventKind::ReduceScatter}]), 1);
  }

  void hostOnlyCollectivesAndMissingRanks() {
    // Two hand-made ranks: one with integer, one with float timestamps.
    const RunTrace t = kineto::importedRunTrace(kineto::loadTraceSet({kTwoRanks}));
    QCOMPARE(t.ranks, 2);
    QVERIFY(count(t.events[0], KKind::AllReduce) >= 1);
    QVERIFY(count(t.events[0], KKind::AllGather) >= 1);
    QVERIFY(count(t.events[1], KKind::ReduceScatter) >= 1);
    // The CPU-only DDP trace (Gloo, the older format, rank given): collectives from host ops.
    const std::string gloo = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/torch_ddp_gloo_rank0.json";
    kineto::TraceSetOptions options;
    options.rank_of[gloo] = 1;  // a job whose rank 0 is missing still shows rank 1 as rank 1
    const RunTrace g = kineto::importedRunTrace(kineto::loadTraceSet({gloo}, options));
    QCOMPARE(g.ranks, 2);
    QVERIFY(g.events[0].empty());
    QVERIFY(count(g.events[1], KKind::AllReduce) > 0);
    for (const auto& track : g.imported->tracks[1]) QCOMPARE(track.role, Lane::Host);
  }
};

QTEST_APPLESS_MAIN(TestKinetoImport)
#include "test_kineto_import.moc"
