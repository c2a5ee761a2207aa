// The window's trace diff (File > Compare PyTorch jobs…): a registered page
// ("diff") whose table is core's rows in core's order and whose bars are the
// kernels' change per step. Two jobs written here, worked by hand (µs):
//   CONTROL (rank 0): 2 steps of 100; each: aten::mm (20) -> gemm (30);
//     step 2 also aten::dropout (10) -> drop_k (6).
//   TEST (rank 2, not 0): 1 step; aten::mm (20) -> gemm (45); aten::gelu (5) -> gelu_k (4).
//   Per step (CONTROL / 2, TEST / 1): kernels gemm 30 -> 45 (+15, +50 %),
//   gelu_k 0 -> 4 (test only, +4), drop_k 3 -> 0 (control only, -3);
//   ops aten::mm 20 -> 20 (0), aten::gelu +5 (test only), aten::dropout 5 -> 0 (-5).
#include <QAbstractItemModelTester>
#include <QAction>
#include <QDir>
#include <QHeaderView>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include "../core/kineto_trace_writer.h"
#include "main_window.h"
#include "page.h"
#include "qcustomplot.h"
#include "trace_diff_model.h"
#include "trace_diff_page.h"

using namespace shardscope;

namespace {

constexpr int64_t kUs = KinetoTraceWriter::kUs;

struct Jobs {
  QString control, test;
};

Jobs writeJobs(const QTemporaryDir& dir) {
  QDir(dir.path()).mkpath(QStringLiteral("control"));
  QDir(dir.path()).mkpath(QStringLiteral("test"));
  KinetoTraceWriter c(0, 1), t(2, 3);
  for (int s = 0; s < 2; ++s) {
    const int64_t at = s * 100 * kUs;
    c.step(s + 1, at, 100 * kUs);
    c.op("aten::mm", at + 10 * kUs, 20 * kUs);
    c.launch("cudaLaunchKernel", at + 12 * kUs, 2 * kUs, s + 1);
    c.kernel("gemm", at + 20 * kUs, 30 * kUs, s + 1);
  }
  c.op("aten::dropout", 150 * kUs, 10 * kUs);
  c.launch("cudaLaunchKernel", 151 * kUs, 1 * kUs, 9);
  c.kernel("drop_k", 160 * kUs, 6 * kUs, 9);
  t.step(7, 0, 100 * kUs);
  t.op("aten::mm", 10 * kUs, 20 * kUs);
  t.launch("cudaLaunchKernel", 12 * kUs, 2 * kUs, 1);
  t.kernel("gemm", 20 * kUs, 45 * kUs, 1);
  t.op("aten::gelu", 70 * kUs, 5 * kUs);
  t.launch("cudaLaunchKernel", 71 * kUs, 1 * kUs, 2);
  t.kernel("gelu_k", 80 * kUs, 4 * kUs, 2);
  c.write(dir, "control/rank0.json");
  t.write(dir, "test/rank2.json");
  return {dir.filePath(QStringLiteral("control")), dir.filePath(QStringLiteral("test"))};
}

QString cell(const QAbstractItemModel* m, int row, int column) { return m->index(row, column).data().toString(); }

}  // namespace

class TestTraceDiffView : public QObject {
  Q_OBJECT

 private slots:
  void pageShowsCoresRows() {
    QTemporaryDir dir;
    const Jobs jobs = writeJobs(dir);
    MainWindow w;
    w.setPersistSettings(false);
    auto* page = static_cast<TraceDiffPage*>(w.pages().find(QStringLiteral("diff")));
    QVERIFY(page);
    QVERIFY(w.findChild<QToolButton*>(QStringLiteral("helpButton_diff")));
    QVERIFY(w.findChild<QAction*>(QStringLiteral("compareJobsAction")));
    // Nothing compared yet: the page says how to compare, and writes no figure.
    QVERIFY2(page->unavailable().startsWith(QStringLiteral("no jobs compared yet: File > Compare PyTorch jobs…")),
             qPrintable(page->unavailable()));
    QCOMPARE(page->model()->rowCount(), 0);

    QString error;
    QVERIFY2(page->openJobs(jobs.control, jobs.test, &error), qPrintable(error));
    QCOMPARE(page->unavailable(), QString());
    // Read on a worker thread, never the GUI thread (off_thread.h).
    QVERIFY(page->lastLoadThread() != std::thread::id());
    QVERIFY(page->lastLoadThread() != std::this_thread::get_id());
    QAbstractItemModelTester tester(page->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const QAbstractItemModel* m = page->table()->model();
    QCOMPARE(m->rowCount(), 6);  // 3 kernels, then 3 ops
    QCOMPARE(m->columnCount(), int(TraceDiffModel::ColumnCount));
    QCOMPARE(m->headerData(TraceDiffModel::DeltaUs, Qt::Horizontal).toString(), QStringLiteral("Δ µs/step"));
    // Kernels, biggest regression first.
    const QStringList gemm = {"kernel", "gemm", "", "15.000", "30.000", "45.000", "50.0", "1.000", "1.000", "0.000"};
    const QStringList gelu = {"kernel", "gelu_k", "test", "4.000", "0.000", "4.000", "n/a", "0.000", "1.000", "1.000"};
    const QStringList drop = {"kernel", "drop_k", "control", "-3.000", "3.000", "0.000", "-100.0", "0.500", "0.000", "-0.500"};
    const QStringList mm = {"op", "aten::mm", "", "0.000", "20.000", "20.000", "0.0", "1.000", "1.000", "0.000"};
    const QStringList gelu_op = {"op", "aten::gelu", "test", "5.000", "0.000", "5.000", "n/a", "0.000", "1.000", "1.000"};
    const QStringList drop_op = {"op", "aten::dropout", "control", "-5.000", "5.000", "0.000", "-100.0", "0.500", "0.000", "-0.500"};
    const QList<QStringList> rows = {gemm, gelu, drop, gelu_op, mm, drop_op};
    for (int r = 0; r < rows.size(); ++r)
      for (int c = 0; c < TraceDiffModel::ColumnCount; ++c)
        QCOMPARE(cell(m, r, c), rows[r][c]);
    // The header names the sides and the normalisation.
    QVERIFY2(page->header().contains(QStringLiteral("CONTROL ") + jobs.control + QStringLiteral(": 1 rank(s), 2 rank-steps")),
             qPrintable(page->header()));
    QVERIFY(page->header().contains(QStringLiteral("TEST ") + jobs.test + QStringLiteral(": 1 rank(s), 1 rank-steps")));
    QVERIFY(page->header().startsWith(QStringLiteral("Per profiled step of one rank")));

    // The bars: the three kernels' change, slower (+15, +4) and faster (-3), the biggest regression on top.
    QCustomPlot* plot = page->plot();
    QCOMPARE(plot->plottableCount(), 2);
    auto* slower = qobject_cast<QCPBars*>(plot->plottable(0));
    auto* faster = qobject_cast<QCPBars*>(plot->plottable(1));
    QVERIFY(slower && faster);
    QCOMPARE(slower->data()->size(), 3);
    QCOMPARE(slower->data()->at(2)->key, 3.0);  // gemm at the top tick
    QCOMPARE(slower->data()->at(2)->value, 15.0);
    QCOMPARE(slower->data()->at(1)->value, 4.0);
    QCOMPARE(faster->data()->at(0)->value, -3.0);  // drop_k at the bottom
    QTemporaryDir out;
    const QString png = out.filePath(QStringLiteral("diff.png"));
    QVERIFY2(page->figure(png, 800, 500, QStringLiteral("test"), &error), qPrintable(error));
    QVERIFY(QFileInfo(png).size() > 0);
  }

  void aBadSideIsNamed() {
    QTemporaryDir dir;
    const Jobs jobs = writeJobs(dir);
    TraceDiffPage page(nullptr);
    QString error;
    const QString missing = dir.filePath(QStringLiteral("nowhere"));
    QVERIFY(!page.openJobs(jobs.control, missing, &error));
    QCOMPARE(error, QStringLiteral("Compare PyTorch jobs: TEST: PyTorch trace ") + missing +
                        QStringLiteral(": cannot open: no such file"));
    QVERIFY(!page.unavailable().isEmpty());  // nothing shown
    delete page.widget();
  }
};

QTEST_MAIN(TestTraceDiffView)
#include "test_trace_diff_view.moc"
