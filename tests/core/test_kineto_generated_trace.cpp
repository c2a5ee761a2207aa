// The bench's real-shaped trace generator (tests/bench/real_shaped_trace.h)
// checked against the trace shapes issue 50 names: what the reader and the
// analyses find in its output equals what the generator counted while
// writing, for rank 9 of 16 with a shard group of 8 (ns digits, Python
// frames) and rank 0 of 8 (whole-µs timestamps, no Python frames). The
// throughput figures of docs/performance.md are measured on this trace, so
// a shape it writes that the reader misreads would go unnoticed there.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <map>
#include <sstream>

#include "common/collective.h"
#include "inspect/reported_step.h"
#include "kineto/kineto_run_trace.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"
#include "real_shaped_trace.h"

using namespace shardscope;
using namespace shardscope::kineto;
using shardscope::bench::RealShapedOptions;
using shardscope::bench::RealShapedTally;

namespace {

struct Generated {
  QTemporaryDir dir;
  std::string path;
  RealShapedTally tally;
};

void generate(Generated& g, const RealShapedOptions& o) {
  g.path = g.dir.filePath("rank.pt.trace.json").toStdString();
  std::ofstream(g.path, std::ios::binary) << bench::writeRealShapedTrace(o, &g.tally);
}

int64_t countKind(const RankTrace& t, kineto::EventKind k) {
  int64_t n = 0;
  for (const TraceEvent& e : t.events) n += e.kind == k;
  return n;
}

const CollectiveKindSummary* kindOf(const CommSummary& c, Collective k) {
  for (const auto& s : c.kinds)
    if (s.kind == k) return &s;
  return nullptr;
}

// Every check below, for one generated rank.
void checkRank(const RealShapedOptions& o) {
  Generated g;
  generate(g, o);
  const RealShapedTally& w = g.tally;
  QVERIFY(w.steps >= 3);
  const TraceSet set = loadTraceSet({g.path});
  const RankTrace& t = set.ranks[0];
  const TraceIndex& idx = set.indexes[0];
  QCOMPARE(t.rank, o.rank);
  QCOMPARE(t.world_size, o.world);
  QCOMPARE(t.any_float_ts, !o.integer_ts);

  // Events by category, as written.
  const auto written = [&](const char* cat) {
    const auto it = w.by_category.find(cat);
    return it == w.by_category.end() ? int64_t(0) : it->second;
  };
  QCOMPARE(countKind(t, kineto::EventKind::Kernel), written("kernel"));
  QCOMPARE(countKind(t, kineto::EventKind::GpuMemcpy), written("gpu_memcpy"));
  QCOMPARE(countKind(t, kineto::EventKind::GpuMemset), written("gpu_memset"));
  QCOMPARE(countKind(t, kineto::EventKind::CpuOp), written("cpu_op"));
  QCOMPARE(countKind(t, kineto::EventKind::UserAnnotation), written("user_annotation"));
  QCOMPARE(countKind(t, kineto::EventKind::CudaRuntime), written("cuda_runtime"));
  QCOMPARE(countKind(t, kineto::EventKind::CudaDriver), written("cuda_driver"));
  QCOMPARE(countKind(t, kineto::EventKind::PythonFunction), written("python_function"));
  QCOMPARE(int64_t(t.memory.size()), w.memory_samples);
  QCOMPARE(idx.peak_allocated, w.peak_allocated);
  QCOMPARE(int64_t(idx.steps.size()), w.steps);

  // Each collective: its kind, group and bytes as written, none unknown.
  std::map<std::tuple<Collective, int, int64_t>, int64_t> read;
  for (const TraceCollective& c : idx.collectives) ++read[{c.kind, c.group_size, c.bytes}];
  std::map<std::tuple<Collective, int, int64_t>, int64_t> expected;
  for (const auto& c : w.collectives) {
    // An all-to-all whose record_param_comms carries no args names no group: the default group, the world.
    expected[{collectiveFromName(c.kind), c.group_size ? c.group_size : o.world, c.bytes}] += c.count;
  }
  std::string read_text;
  for (const auto& [key, n] : read)
    read_text += std::string(collectiveName(std::get<0>(key))) + " group " + std::to_string(std::get<1>(key)) + " of " +
                 std::to_string(std::get<2>(key)) + " bytes: " + std::to_string(n) + "; ";
  for (const auto& [key, n] : expected) {
    const auto it = read.find(key);
    QVERIFY2(it != read.end() && it->second == n,
             (std::string(collectiveName(std::get<0>(key))) + " group " + std::to_string(std::get<1>(key)) + " of " +
              std::to_string(std::get<2>(key)) + " bytes: read " + std::to_string(it == read.end() ? 0 : it->second) +
              ", written " + std::to_string(n) + " (read: " + read_text + ")")
                 .c_str());
  }
  QCOMPARE(read.size(), expected.size());

  // The analyses: every launch API paired with its GPU event (cudaLaunchKernelExC and cuLaunchKernel too).
  const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
  const RankAnalysis& r = job.ranks[0];
  int64_t launches = 0;
  for (const auto& [api, n] : w.launches) launches += n;
  QVERIFY(w.launches.count("cudaLaunchKernelExC") && w.launches.count("cuLaunchKernel"));
  const HtaCorrelationCheck& check = r.hta_analyses.launch.check;
  // The last step is left out as HTA does; what is kept pairs completely.
  QVERIFY(check.launches > 0 && check.launches <= launches);
  QCOMPARE(check.launches_without_kernel, int64_t(0));
  QCOMPARE(check.kernels_without_launch, int64_t(0));
  QCOMPARE(r.hta_analyses.launch.pairs, check.launches);
  QVERIFY(!kindOf(r.comm, Collective::Unknown));
  const CollectiveKindSummary* ag = kindOf(r.comm, Collective::AllGather);
  QVERIFY(ag);
  const int shard = o.shard_group ? o.shard_group : std::min(o.world, 8);
  QCOMPARE(ag->group_size, shard);  // the ops' own in/out sizes, not the world in "Group size"
  QCOMPARE(ag->sized, ag->count);
  const CollectiveKindSummary* a2a = kindOf(r.comm, Collective::AllToAll);
  QVERIFY(a2a);
  QCOMPARE(a2a->sized, a2a->count);  // sized from nccl:all_to_all's Input Dims

  // A file of one rank that is not rank 0 still reports a step (the communication view's step).
  const RunTrace run = importedRunTrace(loadTraceSet({g.path}));
  const ReportedStep reported = reportedStepMetrics(run.events, run.imported.get());
  QVERIFY2(reported.step >= 1, std::to_string(reported.step).c_str());
  QCOMPARE(reported.ranks.size(), size_t(1));
  QCOMPARE(reported.ranks[0].rank, o.rank);
}

}  // namespace

class TestKinetoGeneratedTrace : public QObject {
  Q_OBJECT

 private slots:
  void rankNineOfSixteenShardGroupOfEight() {
    RealShapedOptions o;
    o.bytes = 2'500'000;
    o.rank = 9;
    o.world = 16;
    o.shard_group = 8;
    checkRank(o);
  }

  void rankZeroOfEightWholeMicroseconds() {
    RealShapedOptions o;
    o.bytes = 2'500'000;
    o.integer_ts = true;
    o.python_stack = false;
    checkRank(o);
  }

  void optionsAreChecked() {
    RealShapedOptions o;
    o.world = 12;
    o.shard_group = 8;
    QVERIFY(bench::realShapedOptionsError(o).find("--shard-group must divide --world") != std::string::npos);
    o.shard_group = 0;
    o.rank = 12;
    QVERIFY(bench::realShapedOptionsError(o).find("--rank") != std::string::npos);
    o.rank = 0;
    o.world = 16;
    QCOMPARE(bench::realShapedOptionsError(o), std::string());
  }
};

QTEST_GUILESS_MAIN(TestKinetoGeneratedTrace)
#include "test_kineto_generated_trace.moc"
