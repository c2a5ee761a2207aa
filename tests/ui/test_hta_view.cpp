// The window's HTA tab: opening the hand-worked job (tests/data/kineto/hta_analyses)
// fills the idle-time, queue-length, kernel and launch tables of each rank with
// the numbers core computed (worked out in tests/core/test_kineto_hta_analyses.cpp);
// a ShardScope trace opened afterwards empties them and says what they are for.
// The page is registered ("hta"): its "?", its reason, its idle-time figure.
#include <QComboBox>
#include <QDockWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QLabel>
#include <QTableWidget>
#include <QtTest>

#include <fstream>

#include "hta_view.h"
#include "inspection.h"
#include "main_window.h"
#include "page.h"
#include "qcustomplot.h"

using namespace shardscope;

namespace {

const QString kJob = QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/hta_analyses");

QString cell(const QTableWidget* t, int row, int column) {
  const QTableWidgetItem* item = t->item(row, column);
  return item ? item->text() : QString();
}

}  // namespace

class TestHtaView : public QObject {
  Q_OBJECT

 private slots:
  void tablesShowCoresNumbers() {
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY2(w.openTrace(kJob, &error), qPrintable(error));
    QVERIFY(w.inspection().run().hta);
    auto* view = w.findChild<HtaView*>();
    QVERIFY(view);
    auto* rank = view->findChild<QComboBox*>(QStringLiteral("htaRank"));
    QCOMPARE(rank->count(), 2);
    QCOMPARE(rank->currentText(), QStringLiteral("rank 0"));

    // Idle time, stream 7: host wait 20 of 95 µs, kernel wait 35, other 40, one gap without launch.
    const QTableWidget* idle = view->idleTable();
    QCOMPARE(idle->rowCount(), 3);
    QCOMPARE(cell(idle, 0, 0), QStringLiteral("7"));
    QCOMPARE(cell(idle, 0, 2), QStringLiteral("20.000"));
    QCOMPARE(cell(idle, 0, 3), QStringLiteral("21.05 %"));
    QCOMPARE(cell(idle, 0, 4), QStringLiteral("35.000"));
    QCOMPARE(cell(idle, 0, 6), QStringLiteral("40.000"));
    QCOMPARE(cell(idle, 0, 8), QStringLiteral("1"));
    QCOMPARE(cell(idle, 1, 3), QStringLiteral("n/a"));  // stream 9: no idle time

    // Queue length, stream 7: 10 samples, mean 0.9, std 0.7379, quartiles 0.25 / 1 / 1.
    const QTableWidget* queue = view->queueTable();
    QCOMPARE(queue->rowCount(), 2);
    QCOMPARE(cell(queue, 0, 1), QStringLiteral("10"));
    QCOMPARE(cell(queue, 0, 2), QStringLiteral("0.9000"));
    QCOMPARE(cell(queue, 0, 3), QStringLiteral("0.7379"));
    QCOMPARE(cell(queue, 0, 5), QStringLiteral("0.2500"));

    // Kernels: gemm_a first (3 events, sum 90, mean 30, std 20), then the all-reduce and the memcpy.
    const QTableWidget* kernels = view->kernelTable();
    QCOMPARE(kernels->rowCount(), 5);
    QCOMPARE(cell(kernels, 0, 0), QStringLiteral("COMPUTATION"));
    QCOMPARE(cell(kernels, 0, 1), QStringLiteral("3"));
    QCOMPARE(cell(kernels, 0, 2), QStringLiteral("90.000"));
    QCOMPARE(cell(kernels, 0, 3), QStringLiteral("30.000"));
    QCOMPARE(cell(kernels, 0, 6), QStringLiteral("20.000"));
    QCOMPARE(cell(kernels, 0, 7), QStringLiteral("gemm_a"));
    QCOMPARE(cell(kernels, 3, 0), QStringLiteral("COMMUNICATION"));

    // Launch delay: 7 pairs (the two cudaLaunchKernelExC included); HTA's launch delay
    // max(0, gpu ts - (cpu ts + cpu dur)) mean 11.429, max 40; start delay min -6.
    const QTableWidget* launch = view->launchTable();
    QCOMPARE(launch->rowCount(), 4);
    QCOMPARE(cell(launch, 2, 1), QStringLiteral("7"));
    QCOMPARE(cell(launch, 2, 2), QStringLiteral("11.429"));
    QCOMPARE(cell(launch, 2, 8), QStringLiteral("40.000"));
    QCOMPARE(cell(launch, 3, 4), QStringLiteral("-6.000"));
    QVERIFY2(view->launchNote().contains(QStringLiteral("1 launches without a correlation, 1 without a GPU event")),
             qPrintable(view->launchNote()));

    // Rank 1: twelve names, the last three as "others".
    rank->setCurrentIndex(1);
    QCOMPARE(kernels->rowCount(), 10);
    QCOMPARE(cell(kernels, 9, 7), QStringLiteral("others (3 names)"));
    QCOMPARE(cell(kernels, 9, 2), QStringLiteral("20.000"));
    QCOMPARE(view->launchTable()->rowCount(), 0);  // nothing launched

    // A ShardScope trace: no HTA tables.
    QVERIFY2(w.openTrace(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/golden/ddp.trace.json"), &error),
             qPrintable(error));
    QVERIFY(!w.inspection().run().hta);
    QCOMPARE(idle->rowCount(), 0);
    QVERIFY(rank->isHidden());
  }

  // A registered page: its "?", a reason when there is nothing to analyse, and
  // a figure whose stacked bars are the idle table's numbers.
  void isAPageWithAFigure() {
    MainWindow w;
    w.setPersistSettings(false);
    Page* page = w.pages().find(QStringLiteral("hta"));
    QVERIFY(page);
    QVERIFY(w.findChild<QToolButton*>(QStringLiteral("helpButton_hta")));
    QString error;
    QVERIFY2(w.openTrace(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/golden/ddp.trace.json"), &error),
             qPrintable(error));
    QVERIFY2(page->unavailable().startsWith(QStringLiteral("Holistic Trace Analysis' tables read an imported")),
             qPrintable(page->unavailable()));
    QVERIFY2(w.openTrace(kJob, &error), qPrintable(error));
    QCOMPARE(page->unavailable(), QString());
    auto* view = w.findChild<HtaView*>();
    // Rank 0's three streams and rank 1's one; stream 7 of rank 0 idles 20 + 35 + 40 µs.
    QCustomPlot* plot = view->idlePlot();
    QCOMPARE(plot->plottableCount(), 3);
    QCOMPARE(plot->yAxis->label(), QStringLiteral("idle µs"));
    const double expected[] = {20.0, 35.0, 40.0};
    for (int i = 0; i < 3; ++i) {
      auto* bars = qobject_cast<QCPBars*>(plot->plottable(i));
      QVERIFY(bars);
      QCOMPARE(bars->data()->size(), 4);
      QCOMPARE(bars->data()->at(0)->value, expected[i]);
    }
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("hta.png"));
    QVERIFY2(w.exportViewFigure(QStringLiteral("hta"), png, 1200, 600, &error), qPrintable(error));
    QVERIFY(QFileInfo(png).size() > 1000);
    QCOMPARE(plot->xAxis->tickLabelRotation(), 0.0);  // four bars: labels flat, two lines each
  }

  // 32 streams' labels overprinted side by side: beyond 12 bars they stand upright, one line each.
  void manyStreamsStandTheirLabelsUpright() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("streams.json"));
    {
      std::ofstream f(path.toStdString());
      f << "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 1}, \"traceEvents\": [";
      for (int s = 0; s < 32; ++s)
        for (int k = 0; k < 2; ++k)
          f << (s || k ? ",\n" : "\n") << "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, "
            << "\"tid\": " << 7 + s << ", \"ts\": " << 10 + 40 * k << ", \"dur\": 10, \"args\": {\"stream\": " << 7 + s
            << "}}";
      f << "]}\n";
    }
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY2(w.openTrace(path, &error), qPrintable(error));
    QCustomPlot* plot = w.findChild<HtaView*>()->idlePlot();
    auto* bars = qobject_cast<QCPBars*>(plot->plottable(0));
    QVERIFY(bars);
    QCOMPARE(bars->data()->size(), 32);
    QCOMPARE(plot->xAxis->tickLabelRotation(), -90.0);
  }
};

QTEST_MAIN(TestHtaView)
#include "test_hta_view.moc"
