// Every number a shipped preset's text states is what its runs measure. Each
// claim is written here as the phrase the text must contain, formatted from
// the runs' own results: a run that changes, or a text that drifts from its
// data, fails with the phrase the text should now say. Qualitative claims
// ("several times shorter", "near zero") are checked as inequalities.
#include <QtTest>

#include <algorithm>
#include <cstdarg>
#include <memory>

#include "analysis/formulas.h"
#include "analysis/run_summary.h"
#include "common/errors.h"
#include "common/units.h"
#include "config/preset_file.h"
#include "engine/run.h"
#include "inspect/category_filter.h"
#include "inspect/event_store.h"
#include "inspect/memory_series.h"
#include "inspect/reported_step.h"
#include "sanitizer_build.h"

using namespace shardscope;

namespace {

struct PresetRuns {
  PresetFile file;
  QString text;
  std::vector<std::unique_ptr<Run>> runs;
  std::vector<RunResult> results;
  const RunResult& operator[](size_t i) const { return results.at(i); }
};

PresetRuns runPreset(const char* name) {
  PresetRuns p;
  p.file = readPresetFile(std::string(SHARDSCOPE_SOURCE_DIR "/resources/presets/") + name + ".json");
  p.text = QString::fromStdString(p.file.text);
  for (const PresetFileRun& run : p.file.runs) {
    p.runs.push_back(std::make_unique<Run>(run.config));
    p.results.push_back(p.runs.back()->execute());
  }
  return p;
}

double stepMs(const RunResult& r) {
  int64_t ns = 0;
  for (const StepMetrics& m : r.last_step) ns = std::max(ns, m.wall_ns);
  return static_cast<double>(ns) * 1e-6;
}

// The Runs table's "comm hidden" (inspect/reported_step.h): communication under compute, all ranks.
double hiddenPercent(const RunResult& r) { return hiddenSharePercent(r.last_step); }

double mfuPercent(const RunResult& r) { return 100.0 * r.mfu(); }
double bytesPerParam(const RunResult& r) { return modelStateBytesPerParam(r.ranks.at(0), r.params); }
double activationMiBPerLayer(const RunResult& r) { return toMiB(r.ranks.at(0).activation_bytes_per_layer); }
double peakGiB(const RunResult& r, Category c) {
  return static_cast<double>(r.ranks.at(0).ledger.peak[static_cast<size_t>(c)]) / kGiB;
}
// The two peaks a text may cite, each under its name in the window: the
// memory chart's (rank 0's peak of the categories it draws) and the Runs
// table's "peak, all categories" (the most-loaded rank's peak of every category).
double chartPeakMiB(const Run& run, const CategoryFilter& shown) {
  EventStore store;
  store.setFromTrace(run.trace());
  MemorySeries series;
  series.sync(store);
  const MemorySample* peak = series.peakOf(0, shown);
  return peak ? toMiB(peak->sumOf(shown)) : 0.0;
}
double allCategoriesPeakMiB(const RunResult& r) { return toMiB(largestTotalPeak(r)); }
int64_t sentBytes(const RunResult& r) {
  const CommBytes& b = r.ranks.at(0).comm_bytes;
  return b.all_reduce + b.reduce_scatter + b.all_gather;
}
int collectives(const Run& run, EventKind kind, int step) {
  int n = 0;
  const RunTrace trace = run.trace();
  for (const Event& e : trace.events.at(0))
    if (e.kind == kind && e.step == step && e.lane != Lane::Compute) ++n;
  return n;
}

QString phrase(const char* format, ...) {
  va_list args;
  va_start(args, format);
  const QString s = QString::vasprintf(format, args);
  va_end(args);
  return s;
}

// The text states this phrase (formatted from measurements). Every missing
// phrase of a test is reported, not only the first.
QStringList g_missing;
#define SAYS(p, ...)                                                                                 \
  do {                                                                                               \
    const QString claim = phrase(__VA_ARGS__);                                                       \
    if (!(p).text.contains(claim))                                                                   \
      g_missing << QStringLiteral("%1's text should say \"%2\" (what its runs measure)")            \
                       .arg(QString::fromStdString((p).file.title), claim);                          \
  } while (0)

}  // namespace

class PresetClaimsTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
#ifdef SHARDSCOPE_UNDER_SANITIZER
    QSKIP("the presets at their lesson sizes: the same code as the equivalence tests, which run under the sanitizer");
#endif
    g_missing.clear();
  }
  void cleanup() {
    const QString missing = g_missing.join(QStringLiteral("\n"));
    g_missing.clear();
    QVERIFY2(missing.isEmpty(), qPrintable(missing));
  }

  void zeroStagesCompared() {
    const PresetRuns p = runPreset("zero-stages-compared");
    QCOMPARE(p.results.size(), size_t(4));
    // "The loss curves coincide": bf16 rounding differs by where sums happen, not more.
    for (size_t i = 1; i < 4; ++i)
      for (size_t s = 0; s < p[0].losses.size(); ++s) QVERIFY(std::abs(p[i].losses.at(s) - p[0].losses[s]) < 1e-3);
    SAYS(p, "at P = 4 that is %g, %g, %g and %g", std::round(bytesPerParam(p[0]) * 10) / 10,
         std::round(bytesPerParam(p[1]) * 10) / 10, std::round(bytesPerParam(p[2]) * 10) / 10,
         std::round(bytesPerParam(p[3]) * 10) / 10);
    // Stages 1 and 2 move DDP's bytes; ZeRO-3 half as much again (3N against 2N).
    QCOMPARE(sentBytes(p[1]), sentBytes(p[0]));
    QCOMPARE(sentBytes(p[2]), sentBytes(p[0]));
    QVERIFY(std::abs(double(sentBytes(p[3])) / double(sentBytes(p[0])) - 1.5) < 0.01);
    // The modeled clock's host costs: every strategy launches the same kernels, ZeRO-3 adds its hooks.
    QCOMPARE(p.file.runs[0].config.clock, ClockKind::Modeled);
    SAYS(p, "ZeRO-3 takes %.2f ms against DDP's %.2f ms", stepMs(p[3]), stepMs(p[0]));
  }

  void ddpBasics() {
    const PresetRuns p = runPreset("ddp-basics");
    SAYS(p, "the memory ledger measures %.0f bytes per parameter", bytesPerParam(p[0]));
    QCOMPARE(p[0].ranks[0].fire_order.front(), 0);  // bucket 0 is ready first
    QCOMPARE(p[0].ranks[0].comm_bytes.all_reduce, expectedTraffic(p.file.runs[0].config).data_parallel.all_reduce);
    SAYS(p, "%.0f%% of the all-reduce time is hidden", hiddenPercent(p[0]));
  }

  void fsdpPrefetch() {
    const PresetRuns p = runPreset("fsdp-prefetch-on-off");
    SAYS(p, "the overlap in the Runs table is %.0f%%", hiddenPercent(p[0]));
    SAYS(p, "the step is shorter (%.2f ms against %.2f ms)", stepMs(p[1]), stepMs(p[0]));
    SAYS(p, "%.0f%% of the communication hidden", hiddenPercent(p[1]));
    QCOMPARE(sentBytes(p[1]), sentBytes(p[0]));  // "with the same bytes sent"
  }

  void hybrid() {
    const PresetRuns p = runPreset("hybrid-2x4");
    SAYS(p, "Memory per rank is 16/4 = %.0f instead of 16/8 = %.0f bytes per parameter", bytesPerParam(p[1]),
         bytesPerParam(p[0]));
    SAYS(p, "the step is %.1f times shorter (%.1f ms against %.1f ms)", stepMs(p[0]) / stepMs(p[1]), stepMs(p[1]),
         stepMs(p[0]));
  }

  void rankDependentHang() {
    const PresetFile file = readPresetFile(SHARDSCOPE_SOURCE_DIR "/resources/presets/rank-dependent-hang.json");
    QVERIFY(file.expect_error);
    try {
      Run(file.runs.at(0).config).execute();
      QFAIL("the hang preset's run finished");
    } catch (const RunError& e) {
      const QString what = e.what();
      QVERIFY2(what.contains(QStringLiteral("rank 1")) && what.contains(QStringLiteral("bucket")), e.what());
    }
  }

  void reduceDtype() {
    const PresetRuns p = runPreset("reduce-dtype");
    SAYS(p, "the step grows from %.1f ms to %.1f ms (MFU %.1f%% to %.1f%%)", stepMs(p[0]), stepMs(p[1]),
         mfuPercent(p[0]), mfuPercent(p[1]));
    SAYS(p, "the step grows from %.0f ms to %.0f ms, MFU from %.1f%% to %.1f%%", stepMs(p[2]), stepMs(p[3]),
         mfuPercent(p[2]), mfuPercent(p[3]));
    for (size_t i = 0; i < 4; i += 2)
      QCOMPARE(p[i + 1].ranks[0].comm_bytes.reduce_scatter, 2 * p[i].ranks[0].comm_bytes.reduce_scatter);
    // Only the reduce-scatters double: the total grows by a third.
    SAYS(p, "the bytes sent per step grow %.2f times", double(sentBytes(p[1])) / double(sentBytes(p[0])));
  }

  void slowInterconnect() {
    const PresetRuns p = runPreset("slow-interconnect");
    SAYS(p, "over NVLink (first run) %.0f%% of the communication hides", hiddenPercent(p[0]));
    SAYS(p, "DDP is already slow (%.1f ms per step), and ZeRO-3 is slower still (%.1f ms), with %.0f%% of its "
            "communication exposed", stepMs(p[1]), stepMs(p[2]), 100.0 - hiddenPercent(p[2]));
  }

  void tinyUnits() {
    const PresetRuns p = runPreset("tiny-units");
    const int step = static_cast<int>(p.file.runs[0].config.steps) - 1;
    SAYS(p, "rank 0 issues %d all-gathers and %d reduce-scatters per step instead of %d and %d",
         collectives(*p.runs[1], EventKind::AllGather, step), collectives(*p.runs[1], EventKind::ReduceScatter, step),
         collectives(*p.runs[0], EventKind::AllGather, step), collectives(*p.runs[0], EventKind::ReduceScatter, step));
    QVERIFY(p[0].latency_share && p[1].latency_share);
    SAYS(p, "rises from %.0f%% to %.0f%%", 100 * *p[0].latency_share, 100 * *p[1].latency_share);
    SAYS(p, "from %.1f ms to %.1f ms, and MFU falls from %.1f%% to %.1f%%", stepMs(p[0]), stepMs(p[1]),
         mfuPercent(p[0]), mfuPercent(p[1]));
  }

  void unitSize() {
    const PresetRuns p = runPreset("unit-size");
    SAYS(p, "%.0f, %.0f and %.0f MiB of gathered weights", toMiB(p[0].ranks[0].ledger.peak[size_t(Category::Gathered)]),
         toMiB(p[1].ranks[0].ledger.peak[size_t(Category::Gathered)]),
         toMiB(p[2].ranks[0].ledger.peak[size_t(Category::Gathered)]));
    SAYS(p, "steps of %.2f, %.2f and %.2f ms", stepMs(p[0]), stepMs(p[1]), stepMs(p[2]));
    SAYS(p, "hides %.0f%%, %.0f%% and %.0f%% of the communication", hiddenPercent(p[0]), hiddenPercent(p[1]),
         hiddenPercent(p[2]));
    QVERIFY(p[0].latency_share && p[2].latency_share);
    SAYS(p, "falls from %.0f%% to %.0f%%", 100 * *p[0].latency_share, 100 * *p[2].latency_share);
    // 12 blocks per unit: the whole model gathered at once.
    QCOMPARE(p[2].ranks[0].ledger.peak[size_t(Category::Gathered)], 2 * p[2].params);
    // Two peaks, each cited by its name: the memory chart's (rank 0, the
    // preset's categories) grows with the unit; the Runs table's peak of all
    // categories, set by the activations, is the same in the three runs.
    std::string error;
    const CategoryFilter drawn = *CategoryFilter::parse(p.file.categories, &error);
    SAYS(p, "the memory chart's peak of model state and gathered weights (rank 0) is %.1f, %.1f and %.1f MiB",
         chartPeakMiB(*p.runs[0], drawn), chartPeakMiB(*p.runs[1], drawn), chartPeakMiB(*p.runs[2], drawn));
    QCOMPARE(phrase("%.2f", allCategoriesPeakMiB(p[0])), phrase("%.2f", allCategoriesPeakMiB(p[2])));
    QCOMPARE(phrase("%.2f", allCategoriesPeakMiB(p[1])), phrase("%.2f", allCategoriesPeakMiB(p[2])));
    SAYS(p, "the Runs table's peak of all categories is %.1f MiB in all three, set by the activations (%.0f MiB)",
         allCategoriesPeakMiB(p[0]), toMiB(p[0].ranks[0].ledger.peak[size_t(Category::Activation)]));
  }

  void activationCheckpointing() {
    const PresetRuns p = runPreset("activation-checkpointing");
    QCOMPARE(p.results.size(), size_t(4));
    SAYS(p, "%.0f MiB per layer, %.1f GiB over 32 layers", activationMiBPerLayer(p[0]),
         peakGiB(p[0], Category::Activation));
    SAYS(p, "%.0f MiB per layer at the same step time (%.0f ms)", activationMiBPerLayer(p[1]), stepMs(p[1]));
    QVERIFY(std::abs(stepMs(p[0]) - stepMs(p[1])) < 0.5);
    SAYS(p, "saves almost nothing more (%.0f MiB) and costs %.0f ms", activationMiBPerLayer(p[2]),
         stepMs(p[2]) - stepMs(p[1]));
    SAYS(p, "%.0f MiB per layer (%.1f GiB in all)", activationMiBPerLayer(p[3]), peakGiB(p[3], Category::Activation));
    SAYS(p, "the step grows to %.0f ms, MFU falls from %.1f%% to %.1f%% while the hardware FLOPs utilisation stays at "
            "%.0f%%", stepMs(p[3]), mfuPercent(p[1]), mfuPercent(p[3]), 100.0 * p[3].hfu());
    // The peaks it cites are the Runs table's, all categories.
    SAYS(p, "peak of all categories, which falls from %.1f to %.1f GiB", allCategoriesPeakMiB(p[0]) / 1024.0,
         allCategoriesPeakMiB(p[3]) / 1024.0);
    SAYS(p, "selective recomputation's is %.1f GiB against flash attention's %.1f GiB", allCategoriesPeakMiB(p[2]) / 1024.0,
         allCategoriesPeakMiB(p[1]) / 1024.0);
  }

  void tpVersusFsdp() {
    const PresetRuns p = runPreset("tp-vs-fsdp");
    SAYS(p, "TP 8 inside each NVLink node composed with FSDP 2 across the nodes takes %.0f ms per step against FSDP "
            "16's %.0f ms", stepMs(p[1]), stepMs(p[0]));
    SAYS(p, "TP 16, whose groups straddle the two nodes, is %.0f times slower", stepMs(p[2]) / stepMs(p[0]));
    SAYS(p, "FSDP's large messages (%.0f ms per step) beat TP's per-layer ones (%.0f ms)", stepMs(p[3]), stepMs(p[4]));
  }

  void tpTimesFsdp70b() {
    const PresetRuns p = runPreset("tp-x-fsdp-70b");
    const double gb0 = double(p[0].ranks[0].ledger.model_state_peak) / 1e9;
    const double gb1 = double(p[1].ranks[0].ledger.model_state_peak) / 1e9;
    QCOMPARE(phrase("%.2f", gb0), phrase("%.2f", gb1));
    SAYS(p, "same model state per GPU (%.2f GB", gb0);
    // Full activation checkpointing keeps both within an H100's 80 GB.
    const double peak0 = double(p[0].ranks[0].ledger.total_peak) / kGiB;
    const double peak1 = double(p[1].ranks[0].ledger.total_peak) / kGiB;
    QVERIFY(peak0 * kGiB < 80e9 && peak1 * kGiB < 80e9);
    SAYS(p, "each GPU's peak of all categories is %.1f GiB and %.1f GiB", peak0, peak1);
    QCOMPARE(phrase("%.1f", allCategoriesPeakMiB(p[0]) / 1024.0), phrase("%.1f", peak0));  // every rank alike
    SAYS(p, "The composed run's step (%.2f s) is %.1f times as fast as FSDP over all 512 GPUs (%.2f s)",
         stepMs(p[1]) / 1e3, stepMs(p[0]) / stepMs(p[1]), stepMs(p[0]) / 1e3);
  }

  void pipelineSchedules() {
    const PresetRuns p = runPreset("pipeline-schedules");
    QCOMPARE(p.results.size(), size_t(3));
    const auto activationGiB = [](const RunResult& r, int rank) {
      return double(r.ranks.at(size_t(rank)).ledger.peak[size_t(Category::Activation)]) / kGiB;
    };
    const RunConfig& gpipe = p.file.runs[0].config;
    const int stage1_rank = gpipe.ranks / gpipe.pp;
    // GPipe: every stage holds all M microbatches; 1F1B: stage k holds S - k.
    for (int s = 0; s < gpipe.pp; ++s) QCOMPARE(expectedMicrobatchesInFlight(gpipe, s), gpipe.microbatchCount());
    for (int s = 0; s < gpipe.pp; ++s) QCOMPARE(expectedMicrobatchesInFlight(p.file.runs[1].config, s), gpipe.pp - s);
    SAYS(p, "every stage holds all %d microbatches' activations: %.1f GiB on stage 0", gpipe.microbatchCount(),
         activationGiB(p[0], 0));
    SAYS(p, "stage k holds only %d − k microbatches in flight, %.1f GiB on stage 0", gpipe.pp, activationGiB(p[1], 0));
    QVERIFY(activationGiB(p[1], 0) > activationGiB(p[1], stage1_rank));  // the first stage is the most loaded
    QCOMPARE(stepMs(p[0]), stepMs(p[1]));
    SAYS(p, "Both take %.0f ms per step", stepMs(p[1]));
    SAYS(p, "the same bubble, %.1f %% of the pipeline window measured against the formula's (S − 1)/(M + S − 1) = %.1f %%",
         100 * p[1].pipeline.bubble, 100 * p[1].pipeline.formula_bubble);
    const std::vector<StageTiming>& st = p[1].pipeline.stages;
    SAYS(p, "the head makes the last stage %.0f %% heavier than the others",
         100.0 * (double(st.back().busy_ns) / double(st[1].busy_ns) - 1.0));
    SAYS(p, "cuts the bubble to %.1f %% (formula %.1f %%) and the step to %.0f ms", 100 * p[2].pipeline.bubble,
         100 * p[2].pipeline.formula_bubble, stepMs(p[2]));
    QVERIFY(stepMs(p[2]) < stepMs(p[1]));
    SAYS(p, "more activations in flight on stage 0 (%.1f GiB)", activationGiB(p[2], 0));
    QVERIFY(activationGiB(p[2], 0) > activationGiB(p[1], 0));
    const auto sent = [](const RunResult& r, int rank) { return double(r.ranks.at(size_t(rank)).comm_bytes.send); };
    SAYS(p, "each middle stage sends %.0f times the bytes, stage 0 %.0f times", sent(p[2], stage1_rank) / sent(p[1], stage1_rank),
         sent(p[2], 0) / sent(p[1], 0));
  }

  void threeDParallelism() {
    const PresetRuns p = runPreset("3d-parallelism");
    QCOMPARE(p.results.size(), size_t(3));
    const RunConfig& c = p.file.runs[0].config;
    QCOMPARE(c.ranks, 16384);
    QCOMPARE(p[0].simulated_ranks, c.pp);  // one rank per stage
    const auto peakGiB = [](const RunResult& r, int rank) { return double(r.ranks.at(size_t(rank)).ledger.total_peak) / kGiB; };
    // The most loaded stage (the summary's "most loaded"): the highest peak.
    const auto loaded = [&](const RunResult& r) {
      int best = 0;
      for (int s = 0; s < c.pp; ++s)
        if (peakGiB(r, s * c.ranks / c.pp) > peakGiB(r, best * c.ranks / c.pp)) best = s;
      return best;
    };
    const double h100 = 80e9 / kGiB;
    const int s0 = loaded(p[0]);
    SAYS(p, "the most loaded stage is stage %d, with %d microbatches in flight: %.1f GiB of an H100's 80 GB (%.1f GiB)", s0,
         expectedMicrobatchesInFlight(c, s0), peakGiB(p[0], s0 * c.ranks / c.pp), h100);
    QVERIFY(peakGiB(p[0], s0 * c.ranks / c.pp) < h100);
    SAYS(p, "stage 0 holds %d but one block fewer", expectedMicrobatchesInFlight(c, 0));
    SAYS(p, "Full recompute keeps only each block's input: %.1f GiB, but the step grows from %.2f s to %.2f s",
         peakGiB(p[1], loaded(p[1]) * c.ranks / c.pp), stepMs(p[0]) / 1e3, stepMs(p[1]) / 1e3);
    SAYS(p, "shards the parameters too (%.1f GiB at the most loaded stage)", peakGiB(p[2], loaded(p[2]) * c.ranks / c.pp));
    const ExpectedTraffic zero1 = expectedTraffic(p.file.runs[0].config, stageParams(c, 0));
    const ExpectedTraffic fsdp = expectedTraffic(p.file.runs[2].config, stageParams(c, 0));
    SAYS(p, "each rank sends %.0f N where ZeRO-1 sends %.0f N, and the step takes %.2f s",
         fsdp.inUnitsOfN(double(sentBytes(p[2]))), zero1.inUnitsOfN(double(sentBytes(p[0]))), stepMs(p[2]) / 1e3);
    SAYS(p, "The bubble is %.1f %% of the pipeline window measured against the formula's (S − 1)/(M + S − 1) = %.1f %%",
         100 * p[0].pipeline.bubble, 100 * p[0].pipeline.formula_bubble);
  }
};

QTEST_GUILESS_MAIN(PresetClaimsTest)
#include "test_preset_claims.moc"
