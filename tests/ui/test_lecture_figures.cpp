// The activation and tensor-parallel lessons in the window (issue 51, items 5
// and 6). activation-checkpointing: its compared memory figure is activations
// per layer beside Korthikanti et al.'s formula in MiB per layer (no "no
// formula", no B/param, run names that do not overlap), and the memory view,
// the compared summary and the Runs table show HFU beside MFU. Tensor
// parallelism: the comm table's TP rows carry Megatron-LM's per-step formula
// (the CLI's), the comm figure outlines it, and the timeline draws the TP
// collectives on the compute lane instead of folding them into the forward.
#include <QtTest>
#include <qcustomplot.h>
#include <sstream>

#include "analysis/formulas.h"
#include "analysis/run_summary.h"
#include "comm_stats_model.h"
#include "compare_memory_view.h"
#include "config/run_config.h"
#include "experiment_panel.h"
#include "figure_export.h"
#include "inspect/event_store.h"
#include "inspect/timeline_layout.h"
#include "main_window.h"
#include "memory_view.h"
#include "preset_run.h"
#include "run_history_model.h"
#include "view_pages.h"

using namespace shardscope;

namespace {

template <class P>
P* page(MainWindow& w, const char* name) {
  return static_cast<P*>(w.pages().find(QString::fromLatin1(name)));
}

QString mibText(double bytes) { return QString::number(bytes / (1024.0 * 1024.0), 'f', 1); }

}  // namespace

class TestLectureFigures : public QObject {
  Q_OBJECT

 private slots:
  void activationLessonShowsLayersAndHfu() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    runPreset(w, "activation-checkpointing");
    if (QTest::currentTestFailed()) return;
    const int runs = w.history()->runCount();
    QVERIFY(runs >= 4);
    const int first = runs - 4;
    if (!w.inspection().comparing()) {
      QString error;
      QVERIFY2(w.compareRuns({first, first + 1, first + 2, first + 3}, &error), qPrintable(error));
    }
    CompareMemoryView* view = page<MemoryPage>(w, "memory")->compareView();
    QVERIFY2(view->perLayerActivations(), "activations drawn: the figure is per layer");
    QCOMPARE(view->measuredBytes().size(), size_t(4));
    for (int i = 0; i < 4; ++i) {
      const RunResult& r = *w.history()->run(first + i).result;
      const std::optional<ActivationFigures> a = activationFigures(r);
      QVERIFY(a);
      QCOMPARE(view->measuredBytes()[size_t(i)], r.ranks.front().activation_bytes_per_layer);
      QCOMPARE(view->predictedBytes()[size_t(i)], expectedActivationBytesPerLayer(r.config));
      QVERIFY2(view->formulaLabels()[i].contains(QStringLiteral("Korthikanti")) &&
                   view->formulaLabels()[i].contains(mibText(a->formula_per_layer) + QStringLiteral(" MiB/layer")),
               qPrintable(view->formulaLabels()[i]));
      QVERIFY2(view->summaryText().contains(QStringLiteral("MFU %1 %").arg(100.0 * a->mfu, 0, 'f', 1)),
               qPrintable(view->summaryText()));
      // The peak it gives is the one the lesson text and the Runs table cite.
      QVERIFY2(view->summaryText().contains(QString::fromLatin1(kTotalPeakName)) &&
                   view->summaryText().contains(QStringLiteral("%1 GiB").arg(double(largestTotalPeak(r)) / (1024.0 * 1024.0 * 1024.0), 0, 'f', 1)),
               qPrintable(view->summaryText()));
      if (a->hfu > a->mfu)
        QVERIFY2(view->summaryText().contains(QStringLiteral("HFU %1 %").arg(100.0 * a->hfu, 0, 'f', 1)),
                 qPrintable(view->summaryText()));
      // The CLI prints the same line, and HFU where the recompute counts.
      std::ostringstream text;
      printSummaryText(r, text);
      QVERIFY(QString::fromStdString(text.str()).contains(QString::fromStdString(activationFiguresText(*a))));
      if (r.hardware_flops_per_step_per_rank > r.flops_per_step_per_rank) {
        QVERIFY(QString::fromStdString(text.str()).contains(QStringLiteral("HFU %1%").arg(100.0 * r.hfu(), 0, 'f', 1)));
        const QString mfu = w.history()->data(w.history()->index(first + i, RunHistoryModel::Mfu)).toString();
        QVERIFY2(mfu.contains(QStringLiteral("HFU %1 %").arg(100.0 * r.hfu(), 0, 'f', 1)), qPrintable(mfu));
      }
    }
    // The full-checkpointing run keeps a fraction of naive attention's per layer.
    QVERIFY(view->measuredBytes()[3] * 10 < view->measuredBytes()[0]);
    QVERIFY2(view->figureTitle().startsWith(QStringLiteral("Activations per layer")), qPrintable(view->figureTitle()));
    QVERIFY(view->plot()->yAxis->label().contains(QStringLiteral("per layer")));
    // No label promises what is not there, and none counts activations in B/param.
    for (int i = 0; i < view->plot()->itemCount(); ++i)
      if (auto* t = qobject_cast<QCPItemText*>(view->plot()->item(i))) {
        QVERIFY2(!t->text().contains(QStringLiteral("no formula")), qPrintable(t->text()));
        QVERIFY2(!t->text().contains(QStringLiteral("B/param")), qPrintable(t->text()));
      }
    // The run names under the bars fit their columns: wrapped, and narrower
    // than the distance between two bars at 1280×720.
    view->resize(560, 400);
    view->plot()->replot(QCustomPlot::rpImmediateRefresh);
    auto ticker = view->plot()->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    const QFontMetrics fm(view->plot()->xAxis->tickLabelFont());
    const double column = view->plot()->xAxis->coordToPixel(1) - view->plot()->xAxis->coordToPixel(0);
    QVERIFY(column > 0);
    for (const QString& label : ticker->ticks()) {
      int widest = 0;
      for (const QString& line : label.split(QLatin1Char('\n'))) widest = std::max(widest, fm.horizontalAdvance(line));
      QVERIFY2(widest < column, qPrintable(QStringLiteral("'%1' is %2 px, the columns %3 px apart").arg(label).arg(widest).arg(column)));
    }

    // One run on screen: the memory view's summary carries the same figures.
    QVERIFY(w.showHistoryRun(first + 3));
    const RunResult& full = *w.history()->run(first + 3).result;
    const QString summary = page<MemoryPage>(w, "memory")->view()->summaryText();
    QVERIFY2(summary.contains(QStringLiteral("Korthikanti et al.")) &&
                 summary.contains(QStringLiteral("HFU %1 %").arg(100.0 * full.hfu(), 0, 'f', 1)),
             qPrintable(summary));
  }

  void tensorParallelCollectivesHaveTheirFormulaAndShow() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    runFromArgs(w, {"--backend", "meta", "--model", "llama2-7b", "--strategy", "zero3", "--ranks", "8", "--tp", "4",
                "--batch", "8", "--steps", "1", "--profile", "h100-sxm"});
    if (QTest::currentTestFailed()) return;
    const RunRecord& record = w.history()->run(w.history()->runCount() - 1);
    QVERIFY(record.result && record.trace);
    const RunResult& r = *record.result;
    const ExpectedTraffic traffic = expectedTraffic(r.config);
    QVERIFY(traffic.tensor_parallel.all_reduce > 0);
    // The meta backend sends exactly the formula's bytes.
    QVERIFY2(std::abs(double(r.ranks.front().tp_comm_bytes.all_reduce - traffic.tensor_parallel.all_reduce)) <= 64,
             qPrintable(QStringLiteral("TP all-reduce %1, formula %2").arg(r.ranks.front().tp_comm_bytes.all_reduce)
                            .arg(traffic.tensor_parallel.all_reduce)));

    // The comm table: a formula and a ratio on the TP rows, not "–".
    EventStore store;
    store.setFromTrace(*record.trace);
    CommStatsModel comm;
    comm.setRun(store, &r);
    QCOMPARE(comm.expectedTensorParallelTotal(), traffic.tensorParallelTotal());
    int tp_rows = 0;
    for (int i = 0; i < comm.rowCount(); ++i) {
      const CommStatsModel::Row& row = comm.statRows()[size_t(i)];
      if (!row.tensor_parallel || row.kind != EventKind::AllReduce) continue;
      ++tp_rows;
      QCOMPARE(row.expected, traffic.tensor_parallel.all_reduce);
      QVERIFY(comm.data(comm.index(i, CommStatsModel::Expected)).toString() != QStringLiteral("–"));
      const double ratio = comm.data(comm.index(i, CommStatsModel::Ratio), Qt::UserRole).toDouble();
      QVERIFY2(std::abs(ratio - 1.0) < 1e-3, qPrintable(QString::number(ratio)));
      QVERIFY(comm.data(comm.index(i, CommStatsModel::Expected), Qt::ToolTipRole).toString().contains(QStringLiteral("Megatron-LM")));
    }
    QVERIFY(tp_rows > 0);
    // The comm figure outlines the TP formula too.
    QTemporaryDir dir;
    const QString svg_path = dir.filePath(QStringLiteral("comm.svg"));
    QString error;
    QVERIFY2(w.exportViewFigure(QStringLiteral("comm"), svg_path, 1280, 720, &error, FigureOptions{}), qPrintable(error));
    QFile svg(svg_path);
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(QString::fromUtf8(svg.readAll()).contains(QStringLiteral("predicted (Megatron-LM), TP group")));

    // The timeline, zoomed out to the whole step: every TP collective on rank
    // 0's compute lane is in a box of collectives, none hidden in a fold of compute.
    int collectives = 0;
    for (const Event& e : store.events(0))
      if (e.lane == Lane::Compute && isAnyCollective(e.kind)) ++collectives;
    QVERIFY(collectives > 0);
    TimelineLayout layout;
    layout.sync(store);
    const int row = layout.rowOf(0, Lane::Compute);
    QVERIFY(row >= 0);
    layout.layout(double(layout.drawnBegin()), double(layout.drawnEnd()), 600, row, row);
    int drawn = 0;
    // (A box led by a collective holds collectives only: the loss's all-gather
    // may share a fold with the all-reduces, never with compute.)
    for (const TimelineDrawItem& item : layout.items())
      if (isAnyCollective(item.kind)) drawn += item.folded;
    QCOMPARE(drawn, collectives);
    // The compute around them still folds: the row stays a few hundred boxes.
    QVERIFY(layout.items().size() <= size_t(600 / TimelineLayout::kMinBoxPx + 600 / TimelineLayout::kMinOverlayPx + 4));
  }

  // Sequence parallelism and full checkpointing: the same collectives as
  // reduce-scatters and gathers, the recompute's repeated; exact per kind.
  void sequenceParallelFormulaPerKind() {
    MainWindow w;
    w.setPersistSettings(false);
    runFromArgs(w, {"--backend", "meta", "--model", "llama2-7b", "--strategy", "zero3", "--ranks", "8", "--tp", "4", "--sp", "on",
                "--activation-checkpointing", "full", "--batch", "8", "--steps", "1", "--profile", "h100-sxm"});
    if (QTest::currentTestFailed()) return;
    const RunRecord& record = w.history()->run(w.history()->runCount() - 1);
    const RunResult& r = *record.result;
    const ExpectedTraffic traffic = expectedTraffic(r.config);
    const CommBytes& sent = r.ranks.front().tp_comm_bytes;
    QVERIFY(traffic.tensor_parallel.reduce_scatter > 0 && traffic.tensor_parallel.all_gather > 0);
    QCOMPARE(sent.reduce_scatter, traffic.tensor_parallel.reduce_scatter);
    QCOMPARE(sent.all_gather, traffic.tensor_parallel.all_gather);
    QCOMPARE(sent.all_reduce, traffic.tensor_parallel.all_reduce);
    EventStore store;
    store.setFromTrace(*record.trace);
    CommStatsModel comm;
    comm.setRun(store, &r);
    for (const CommStatsModel::Row& row : comm.statRows())
      if (row.tensor_parallel && row.rank == 0) QVERIFY2(row.sent == row.expected, qPrintable(QString::number(int(row.kind))));
  }
};

QTEST_MAIN(TestLectureFigures)
#include "test_lecture_figures.moc"
