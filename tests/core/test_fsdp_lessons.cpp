// Where FSDP falls down, measured on real runs:
//  - tiny units: --wrap linear (every Linear its own FSDP unit) issues several
//    times the all-gathers of block wrapping, and a larger share of the
//    communication time is the links' per-message latency;
//  - the same math as DDP whatever the wrapping (CPU ranks);
//  - mixed precision: --reduce-dtype fp32 doubles the reduce-scatter bytes,
//    --param-dtype fp32 the all-gather bytes, and the modeled step pays for it;
//  - CPU-side dispatch: under the profile's host costs (kernel launches, FSDP
//    unit hooks) a small model with many units is host-bound (its compute
//    lane idles between spans), a large one runs exactly as with free launches.
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <map>

#include <QTemporaryDir>

#include "analysis/formulas.h"
#include "common/errors.h"
#include "config/preset_file.h"
#include "engine/run.h"
#include "sanitizer_build.h"
#include "equivalence_check.h"
#include "model/hardware_profile.h"
#include "parallel/fsdp_units.h"
#include "trace/run_trace.h"

using namespace shardscope;
using namespace shardscope::testing;

namespace {

// A small GPT on the modeled clock (4 ranks of one h100-sxm node).
RunConfig modeledGpt(Wrap wrap) {
  RunConfig c = parseRunArgs({"--strategy", "zero3", "--model", "gpt", "--layers", "4", "--hidden", "256",
                              "--heads", "4", "--seq", "64", "--vocab", "512", "--ranks", "4", "--batch", "8",
                              "--steps", "1", "--clock", "modeled", "--profile", "h100-sxm"});
  c.wrap = wrap;
  return c;
}

struct CommFigures {
  int all_gathers = 0;
  int collectives = 0;     // all-gathers and reduce-scatters
  int64_t comm_ns = 0;     // their spans, less the wait for peers
  int64_t latency_ns = 0;  // the part the links' per-message latency makes
};

// Rank 0's data-parallel collectives in the trace. Each ring step of a
// collective over G ranks pays the link's latency once: (G - 1) per
// all-gather or reduce-scatter.
CommFigures commFigures(const RunTrace& trace, const HardwareProfile& profile) {
  CommFigures f;
  for (const Event& e : trace.events.at(0)) {
    if (e.kind != EventKind::AllGather && e.kind != EventKind::ReduceScatter) continue;
    if (e.kind == EventKind::AllGather) ++f.all_gathers;
    ++f.collectives;
    f.comm_ns += e.end_ns - e.begin_ns - e.value;
    f.latency_ns += static_cast<int64_t>((trace.groupSize(e) - 1) * profile.intra_node.latency * 1e9);
  }
  return f;
}

double latencyShare(const CommFigures& f) { return double(f.latency_ns) / double(f.comm_ns); }

// The compute lane of rank 0 in its last step: time between consecutive
// compute spans (forward, backward, loss, optimizer step) and the lane's extent.
struct ComputeGaps {
  int64_t idle_ns = 0, span_ns = 0;
  double share() const { return span_ns > 0 ? double(idle_ns) / double(span_ns) : 0.0; }
};
ComputeGaps computeGaps(const RunTrace& trace) {
  ComputeGaps g;
  int last_step = 0;
  for (const Event& e : trace.events.at(0)) last_step = std::max(last_step, int(e.step));
  int64_t first = -1, end = -1;
  for (const Event& e : trace.events.at(0)) {
    if (e.lane != Lane::Compute || e.step != last_step) continue;
    if (e.kind != EventKind::Forward && e.kind != EventKind::Backward && e.kind != EventKind::Loss &&
        e.kind != EventKind::OptimizerStep)
      continue;
    if (first < 0) first = e.begin_ns;
    if (end >= 0 && e.begin_ns > end) g.idle_ns += e.begin_ns - end;
    end = std::max(end, e.end_ns);
  }
  g.span_ns = end - first;
  return g;
}

// h100-sxm as shipped, less its host costs: every launch free.
QString freeLaunchProfile(const QTemporaryDir& dir) {
  HardwareProfile p = loadProfile("h100-sxm");
  p.name = "h100-free-launch";
  p.host = {};
  const QString path = dir.filePath("h100-free-launch.json");
  std::ofstream out(path.toStdString());
  writeProfileJson(p, out);
  return path;
}

RunConfig cpuConfig(const QString& model, const QString& strategy, int ranks) {
  RunConfig c;
  c.strategy = *parseStrategy(strategy.toStdString());
  c.ranks = ranks;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 16;
  c.steps = 3;
  c.lr = 1e-3;
  if (model == "gpt") {
    c.model.kind = ModelKind::Gpt;
    c.model.layers = 2;
    c.model.hidden = 32;
    c.model.heads = 4;
    c.model.seq = 16;
    c.model.vocab = 256;
    c.batch = 8;
  }
  return c;
}

}  // namespace

class TestFsdpLessons : public QObject {
  Q_OBJECT

 private slots:
  // The gathered parameters' peak is the formula's: the root unit plus the unit
  // computing plus one prefetched (none without prefetch), the whole model
  // without resharding after forward; hsdp and linear wrapping as well. The
  // meta backend books the same ledger as the CPU ranks.
  void gatheredPeakMatchesFormula_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("prefetch");
    QTest::addColumn<int>("unit_blocks");
    QTest::addColumn<bool>("reshard");
    QTest::addColumn<bool>("linear");
    for (const char* pf : {"none", "forward", "backward", "both"})
      for (int ub : {1, 2, 3})
        for (bool rs : {true, false})
          QTest::addRow("zero3 %s ub%d reshard %s", pf, ub, rs ? "on" : "off") << "zero3" << pf << ub << rs << false;
    QTest::newRow("hsdp both ub1") << "hsdp" << "both" << 1 << true << false;
    QTest::newRow("fsdp linear wrap") << "fsdp" << "both" << 1 << true << true;
  }
  void gatheredPeakMatchesFormula() {
    QFETCH(QString, strategy);
    QFETCH(QString, prefetch);
    QFETCH(int, unit_blocks);
    QFETCH(bool, reshard);
    QFETCH(bool, linear);
    RunConfig c = cpuConfig("mlp", strategy, 4);
    c.model.layers = 6;
    c.steps = 2;
    c.backend = Backend::Meta;
    c.clock = ClockKind::Modeled;
    c.prefetch = parsePrefetch(prefetch.toStdString());
    c.unit_blocks = unit_blocks;
    c.reshard_after_forward = reshard;
    if (strategy == "hsdp") c.shard_group = 2;
    if (linear) c.wrap = Wrap::Linear;
    const RunResult r = Run(c).execute();
    const GatheredPeak g = expectedGatheredPeak(c);
    QVERIFY(g.bytes > 0);
    QVERIFY(!g.text.empty());
    for (const RankResult& rank : r.ranks)
      QCOMPARE(rank.ledger.peak[static_cast<size_t>(Category::Gathered)], g.bytes);
    if (!reshard) QVERIFY(g.whole_model);
  }

  // Every Linear its own flat parameter: a GPT block's qkv, proj, fc1 and fc2;
  // the root's embeddings and its head; a block's norms ride with the Linear after them.
  void linearWrappingSplitsUnits() {
    RunConfig c = cpuConfig("gpt", "zero3", 4);
    const ModelSpec spec(c.model);
    const FsdpUnits block(spec, 1, 4, Wrap::Block), linear(spec, 1, 4, Wrap::Linear);
    QCOMPARE(block.units().size(), linear.units().size());
    QCOMPARE(block.pieceCount(), int(block.units().size()));
    QCOMPARE(linear.units()[1].pieces.size(), size_t(4));
    QCOMPARE(QString::fromStdString(linear.units()[1].pieces[0].name), QString("block0.attn.qkv"));
    QCOMPARE(QString::fromStdString(linear.units()[1].pieces[3].name), QString("block0.fc2"));
    QCOMPARE(linear.units()[0].pieces.size(), size_t(2));  // embed, lm_head (with the final norm)
    for (const FsdpUnit& u : linear.units()) {
      int64_t covered = 0;
      for (const FsdpPiece& p : u.pieces) {
        QCOMPARE(p.offset, covered);  // contiguous, in registration order
        QCOMPARE(p.padded % 4, int64_t(0));
        covered += p.elements;
      }
      QCOMPARE(covered, u.elements);
      QCOMPARE(u.padded % 4, int64_t(0));
    }
    // Each rank's shard covers its chunk of every piece: all shards together, every parameter once.
    std::vector<int> seen(static_cast<size_t>(spec.numParams()), 0);
    for (int g = 0; g < 4; ++g)
      for (const ShardSpan& s : linear.shardOf(g).spans)
        for (int64_t i = 0; i < s.count; ++i) ++seen[s.flat_offset + i];
    QVERIFY(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }

  // One clear error each: the wrap policy is FSDP's, and K blocks per unit mean block wrapping.
  void wrapFlagErrors_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::newRow("ddp") << QStringList{"--strategy", "ddp", "--wrap", "linear"}
                         << "--wrap applies to --strategy zero3, fsdp or hsdp (FSDP units), not ddp";
    QTest::newRow("unit-blocks") << QStringList{"--strategy", "zero3", "--wrap", "linear", "--unit-blocks", "2"}
                                 << "--unit-blocks applies to --wrap block";
    QTest::newRow("name") << QStringList{"--strategy", "zero3", "--wrap", "layer"} << "--wrap must be";
  }
  void wrapFlagErrors() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    std::vector<std::string> a;
    for (const QString& s : args) a.push_back(s.toStdString());
    try {
      parseRunArgs(a);
      QFAIL("accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(QString(e.what()).startsWith(message), e.what());
    }
  }

  void linearWrappingIssuesMoreGathers() {
#ifdef SHARDSCOPE_UNDER_SANITIZER
    QSKIP("a modeled-clock lesson at scale: the same code as the equivalence tests, which run under the sanitizer");
#endif
    const HardwareProfile profile = loadProfile("h100-sxm");
    Run block_run(modeledGpt(Wrap::Block));
    const RunResult block = block_run.execute();
    Run linear_run(modeledGpt(Wrap::Linear));
    const RunResult linear = linear_run.execute();
    const CommFigures b = commFigures(block_run.trace(), profile), l = commFigures(linear_run.trace(), profile);
    const double ratio = double(l.all_gathers) / double(b.all_gathers);
    qInfo("all-gathers per step: block %d, linear %d (%.2fx); latency share of comm time: block %.3f, linear %.3f",
          b.all_gathers, l.all_gathers, ratio, latencyShare(b), latencyShare(l));
    QVERIFY2(ratio >= 3.0, qPrintable(QString("linear wrapping issues only %1x the all-gathers").arg(ratio)));
    QVERIFY2(latencyShare(l) > latencyShare(b),
             qPrintable(QString("latency share %1 (linear) vs %2 (block)").arg(latencyShare(l)).arg(latencyShare(b))));
    QVERIFY(latencyShare(b) > 0 && latencyShare(l) < 1.0);
    // The same bytes move (up to each Linear's padding): the messages are only smaller.
    const CommBytes& bb = block.ranks[0].comm_bytes;
    const CommBytes& lb = linear.ranks[0].comm_bytes;
    QVERIFY(lb.all_gather >= bb.all_gather && lb.all_gather < bb.all_gather * 1.01);
    QVERIFY(lb.reduce_scatter >= bb.reduce_scatter && lb.reduce_scatter < bb.reduce_scatter * 1.01);
  }

  // zero3 with every Linear its own unit is DDP's math (CPU ranks, the bound
  // of equivalence_check.h), also when every piece needs padding (odd width).
  void linearWrappingEquivalence_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("hidden");
#ifndef SHARDSCOPE_UNDER_SANITIZER  // the padded row runs the same units, and more of the code
    QTest::newRow("mlp P=2") << "mlp" << 2 << 64;
    QTest::newRow("mlp P=4") << "mlp" << 4 << 64;
#endif
    QTest::newRow("mlp P=4 padded") << "mlp" << 4 << 62;
    QTest::newRow("gpt P=4") << "gpt" << 4 << 32;
    QTest::newRow("mlp hsdp P=4 G=2") << "mlp-hsdp" << 4 << 64;
  }
  void linearWrappingEquivalence() {
    QFETCH(QString, model);
    QFETCH(int, ranks);
    QFETCH(int, hidden);
    const bool hybrid = model == "mlp-hsdp";
    if (hybrid) model = "mlp";
    RunConfig ref = cpuConfig(model, "ddp", 1);
    ref.model.hidden = hidden;
    RunConfig c = cpuConfig(model, hybrid ? "hsdp" : "zero3", ranks);
    if (hybrid) c.shard_group = 2;
    c.model.hidden = hidden;
    c.wrap = Wrap::Linear;
    const RunResult got = Run(c).execute();
    if (hidden % 2) QVERIFY(got.padding_elements > 0);
    verifyEquivalent(got, Run(ref).execute(), c);
  }

  // Bytes from the trace's collectives (their payload) and from the sends
  // (RankResult), for each dtype pair; the step on the modeled clock.
  void mixedPrecisionBytesAndTime_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("zero3") << "zero3";
    QTest::newRow("hsdp") << "hsdp";
  }
  void mixedPrecisionBytesAndTime() {
    QFETCH(QString, strategy);
    struct Figures {
      int64_t rs_trace = 0, ag_trace = 0, ar_trace = 0;
      CommBytes sent;
      int64_t step_ns = 0;
    };
    auto measure = [&](CommDType reduce, CommDType param) {
      // Wide enough that the device, not the host's launches, sets the step (meta: shapes only).
      RunConfig c = cpuConfig("mlp", strategy, 4);
      if (strategy == "hsdp") c.shard_group = 2;
      c.backend = Backend::Meta;
      c.clock = ClockKind::Modeled;
      c.model.hidden = 4096;
      c.batch = 64;
      c.steps = 1;
      c.reduce_dtype = reduce;
      c.param_dtype = param;
      Run run(c);
      const RunResult r = run.execute();
      Figures f;
      const RunTrace trace = run.trace();
      for (const Event& e : trace.events.at(0)) {
        if (e.kind == EventKind::ReduceScatter) f.rs_trace += e.bytes;
        if (e.kind == EventKind::AllGather) f.ag_trace += e.bytes;
        if (e.kind == EventKind::AllReduce) f.ar_trace += e.bytes;
      }
      f.sent = r.ranks[0].comm_bytes;
      f.step_ns = r.last_step.at(0).wall_ns;
      return f;
    };
    const Figures bf16 = measure(CommDType::Bf16, CommDType::Bf16);
    const Figures reduce32 = measure(CommDType::Fp32, CommDType::Bf16);
    const Figures param32 = measure(CommDType::Bf16, CommDType::Fp32);
    QVERIFY(bf16.rs_trace > 0 && bf16.ag_trace > 0);
    QCOMPARE(reduce32.rs_trace, 2 * bf16.rs_trace);
    QCOMPARE(reduce32.sent.reduce_scatter, 2 * bf16.sent.reduce_scatter);
    QCOMPARE(reduce32.ag_trace, bf16.ag_trace);
    QCOMPARE(reduce32.ar_trace, 2 * bf16.ar_trace);  // hsdp: the replicas' all-reduce of the fp32 shard
    QCOMPARE(param32.ag_trace, 2 * bf16.ag_trace);
    QCOMPARE(param32.sent.all_gather, 2 * bf16.sent.all_gather);
    QCOMPARE(param32.rs_trace, bf16.rs_trace);
    qInfo("step on the modeled clock: bf16 %lld ns, reduce fp32 %lld ns, param fp32 %lld ns",
          (long long)bf16.step_ns, (long long)reduce32.step_ns, (long long)param32.step_ns);
    QVERIFY(reduce32.step_ns > bf16.step_ns);
    QVERIFY(param32.step_ns > bf16.step_ns);
  }

  // The real math on CPU ranks: fp32 reduction (and fp32 gathers of the
  // master) stay DDP's training within the bound of equivalence_check.h.
  void mixedPrecisionEquivalence_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("reduce");
    QTest::addColumn<QString>("param");
    QTest::newRow("zero3 reduce fp32") << "zero3" << "fp32" << "bf16";
    QTest::newRow("zero3 param fp32") << "zero3" << "bf16" << "fp32";
    QTest::newRow("hsdp both fp32") << "hsdp" << "fp32" << "fp32";
  }
  void mixedPrecisionEquivalence() {
    QFETCH(QString, strategy);
    QFETCH(QString, reduce);
    QFETCH(QString, param);
    RunConfig c = cpuConfig("mlp", strategy, 4);
    if (strategy == "hsdp") c.shard_group = 2;
    c.reduce_dtype = parseCommDType(reduce.toStdString());
    c.param_dtype = parseCommDType(param.toStdString());
    verifyEquivalent(Run(c).execute(), Run(cpuConfig("mlp", "ddp", 1)).execute(), c);
  }

  void mixedPrecisionFlagErrors() {
    for (const char* flag : {"--reduce-dtype", "--param-dtype"}) {
      try {
        parseRunArgs({"--strategy", "zero3", "--backend", "cuda", flag, "fp32"});
        QFAIL("accepted");
      } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).startsWith(QString(flag) + " fp32 applies to --backend cpu or meta"), e.what());
      }
      try {
        parseRunArgs({"--strategy", "zero2", flag, "fp32"});
        QFAIL("accepted");
      } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).startsWith(QString(flag) + " applies to --strategy zero3"), e.what());
      }
    }
  }

  // The shipped profiles' host costs are figures a profile reads back.
  void profilesCarryHostCosts() {
    for (const std::string& name : listProfiles()) {
      if (name == "this-cpu") continue;
      const HardwareProfile p = loadProfile(name);
      QVERIFY2(p.host.kernel_launch > 1e-6 && p.host.kernel_launch < 20e-6, name.c_str());
      QVERIFY2(p.host.unit_hook >= 10e-6 && p.host.unit_hook < 100e-6, name.c_str());
    }
    QTemporaryDir dir;
    const HardwareProfile free = loadProfile(freeLaunchProfile(dir).toStdString());
    QCOMPARE(free.host.kernel_launch, 0.0);
    QCOMPARE(free.host.unit_hook, 0.0);
  }

  // Tiny blocks, one unit per Linear: the host's launches and hooks take
  // longer than the device's work, so the compute lane waits on the host.
  void smallModelIsHostBound() {
    QTemporaryDir dir;
    RunConfig c = parseRunArgs({"--strategy", "zero3", "--layers", "8", "--hidden", "64", "--ranks", "4", "--batch",
                                "8", "--steps", "2", "--clock", "modeled", "--backend", "meta", "--wrap", "linear"});
    Run with_host(c);
    const RunResult hosted = with_host.execute();
    c.profile = freeLaunchProfile(dir).toStdString();
    Run free_run(c);
    const RunResult free = free_run.execute();
    const ComputeGaps h = computeGaps(with_host.trace()), f = computeGaps(free_run.trace());
    qInfo("small model: step %lld ns with host costs, %lld ns with free launches; compute lane idle %.0f%% vs %.0f%%",
          (long long)hosted.last_step.at(0).wall_ns, (long long)free.last_step.at(0).wall_ns, 100 * h.share(),
          100 * f.share());
    QVERIFY(hosted.last_step.at(0).wall_ns > 2 * free.last_step.at(0).wall_ns);
    QVERIFY2(h.idle_ns > 2 * f.idle_ns, qPrintable(QString("compute lane idle %1 ns with host costs, %2 ns without")
                                                         .arg(h.idle_ns).arg(f.idle_ns)));
  }

  // Every strategy's host launches the same kernels for the same model: one
  // per weight forward, two backward, one fused Adam. FSDP adds one kernel
  // and one hook per collective it issues from a unit's hooks, ZeRO-1/2 one
  // per all-gather of updated parameters. The launches are drawn on the host
  // lane, and the small model's DDP step is host-bound like FSDP's.
  void everyStrategyPaysTheSameLaunches() {
    QTemporaryDir dir;
    std::map<std::string, int64_t> kernels, hooks, steps, free_steps;
    int64_t params = 0, buckets = 0;
    for (const char* strategy : {"ddp", "zero1", "zero2", "zero3"}) {
      RunConfig c = parseRunArgs({"--strategy", strategy, "--layers", "4", "--hidden", "128", "--ranks", "4",
                                  "--batch", "8", "--steps", "2", "--clock", "modeled", "--backend", "meta",
                                  "--bucket-mb", "0.25", "--first-bucket-mb", "0.1"});
      Run hosted(c);
      const RunResult with_host = hosted.execute();
      const RunTrace trace = hosted.trace();
      params = static_cast<int64_t>(trace.param_names.size());
      if (c.strategy == Strategy::Zero1) buckets = static_cast<int64_t>(trace.buckets.size());
      for (const Event& e : trace.events.at(0)) {
        if (e.kind != EventKind::Launch || e.step != 1) continue;
        QCOMPARE(e.lane, Lane::Host);
        QVERIFY(e.end_ns > e.begin_ns);
        kernels[strategy] += e.value;
        hooks[strategy] += e.seq;
      }
      steps[strategy] = with_host.last_step.at(0).wall_ns;
      c.profile = freeLaunchProfile(dir).toStdString();
      Run free_run(c);
      free_steps[strategy] = free_run.execute().last_step.at(0).wall_ns;
    }
    const int64_t compute_kernels = 3 * params + 1;
    qInfo("%lld weights, %lld buckets; kernels ddp %lld zero1 %lld zero2 %lld zero3 %lld (hooks %lld)", (long long)params,
          (long long)buckets, (long long)kernels["ddp"], (long long)kernels["zero1"], (long long)kernels["zero2"],
          (long long)kernels["zero3"], (long long)hooks["zero3"]);
    QVERIFY(buckets > 1);
    QCOMPARE(kernels["ddp"], compute_kernels);
    QCOMPARE(kernels["zero1"], compute_kernels + buckets);
    QCOMPARE(kernels["zero2"], compute_kernels + buckets);
    QCOMPARE(hooks["ddp"], int64_t(0));
    QCOMPARE(hooks["zero2"], int64_t(0));
    QVERIFY2(kernels["zero3"] > compute_kernels && hooks["zero3"] == kernels["zero3"] - compute_kernels,
             qPrintable(QString("zero3: %1 kernels, %2 hooks, %3 compute kernels")
                            .arg(kernels["zero3"]).arg(hooks["zero3"]).arg(compute_kernels)));
    for (const auto& [strategy, ns] : steps) {
      qInfo("%s: step %lld ns with host costs, %lld ns with free launches", strategy.c_str(), (long long)ns,
            (long long)free_steps[strategy]);
      QVERIFY2(ns > 2 * free_steps[strategy], strategy.c_str());
    }
    // FSDP pays its hooks on top of the same launches: slower, not several times slower.
    QVERIFY(steps["zero3"] > steps["ddp"]);
    QVERIFY(steps["zero3"] < 3 * steps["ddp"]);
  }

  // Large blocks: the host issues far ahead of the device, so its costs bind
  // only before the step's first op (its first hooks and launches): the step
  // is the free-launch step plus that, and the compute lane idles as long.
  void largeModelIsNotHostBound() {
#ifdef SHARDSCOPE_UNDER_SANITIZER
    QSKIP("a modeled-clock lesson at scale: the same code as the equivalence tests, which run under the sanitizer");
#endif
    QTemporaryDir dir;
    RunConfig c = parseRunArgs({"--model", "llama2-7b", "--backend", "meta", "--strategy", "zero3", "--ranks", "8",
                                "--batch", "8", "--steps", "2", "--wrap", "linear"});
    Run with_host(c);
    const RunResult hosted = with_host.execute();
    c.profile = freeLaunchProfile(dir).toStdString();
    Run free_run(c);
    const RunResult free = free_run.execute();
    const ComputeGaps h = computeGaps(with_host.trace()), f = computeGaps(free_run.trace());
    qInfo("llama2-7b: step %lld ns with host costs, %lld ns with free launches; compute lane idle %.1f%% vs %.1f%%",
          (long long)hosted.last_step.at(0).wall_ns, (long long)free.last_step.at(0).wall_ns, 100 * h.share(),
          100 * f.share());
    const int64_t extra = hosted.last_step.at(0).wall_ns - free.last_step.at(0).wall_ns;
    qInfo("extra step time %lld ns; compute lane idle %lld ns vs %lld ns", (long long)extra, (long long)h.idle_ns,
          (long long)f.idle_ns);
    QVERIFY(extra >= 0 && extra <= 100'000);  // a few hooks and launches, not one per unit
    QVERIFY(double(extra) < 1e-3 * double(free.last_step.at(0).wall_ns));
    QVERIFY(std::abs(h.idle_ns - f.idle_ns) <= 100'000);
  }

  // The presets' runs as shipped: tiny-units' two wrappings and their
  // figures (README), reduce-dtype's doubled reduce-scatters.
  void tinyUnitsPreset() {
#ifdef SHARDSCOPE_UNDER_SANITIZER
    QSKIP("a modeled-clock lesson at scale: the same code as the equivalence tests, which run under the sanitizer");
#endif
    const PresetFile p = readPresetFile(SHARDSCOPE_SOURCE_DIR "/resources/presets/tiny-units.json");
    QCOMPARE(p.runs.size(), size_t(2));
    QCOMPARE(p.runs[0].config.wrapPolicy(), Wrap::Block);
    QCOMPARE(p.runs[1].config.wrapPolicy(), Wrap::Linear);
    const HardwareProfile profile = loadProfile(p.runs[0].config.profileName());
    Run block_run(p.runs[0].config), linear_run(p.runs[1].config);
    const RunResult block = block_run.execute(), linear = linear_run.execute();
    const CommFigures b = commFigures(block_run.trace(), profile), l = commFigures(linear_run.trace(), profile);
    qInfo("tiny-units: all-gathers %d vs %d, latency share %.3f vs %.3f, step %lld vs %lld ns", b.all_gathers,
          l.all_gathers, latencyShare(b), latencyShare(l), (long long)block.last_step.at(0).wall_ns,
          (long long)linear.last_step.at(0).wall_ns);
    QVERIFY(l.all_gathers >= 5 * b.all_gathers);
    QVERIFY(latencyShare(l) > 2 * latencyShare(b));
    QVERIFY(linear.last_step.at(0).wall_ns > 1.5 * double(block.last_step.at(0).wall_ns));
  }

  void reduceDtypePreset() {
#ifdef SHARDSCOPE_UNDER_SANITIZER
    QSKIP("a modeled-clock lesson at scale: the same code as the equivalence tests, which run under the sanitizer");
#endif
    const PresetFile p = readPresetFile(SHARDSCOPE_SOURCE_DIR "/resources/presets/reduce-dtype.json");
    QCOMPARE(p.runs.size(), size_t(4));
    for (size_t i = 0; i < p.runs.size(); ++i)
      QCOMPARE(p.runs[i].config.reduceDType(), i % 2 ? CommDType::Fp32 : CommDType::Bf16);
    std::vector<RunResult> r;
    for (const PresetFileRun& run : p.runs) r.push_back(Run(run.config).execute());
    for (size_t i = 0; i < r.size(); i += 2) {
      QCOMPARE(r[i + 1].ranks[0].comm_bytes.reduce_scatter, 2 * r[i].ranks[0].comm_bytes.reduce_scatter);
      QVERIFY(r[i + 1].last_step.at(0).wall_ns > r[i].last_step.at(0).wall_ns);
    }
    // Hidden inside the node (a few percent), exposed across nodes (a quarter more).
    const double in_node = double(r[1].last_step.at(0).wall_ns) / double(r[0].last_step.at(0).wall_ns);
    const double across = double(r[3].last_step.at(0).wall_ns) / double(r[2].last_step.at(0).wall_ns);
    qInfo("reduce-dtype: fp32 / bf16 step %.3f in one node, %.3f across two", in_node, across);
    QVERIFY(in_node < 1.05);
    QVERIFY(across > 1.2);
  }
};

QTEST_GUILESS_MAIN(TestFsdpLessons)
#include "test_fsdp_lessons.moc"
