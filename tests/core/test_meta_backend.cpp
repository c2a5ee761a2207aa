// The meta backend: the same engine with shapes only (no math, no memory) on
// the modeled clock. Its ledger and traffic equal a real CPU run's; it scales
// to models no CPU could run; and the seed's lessons show up in its timelines.
#include <QtTest>

#include <cstring>
#include <map>

#include "analysis/capacity.h"
#include "analysis/formulas.h"
#include "analysis/run_summary.h"
#include "engine/run.h"
#include "config/model_presets.h"

using namespace shardscope;

namespace {

RunConfig small(const char* strategy, Backend backend) {
  RunConfig c;
  c.strategy = *parseStrategy(strategy);
  c.ranks = 4;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 16;
  c.steps = 2;
  c.bucket_mb = 0.1;
  c.first_bucket_mb = 0.02;
  c.clock = ClockKind::Modeled;
  c.backend = backend;
  return c;
}

// GPT, 1.4B parameters, 16 ranks on 2 nodes of 8: compute-bound on H100s.
RunConfig big(const char* strategy) {
  RunConfig c;
  c.strategy = *parseStrategy(strategy);
  c.backend = Backend::Meta;
  c.clock = ClockKind::Modeled;
  c.profile = "h100-sxm";
  c.model.kind = ModelKind::Gpt;
  c.model.layers = 24;
  c.model.hidden = 2048;
  c.model.heads = 16;
  c.model.seq = 1024;
  c.model.vocab = 50304;
  c.ranks = 16;
  c.batch = 128;
  c.steps = 2;
  return c;
}

int64_t stepNs(const RunResult& r) {
  int64_t step = 0;
  for (const StepMetrics& m : r.last_step) step = std::max(step, m.wall_ns);
  return step;
}

std::map<EventKind, int> collectiveCounts(const std::vector<Event>& events) {
  std::map<EventKind, int> n;
  for (const Event& e : events)
    if (e.kind == EventKind::AllReduce || e.kind == EventKind::AllGather || e.kind == EventKind::ReduceScatter)
      ++n[e.kind];
  return n;
}

}  // namespace

class TestMetaBackend : public QObject {
  Q_OBJECT

 private slots:
  void matchesTheCpuRun_data() {
    QTest::addColumn<QString>("strategy");
    for (const char* s : {"ddp", "zero1", "zero2", "zero3"}) QTest::newRow(s) << QString(s);
  }

  // Model state, gradients in flight and bytes sent come from the same engine
  // code on both backends, so they agree exactly; only activations differ (the
  // meta model books the saved tensors, not every scratch buffer).
  void matchesTheCpuRun() {
    QFETCH(QString, strategy);
    Run cpu_run(small(qPrintable(strategy), Backend::Cpu));
    Run meta_run(small(qPrintable(strategy), Backend::Meta));
    const RunResult cpu = cpu_run.execute(), meta = meta_run.execute();
    QVERIFY(meta.final_master.empty());  // no weights exist
    for (int r = 0; r < 4; ++r) {
      for (Category c : {Category::Param, Category::Grad, Category::Master, Category::AdamM, Category::AdamV,
                         Category::Gathered, Category::GradFull, Category::Bucket})
        QCOMPARE(meta.ranks[r].ledger.peak[size_t(c)], cpu.ranks[r].ledger.peak[size_t(c)]);
      QCOMPARE(meta.ranks[r].ledger.model_state_peak, cpu.ranks[r].ledger.model_state_peak);
      QCOMPARE(meta.ranks[r].comm_bytes.all_reduce, cpu.ranks[r].comm_bytes.all_reduce);
      QCOMPARE(meta.ranks[r].comm_bytes.reduce_scatter, cpu.ranks[r].comm_bytes.reduce_scatter);
      QCOMPARE(meta.ranks[r].comm_bytes.all_gather, cpu.ranks[r].comm_bytes.all_gather);
      QCOMPARE(meta.ranks[r].fire_order, cpu.ranks[r].fire_order);
      QCOMPARE(meta.ranks[r].unit_order, cpu.ranks[r].unit_order);
      QCOMPARE(collectiveCounts(meta_run.trace().events[r]), collectiveCounts(cpu_run.trace().events[r]));
    }
  }

  // The seed: without prefetch every unit stalls on its own gather and FSDP is
  // clearly slower than DDP; with it the extra N of traffic largely disappears
  // behind compute (within 10% of DDP).
  void prefetchMakesZero3ViableOnH100() {
    const RunResult ddp = Run(big("ddp")).execute();
    RunConfig with = big("zero3"), without = big("zero3");
    without.prefetch = Prefetch::None;
    const RunResult z3 = Run(with).execute(), z3_none = Run(without).execute();
    qInfo("step on h100-sxm, 16 ranks: ddp %.1f ms, zero3 %.1f ms, zero3 without prefetch %.1f ms",
          stepNs(ddp) / 1e6, stepNs(z3) / 1e6, stepNs(z3_none) / 1e6);
    QVERIFY(stepNs(z3_none) > 1.2 * stepNs(ddp));
    QVERIFY(stepNs(z3) < 1.1 * stepNs(ddp));
    // Memory: the seed's 16/P, measured by the (meta) allocator.
    QCOMPARE(modelStateBytesPerParam(z3.ranks[0], z3.params), 16.0 / 16);
  }

  // Unit size is the knob: tiny units issue more, smaller collectives (more
  // latency), big units gather more at once (higher transient peak).
  void unitSizeTradesLatencyForMemory() {
    auto run = [](int unit_blocks) {
      RunConfig c = big("zero3");
      c.model.layers = 8;
      c.model.hidden = 512;
      c.model.seq = 128;
      c.batch = 16;
      c.unit_blocks = unit_blocks;
      Run r(c);
      const RunResult result = r.execute();
      int64_t gathers = 0, comm_ns = 0;
      const RunTrace trace = r.trace();
      for (const Event& e : trace.events[0])
        if (e.kind == EventKind::AllGather && e.step == c.steps - 1) {
          ++gathers;
          comm_ns += e.end_ns - e.begin_ns - e.value;
        }
      return std::tuple{gathers, comm_ns, result.ranks[0].ledger.peak[size_t(Category::Gathered)]};
    };
    const auto [g1, ns1, peak1] = run(1);
    const auto [g8, ns8, peak8] = run(8);
    qInfo("unit = 1 block: %lld gathers, %.3f ms; unit = 8 blocks: %lld gathers, %.3f ms", (long long)g1,
          ns1 / 1e6, (long long)g8, ns8 / 1e6);
    QVERIFY(g1 > 3 * g8);
    QVERIFY(ns1 > ns8);       // same bytes, more latency
    QVERIFY(peak8 > peak1);   // a bigger spike
  }

  // The seed's ledger for published models: the meta backend's allocator and
  // the capacity calculator agree on every stage, up to the padding reported.
  void presetsAgreeWithCalc_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("strategy");
    for (const char* m : {"gpt2-124m", "llama2-7b", "llama2-70b"})
      for (const char* s : {"ddp", "zero1", "zero2", "zero3", "hsdp"}) QTest::addRow("%s %s", m, s) << m << s;
  }

  void presetsAgreeWithCalc() {
    QFETCH(QString, preset);
    QFETCH(QString, strategy);
    RunConfig c;
    c.backend = Backend::Meta;
    c.clock = ClockKind::Modeled;
    c.model = presetShape(preset.toStdString());
    c.strategy = *parseStrategy(strategy.toStdString());
    c.ranks = 8;
    c.batch = 8;
    c.steps = 1;
    if (strategy == "hsdp") c.shard_group = 4;
    const RunResult r = Run(c).execute();
    CapacityInput in;
    in.params = r.params;
    in.ranks = 8;
    in.shard_group = strategy == "hsdp" ? 4 : 0;
    const CapacityReport calc = computeCapacity(in);
    const auto stage = std::find_if(calc.stages.begin(), calc.stages.end(),
                                    [&](const StageCapacity& s) { return s.stage == c.strategy; });
    QVERIFY(stage != calc.stages.end());
    QCOMPARE(r.params, findModelPreset(c.model.preset).params());
    for (const RankResult& rank : r.ranks) {
      const double measured = double(rank.ledger.model_state_peak);
      const double predicted = double(stage->bytes_per_rank);
      // calc rounds shards up per rank (ceil(N/P)); the run pads flat units or
      // buckets: both within the padding the run reports, plus 16 B of rounding.
      QVERIFY2(std::abs(measured - predicted) <= double(rank.padding_state_bytes) + 16.0 * 64,
               qPrintable(QString("rank %1: %2 B measured, calc %3 B, padding %4 B")
                              .arg(rank.rank).arg(measured, 0, 'f', 0).arg(predicted, 0, 'f', 0)
                              .arg(rank.padding_state_bytes)));
    }
  }

  // What a CPU cannot run: 7B-class GPT on 64 ranks, fully sharded.
  void bigModelManyRanks() {
    RunConfig c = big("zero3");
    c.model.layers = 32;
    c.model.hidden = 4096;
    c.model.heads = 32;
    c.model.seq = 2048;
    c.model.vocab = 32000;
    c.ranks = 64;
    c.batch = 64;
    c.steps = 1;
    const RunResult r = Run(c).execute();
    QVERIFY(r.params > 6'000'000'000LL);
    const double measured = modelStateBytesPerParam(r.ranks[0], r.params);
    QVERIFY(std::abs(measured - 16.0 / 64) < 0.01);
    QVERIFY(r.mfu() > 0.05 && r.mfu() < 1.0);
  }

  // Symmetric ranks simulated once and copied: everything a full simulation
  // measures per rank comes out the same — step metrics, ledgers, traffic,
  // and each rank's events on its own groups (HSDP's copies live in other
  // shard groups). An injected branch is never replicated.
  void replicationMatchesTheFullSimulation_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("profile");
    QTest::addColumn<int>("shard_group");
    QTest::newRow("zero3 h100") << "zero3" << "h100-sxm" << 0;
    QTest::newRow("ddp h100") << "ddp" << "h100-sxm" << 0;
    QTest::newRow("hsdp 8x8 h100") << "hsdp" << "h100-sxm" << 8;
    QTest::newRow("zero3 25gbe") << "zero3" << "cluster-25gbe" << 0;
  }
  void replicationMatchesTheFullSimulation() {
    QFETCH(QString, strategy);
    QFETCH(QString, profile);
    QFETCH(int, shard_group);
    RunConfig c = big(qPrintable(strategy));
    c.model.layers = 4;
    c.model.hidden = 256;
    c.model.heads = 4;
    c.model.seq = 128;
    c.model.vocab = 1024;
    c.ranks = 64;
    c.batch = 64;
    c.steps = 1;
    c.profile = profile.toStdString();
    if (shard_group) c.shard_group = shard_group;
    c.timeout_ms = 20000;

    Run full_run(c);
    full_run.setReplication(false);
    const RunResult full = full_run.execute();
    Run copied_run(c);
    QVERIFY(copied_run.replicated());
    const RunResult copied = copied_run.execute();
    QCOMPARE(full.simulated_ranks, 64);
    QCOMPARE(copied.simulated_ranks, 1);

    QCOMPARE(copied.last_step.size(), full.last_step.size());
    for (size_t r = 0; r < full.last_step.size(); ++r) {
      QCOMPARE(copied.last_step[r].wall_ns, full.last_step[r].wall_ns);
      QCOMPARE(copied.last_step[r].exposed_comm_ns, full.last_step[r].exposed_comm_ns);
      QCOMPARE(copied.last_step[r].comm_ns, full.last_step[r].comm_ns);
    }
    for (int r = 0; r < 64; ++r) {
      const RankResult& a = full.ranks[size_t(r)];
      const RankResult& b = copied.ranks[size_t(r)];
      QCOMPARE(b.rank, r);
      QCOMPARE(b.ledger.model_state_peak, a.ledger.model_state_peak);
      QCOMPARE(b.ledger.total_peak, a.ledger.total_peak);
      QCOMPARE(b.ledger.peak, a.ledger.peak);
      QCOMPARE(b.comm_bytes.all_gather, a.comm_bytes.all_gather);
      QCOMPARE(b.comm_bytes.reduce_scatter, a.comm_bytes.reduce_scatter);
      QCOMPARE(b.comm_bytes.all_reduce, a.comm_bytes.all_reduce);
    }
    const RunTrace ta = full_run.trace(), tb = copied_run.trace();
    for (int r : {0, 9, 37, 63}) {
      const auto& ea = ta.events[size_t(r)];
      const auto& eb = tb.events[size_t(r)];
      QCOMPARE(eb.size(), ea.size());
      for (size_t i = 0; i < ea.size(); ++i)
        QVERIFY2(std::memcmp(&ea[i], &eb[i], sizeof(Event)) == 0,
                 qPrintable(QStringLiteral("rank %1 event %2 (%3, group %4 vs %5) differs")
                                .arg(r)
                                .arg(i)
                                .arg(QLatin1String(eventKindName(ea[i].kind).data()))
                                .arg(ea[i].group)
                                .arg(eb[i].group)));
    }

    RunConfig branch = c;
    branch.inject_branch = InjectBranch{1, 0};
    QVERIFY(!Run(branch).replicated());  // the ranks differ: every one is simulated
  }
};

QTEST_APPLESS_MAIN(TestMetaBackend)
#include "test_meta_backend.moc"
