// Every view states the same number: for every shipped preset and for runs that
// exercise tensor parallelism, fp32 reduction, hybrid sharding and 512 meta
// ranks, the CLI summary (JSON and text), the memory view's prediction, the
// communication view's formula column, the Runs table, the capacity page's
// answer (its stage plan for pipelined runs) and the exported memory
// figure's legend state the same predicted numbers, and the measured ones
// where a view shows them. The summary JSON is
// the reference; each check names the view that disagrees.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/formulas.h"
#include "analysis/parallel_capacity.h"
#include "analysis/run_summary.h"
#include "cli/calc_command.h"
#include "comm_stats_model.h"
#include "compare_controller.h"
#include "inspect/run_comparison.h"
#include "config/run_config.h"
#include "experiment_panel.h"
#include "figure_export.h"
#include "inspect/event_store.h"
#include "main_window.h"
#include "memory_view.h"
#include "preset.h"
#include "preset_run.h"
#include "run_history_model.h"

using namespace shardscope;
using nlohmann::json;

namespace {

json summaryOf(const RunResult& result) {
  std::ostringstream out;
  writeSummaryJson(result, out);
  return json::parse(out.str());
}

bool near(double a, double b, double tolerance = 0.5) { return std::abs(a - b) <= tolerance; }

int64_t jsonTotal(const json& bytes) {
  return bytes["all_reduce"].get<int64_t>() + bytes["reduce_scatter"].get<int64_t>() + bytes["all_gather"].get<int64_t>();
}

int64_t s_tpExpected(const ExpectedTraffic& t, EventKind kind) {
  switch (kind) {
    case EventKind::AllReduce: return t.tensor_parallel.all_reduce;
    case EventKind::ReduceScatter: return t.tensor_parallel.reduce_scatter;
    case EventKind::AllGather: return t.tensor_parallel.all_gather;
    default: return 0;
  }
}

// Both peaks, each under its one name: the compare readout's and the Runs
// table's "peak, all categories (most-loaded rank)" is the summary's largest
// total_peak_bytes; the memory chart's peak is one rank's peak of what it draws.
void checkPeaks(MainWindow& w, int row, const RunResult& result, const json& s, EventStore& store, const QString& tag) {
  int64_t largest = 0;
  int loaded = 0;
  for (size_t r = 0; r < s["per_rank"].size(); ++r)
    if (const int64_t p = s["per_rank"][r]["total_peak_bytes"].get<int64_t>(); p > largest) {
      largest = p;
      loaded = s["per_rank"][r]["rank"].get<int>();
    }
  QCOMPARE(largestTotalPeak(result), largest);
  // The compare readout (status bar), from the run and from its events alone.
  const std::optional<ComparedRun> run = CompareController::comparedRun(w.history()->run(row));
  QVERIFY(run);
  const std::vector<FigureRatio> figures = compareFigures(runFigures(*run), runFigures(*run));
  QCOMPARE(QString::fromStdString(figures[2].name), QString::fromLatin1(kTotalPeakName));
  QVERIFY2(figures[2].a && *figures[2].a == double(largest), qPrintable(tag + ": readout peak"));
  // From the events alone (an opened trace; the memory chart) the same number,
  // where the trace's alloc/free order is the ledger's: the meta backend. A
  // CPU run's ranks allocate from several stream threads and its replayed
  // sums can differ from the ledger's by a few percent (noted, not fixed here).
  const bool replay_exact = result.config.backend == Backend::Meta;
  ComparedRun events_only = *run;
  events_only.result.reset();
  const int64_t from_events = runFigures(events_only).total_peak_bytes.value_or(-1);
  QVERIFY2(!replay_exact || from_events == largest,
           qPrintable(tag + QStringLiteral(": readout peak from the events %1, the ledger's %2").arg(from_events).arg(largest)));
  // The Runs table's column.
  const QString cell = w.history()->data(w.history()->index(row, RunHistoryModel::TotalPeak)).toString();
  QVERIFY2(cell == QString::number(double(largest) / (1024.0 * 1024.0), 'f', 2), qPrintable(tag + ": Runs table peak " + cell));
  QVERIFY(w.history()->headerData(RunHistoryModel::TotalPeak, Qt::Horizontal).toString().contains(QStringLiteral("all categories")));
  // The CLI's per-rank table ends in the same figure, under "all".
  std::ostringstream text;
  printSummaryText(result, text);
  const QString cli = QString::fromStdString(text.str());
  QVERIFY2(cli.contains(QStringLiteral(" %1\n").arg(double(largest) / (1024.0 * 1024.0), 10, 'f', 2)), qPrintable(tag + ": CLI all column"));
  QVERIFY2(cli.contains(QString::fromLatin1(kTotalPeakName)), qPrintable(tag + ": CLI names the peak"));
  // The memory chart: on the most-loaded rank with every category drawn it is
  // the same number; with model state drawn, that rank's model-state peak.
  MemoryView memory(&store);
  memory.setSelectedRank(loaded);
  memory.refresh(true);
  QVERIFY2(!replay_exact || memory.chartPeakBytes() == largest,
           qPrintable(tag + QStringLiteral(": memory chart peak %1, summary %2").arg(memory.chartPeakBytes()).arg(largest)));
  QVERIFY2(memory.chartPeakLabel().contains(QStringLiteral("peak, all categories")), qPrintable(memory.chartPeakLabel()));
  memory.setShownCategories(CategoryFilter::modelState());
  const json& ranked = s["per_rank"][size_t(loaded)];
  QVERIFY2(!replay_exact || memory.chartPeakBytes() == ranked["model_state_peak_bytes"].get<int64_t>(),
           qPrintable(tag + ": chart model-state peak"));
  QVERIFY2(memory.chartPeakLabel().contains(QStringLiteral("peak of model state")), qPrintable(memory.chartPeakLabel()));
}

// The checks of one finished run (record `row` of the Runs table).
void checkRun(MainWindow& w, int row, const QString& where) {
  const RunRecord& record = w.history()->run(row);
  if (!record.ok || !record.result || !record.trace) return;  // a run that stopped (the hang) has no summary
  const RunResult& result = *record.result;
  const RunConfig& c = result.config;
  const json s = summaryOf(result);
  const json& rank0 = s["per_rank"][0];
  const QString tag = where + QStringLiteral(" (") + record.label + QStringLiteral(")");

  // The formulas' inputs are the run's: the model the config describes is the one that ran.
  QVERIFY2(modelParams(c) == result.params, qPrintable(tag + ": params"));
  if (c.tp > 1) QVERIFY2(sliceParams(c) == result.slice_params, qPrintable(tag + ": slice params"));

  // Model state: the summary's formula, the memory view's prediction bar and the Runs table.
  const double bpp = rank0["expected_model_state_bytes_per_param"].get<double>();
  QVERIFY2(near(bpp, expectedBytesPerParam(c), 1e-12), qPrintable(tag + ": summary bytes/param"));
  const double per_rank = c.tp > 1 ? rank0["expected_model_state_bytes_per_param_slice"].get<double>() * double(result.params)
                                   : bpp * double(result.params);
  EventStore store;
  store.setFromTrace(*record.trace);
  MemoryView memory(&store);
  memory.refresh(true);
  QVERIFY2(near(memory.predictedBytes(), per_rank, std::max(1.0, 1e-9 * per_rank)),
           qPrintable(tag + QStringLiteral(": memory view predicts %1 B, the summary %2 B").arg(memory.predictedBytes()).arg(per_rank)));
  const QString state_cell = w.history()->data(w.history()->index(row, RunHistoryModel::StateBytes)).toString();
  QVERIFY2(state_cell.contains(QStringLiteral("(formula %1)").arg(QString::number(bpp, 'g', 4))),
           qPrintable(tag + ": Runs table model state '" + state_cell + "'"));

  // Traffic: the summary's expected bytes, the communication view's formula column, the CLI text and the Runs table.
  const ExpectedTraffic traffic = expectedTraffic(c);
  const int64_t expected_total = jsonTotal(rank0["expected_comm_bytes"]);
  QCOMPARE(expected_total, traffic.dataParallelTotal());
  CommStatsModel comm;
  comm.setRun(store, &result);
  QVERIFY2(comm.expectedTotal() == expected_total,
           qPrintable(tag + QStringLiteral(": comm view formula %1 B, summary %2 B").arg(comm.expectedTotal()).arg(expected_total)));
  const std::pair<EventKind, const char*> kinds[] = {
      {EventKind::AllReduce, "all_reduce"}, {EventKind::ReduceScatter, "reduce_scatter"}, {EventKind::AllGather, "all_gather"}};
  for (const CommStatsModel::Row& r : comm.statRows()) {
    if (r.tensor_parallel) {
      // The TP group's rows: Megatron-LM's per-step formula, the one the CLI prints.
      for (const auto& [kind, key] : kinds)
        if (r.kind == kind)
          QVERIFY2(r.expected == s_tpExpected(traffic, kind), qPrintable(tag + ": comm view TP " + key));
      continue;
    }
    for (const auto& [kind, key] : kinds)
      if (r.kind == kind)
        QVERIFY2(r.expected == rank0["expected_comm_bytes"][key].get<int64_t>(), qPrintable(tag + ": comm view " + key));
  }
  std::ostringstream text;
  printSummaryText(result, text);
  const QString cli = QString::fromStdString(text.str());
  QVERIFY2(cli.contains(QString::fromStdString(traffic.valueText())), qPrintable(tag + ": CLI traffic line"));
  QVERIFY2(cli.contains(QString::fromStdString(modelStateFormulaText(c))), qPrintable(tag + ": CLI formula"));
  QVERIFY2(cli.contains(QStringLiteral(" %1 ").arg(expected_total)), qPrintable(tag + ": CLI expected bytes"));
  if (traffic.ring_ranks > 1) {
    const QString sent_cell = w.history()->data(w.history()->index(row, RunHistoryModel::Sent)).toString();
    const double k = traffic.inUnitsOfN(double(expected_total));
    QVERIFY2(sent_cell.contains(QStringLiteral("(formula %1)").arg(QString::number(k, 'g', 4))),
             qPrintable(tag + ": Runs table traffic '" + sent_cell + "'"));
    // The texts' notation: 2N for ddp, zero1, zero2; 3N for zero3 with resharding, in bf16
    // (under a pipeline each of the M microbatches gathers and reduces: 3M N).
    const double sharded_k = c.pipelined() ? 3.0 * c.microbatchCount() : c.reshardAfterForward() ? 3.0 : 2.0;
    if (!isHybrid(c.strategy) && c.reduceDType() == CommDType::Bf16 && c.paramDType() == CommDType::Bf16)
      QVERIFY2(near(k, c.isSharded() ? sharded_k : 2.0, 1e-6), qPrintable(tag + QStringLiteral(": k = %1").arg(k, 0, 'g', 12)));
  }
  if (!result.ranks.empty()) {
    checkPeaks(w, row, result, s, store, tag);
    if (QTest::currentTestFailed()) return;
  }
  if (c.tp > 1 && c.pp <= 1) {
    // The TP group's formula per step: the CLI's line, and the run's TP bytes within the
    // loss statistics' few floats per token (exact on the meta backend).
    QVERIFY2(cli.contains(QString::fromStdString(traffic.tp_step_notation)), qPrintable(tag + ": CLI TP step formula"));
    const CommBytes& tp = result.ranks.front().tp_comm_bytes;
    for (const auto& [got, want] : {std::pair{tp.all_reduce, traffic.tensor_parallel.all_reduce},
                                    std::pair{tp.reduce_scatter, traffic.tensor_parallel.reduce_scatter}})
      QVERIFY2(std::abs(double(got - want)) <= 0.02 * double(want) + 16,
               qPrintable(tag + QStringLiteral(": TP bytes %1, formula %2").arg(got).arg(want)));
  }
  if (c.tp > 1) {
    // Backward sends the forward's bytes (sequence parallelism: 1.5 times, the norms' outputs gathered again).
    const int64_t backward = rank0["expected_tp_activation_all_reduce_bytes_per_layer"]["backward"].get<int64_t>();
    QCOMPARE(backward, traffic.tp_backward_per_layer);
    QCOMPARE(backward, c.model.sequence_parallel ? traffic.tp_per_layer * 3 / 2 : traffic.tp_per_layer);
    // Full checkpointing's recompute repeats the forward all-reduces (tp-x-fsdp-70b).
    const int64_t forward = rank0["expected_tp_activation_all_reduce_bytes_per_layer"]["forward"].get<int64_t>();
    QCOMPARE(forward, c.model.checkpointing == Checkpointing::Full ? 2 * traffic.tp_per_layer : traffic.tp_per_layer);
    QCOMPARE(rank0["tp_activation_all_reduce_bytes_per_layer"]["forward"].get<int64_t>(), forward);
    QCOMPARE(rank0["tp_activation_all_reduce_bytes_per_layer"]["backward"].get<int64_t>(), backward);
  }

  // The capacity page answers from the same formula (per TP slice parameter
  // under --tp). With pipeline stages its stage plan (calc --pp) holds each
  // stage's model states to the run's ledger, and its activations at or
  // above the ledger's by at most the received gradient (2·s·b·h/sp).
  if (c.pp > 1) {
    if (c.backend != Backend::Meta || !hasTokenBlocks(c)) return;
    const ParallelPlan plan = planParallelCapacity(c, 80e9);
    for (const StagePlan& st : plan.stages) {
      const LedgerSnapshot& ledger = result.ranks.at(size_t(st.rank)).ledger;
      const double state = double(ledger.model_state_peak), act = double(ledger.peak[size_t(Category::Activation)]);
      QVERIFY2(near(double(st.model_state_bytes), state, 1e-3 * state),
               qPrintable(tag + QStringLiteral(": capacity plan stage %1 model states %2, ledger %3")
                                    .arg(st.stage).arg(st.model_state_bytes).arg(state)));
      QVERIFY2(double(st.activation_bytes) >= act * (1 - 1e-3) &&
                   double(st.activation_bytes) <= act * (1 + 1e-3) + expectedStageBoundaryBytes(c),
               qPrintable(tag + QStringLiteral(": capacity plan stage %1 activations %2, ledger %3")
                                    .arg(st.stage).arg(st.activation_bytes).arg(act)));
    }
    return;
  }
  CalcRequest calc;
  calc.params = result.params;
  calc.ranks = c.ranks;
  calc.tp = c.tp;
  if (isHybrid(c.strategy)) calc.shard_group = c.shardGroupSize();
  const CalcAnswer answer = answerCalc(calc);
  const Strategy stage = c.strategy == Strategy::Fsdp ? Strategy::Zero3 : c.strategy;
  bool found = false;
  for (const StageCapacity& st : answer.report.stages)
    if (st.stage == stage) {
      found = true;
      QVERIFY2(near(st.bytes_per_param, bpp * c.tp, 1e-9),
               qPrintable(tag + QStringLiteral(": capacity page %1 B/param, summary %2").arg(st.bytes_per_param).arg(bpp * c.tp)));
    }
  QVERIFY2(found, qPrintable(tag + ": capacity page has no row for the strategy"));
}

// The run on screen: its exported memory figure's legend states the summary's formula.
void checkFigure(MainWindow& w, const QString& where) {
  const int row = w.history()->runCount() - 1;
  const RunRecord& record = w.history()->run(row);
  if (!record.ok || !record.result) return;
  const json s = summaryOf(*record.result);
  const double bpp = s["per_rank"][0]["expected_model_state_bytes_per_param"].get<double>();
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("memory.svg"));
  QString error;
  QVERIFY2(w.exportViewFigure(QStringLiteral("memory"), path, 1920, 1080, &error, FigureOptions{}), qPrintable(error));
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QString svg = QString::fromUtf8(f.readAll());
  const QString legend = QStringLiteral("%1 = %2 B/param")
                             .arg(QString::fromStdString(modelStateFormulaText(record.result->config)))
                             .arg(QString::number(bpp, 'g', 4));
  QVERIFY2(svg.contains(legend.toHtmlEscaped()), qPrintable(where + ": memory figure legend lacks '" + legend + "'"));
  // The communication figure's legend names the traffic formula in the texts' notation.
  const ExpectedTraffic traffic = expectedTraffic(record.result->config);
  if (traffic.dataParallelTotal() > 0) {
    const QString comm_path = dir.filePath(QStringLiteral("comm.svg"));
    QVERIFY2(w.exportViewFigure(QStringLiteral("comm"), comm_path, 1920, 1080, &error, FigureOptions{}), qPrintable(error));
    QFile c(comm_path);
    QVERIFY(c.open(QIODevice::ReadOnly));
    const QString comm_svg = QString::fromUtf8(c.readAll());
    const QString notation = QString::fromStdString(traffic.notation);
    QVERIFY2(comm_svg.contains(notation.toHtmlEscaped()), qPrintable(where + ": comm figure legend lacks '" + notation + "'"));
  }
}

}  // namespace

class TestConsistency : public QObject {
  Q_OBJECT

 private slots:
  void everyPreset_data() {
    QTest::addColumn<QString>("preset");
    for (const Preset& p : builtinPresets()) QTest::newRow(qPrintable(p.name)) << p.name;
  }

  void everyPreset() {
    QFETCH(QString, preset);
    MainWindow w;
    w.resize(1280, 720);
    const int before = w.history()->runCount();
    const QByteArray name = preset.toLatin1();
    runPreset(w, name.constData());
    if (QTest::currentTestFailed()) return;
    QVERIFY(w.history()->runCount() > before);
    for (int row = before; row < w.history()->runCount(); ++row) {
      checkRun(w, row, preset);
      if (QTest::currentTestFailed()) return;
    }
    // A lesson of several runs ends compared; checkFigure is about the last run alone.
    if (w.inspection().comparing()) QVERIFY(w.showHistoryRun(w.history()->runCount() - 1));
    checkFigure(w, preset);
  }

  // Runs whose numbers depend on more than strategy and ranks.
  void configurations_data() {
    QTest::addColumn<QStringList>("args");
    QTest::newRow("zero3 --tp 2") << QStringList{"--strategy", "zero3", "--ranks", "4", "--tp", "2", "--model", "gpt",
                                                 "--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "16",
                                                 "--batch", "8", "--steps", "2"};
    QTest::newRow("ddp --tp 2") << QStringList{"--strategy", "ddp", "--ranks", "4", "--tp", "2", "--layers", "2",
                                               "--hidden", "64", "--batch", "8", "--steps", "2"};
    QTest::newRow("zero3 --reduce-dtype fp32") << QStringList{"--strategy", "zero3", "--ranks", "4", "--reduce-dtype",
                                                              "fp32", "--layers", "3", "--hidden", "64", "--batch", "8",
                                                              "--steps", "2"};
    QTest::newRow("hsdp 2x2") << QStringList{"--strategy", "hsdp", "--ranks", "4", "--shard-group", "2", "--layers", "3",
                                             "--hidden", "64", "--batch", "8", "--steps", "2"};
    QTest::newRow("zero3 meta 512") << QStringList{"--backend", "meta", "--clock", "modeled", "--strategy", "zero3",
                                                   "--ranks", "512", "--batch", "512", "--layers", "4", "--hidden",
                                                   "256", "--steps", "1"};
  }

  void configurations() {
    QFETCH(QStringList, args);
    std::vector<std::string> flags;
    for (const QString& a : args) flags.push_back(a.toStdString());
    MainWindow w;
    w.resize(1280, 720);
    runFromArgs(w, flags);
    if (QTest::currentTestFailed()) return;
    const QString where = args.join(QLatin1Char(' '));
    checkRun(w, w.history()->runCount() - 1, where);
    if (QTest::currentTestFailed()) return;
    checkFigure(w, where);
  }
};

QTEST_MAIN(TestConsistency)
#include "test_consistency.moc"
