// PyTorch memory snapshots in the window: the fixtures of
// tests/data/postmortem/make_fixtures.py opened as File ▸ Open does (one and
// two devices, expandable segments, an OOM, no time_us, several files as one
// per rank) fill the "snapshot" page with the core model's numbers: peaks and
// the ledger by category in the headings and bars, the OOM marker with its
// device_free, the largest allocation at the peak and its stack, the ledger
// after a clicked entry; a bad file gives one clear error; the figure exports.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include <QListWidget>
#include <QTableWidget>

#include "main_window.h"
#include "page.h"
#include "postmortem/memory_snapshot.h"
#include "postmortem/snapshot_ledger.h"
#include "snapshot_view.h"

using namespace shardscope;
using namespace shardscope::postmortem;

namespace {

QString fixture(const char* name) { return QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/postmortem/") + QLatin1String(name); }

MemorySnapshot model(const char* name) { return readMemorySnapshotFile(fixture(name).toStdString()); }

// The bars of a column draw exactly the model's ledger.
void checkBars(const SnapshotView* view, int column, const std::array<int64_t, kSnapshotCategoryCount>& expected) {
  for (int k = 0; k < kSnapshotCategoryCount; ++k)
    QCOMPARE(qRound64(view->barBytes(column, static_cast<SnapshotCategory>(k))), expected[static_cast<size_t>(k)]);
}

struct Opened {
  std::unique_ptr<MainWindow> window;
  SnapshotView* view = nullptr;
};

Opened open(const QStringList& paths) {
  Opened o;
  o.window = std::make_unique<MainWindow>();
  o.window->setPersistSettings(false);
  o.window->resize(1600, 1000);
  QString error;
  if (!o.window->openFiles(paths, &error)) qWarning("%s", qPrintable(error));
  o.view = o.window->findChild<SnapshotView*>();
  return o;
}

}  // namespace

class TestSnapshotView : public QObject {
  Q_OBJECT

 private slots:
  void oneDeviceShowsTheModel() {
    Opened o = open({fixture("snapshot_one_device.pickle")});
    QVERIFY(o.view);
    Page* page = o.window->pages().find(QStringLiteral("snapshot"));
    QVERIFY(page);
    QCOMPARE(page->unavailable(), QString());
    QCOMPARE(o.view->columnCount(), 1);
    const SnapshotDevice d = model("snapshot_one_device.pickle").devices.at(0);
    QCOMPARE(o.view->device(0).peak_allocated, d.peak_allocated);
    // At the peak: optimizer 1 000 000, activations 500 000, gathered 300 000 bytes (make_fixtures.py).
    checkBars(o.view, 0, d.peak_by_category);
    QCOMPARE(qRound64(o.view->barBytes(0, SnapshotCategory::Optimizer)), int64_t(1000000));
    const QString heading = o.view->headingText(0);
    QVERIFY2(heading.contains(QStringLiteral("peak 1.7 MiB allocated, 3.0 MiB reserved")), qPrintable(heading));
    QVERIFY2(heading.contains(QStringLiteral("ledger at the allocated peak (entry 3, 0.030 ms)")), qPrintable(heading));
    QVERIFY2(heading.contains(QStringLiteral("unattributed 0.0 %")), qPrintable(heading));
    // The largest live allocation at the peak: Adam's state, 1 000 000 bytes, and its stack.
    QTableWidget* table = o.view->largestTable();
    QCOMPARE(table->rowCount(), 3);
    QCOMPARE(table->item(0, 0)->data(Qt::UserRole).toLongLong(), qint64(1000000));
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("optimizer state"));
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("torch/optim/adam.py:94 _init_group"));
    QCOMPARE(o.view->framesList()->count(), 2);
    QCOMPARE(o.view->framesList()->item(1)->text(), QStringLiteral("train.py:120  step"));
    table->selectRow(1);
    QCOMPARE(o.view->framesList()->item(0)->text(), QStringLiteral("model.py:40  forward"));
    QVERIFY(o.view->oomMarkerText(0).isEmpty());
    QVERIFY(o.window->windowTitle().contains(QStringLiteral("snapshot_one_device.pickle")));
  }

  void clickShowsTheLedgerAtThatEntry() {
    Opened o = open({fixture("snapshot_one_device.pickle")});
    o.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(o.window.get()));
    o.view->plot()->replot();
    const SnapshotDevice d = model("snapshot_one_device.pickle").devices.at(0);
    // A click just after entry 5 (the activation freed): optimizer and gathered remain.
    QCPAxisRect* rect = o.view->chartRect(0);
    const double x = (o.view->chartX(0, 5) + o.view->chartX(0, 6)) / 2;
    const QPoint at(qRound(rect->axis(QCPAxis::atBottom)->coordToPixel(x)), rect->center().y());
    QSignalSpy picked(o.view, &SnapshotView::entryPicked);
    QTest::mouseClick(o.view->plot(), Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(picked.count(), 1);
    QCOMPARE(picked.front().at(1).toLongLong(), qint64(5));
    checkBars(o.view, 0, snapshotLedgerAt(d, 5).by_category);
    QCOMPARE(qRound64(o.view->barBytes(0, SnapshotCategory::Activation)), int64_t(0));
    QCOMPARE(qRound64(o.view->barBytes(0, SnapshotCategory::Gathered)), int64_t(300000));
    QVERIFY2(o.view->headingText(0).contains(QStringLiteral("ledger after entry 5, 0.050 ms")), qPrintable(o.view->headingText(0)));
  }

  void devicesExpandableNoTimeAndOom() {
    Opened two = open({fixture("snapshot_two_devices.pickle")});
    QCOMPARE(two.view->columnCount(), 2);
    QCOMPARE(two.view->columnTitle(0), QStringLiteral("cuda:0"));
    QCOMPARE(two.view->columnTitle(1), QStringLiteral("cuda:1"));
    const MemorySnapshot m = model("snapshot_two_devices.pickle");
    checkBars(two.view, 1, m.devices[1].peak_by_category);
    // Device 1's 2 MiB from before the trace has no stack: unattributed, 2 of the 3 MiB at the peak.
    QVERIFY2(two.view->headingText(1).contains(QStringLiteral("unattributed 66.7 %")), qPrintable(two.view->headingText(1)));

    Opened exp = open({fixture("snapshot_expandable.pickle")});
    QCOMPARE(exp.view->columnCount(), 1);
    QVERIFY2(exp.view->headingText(0).contains(QStringLiteral("peak 6.0 MiB allocated, 6.0 MiB reserved")),
             qPrintable(exp.view->headingText(0)));
    checkBars(exp.view, 0, model("snapshot_expandable.pickle").devices[0].peak_by_category);

    Opened untimed = open({fixture("snapshot_no_time.json")});
    QCOMPARE(untimed.view->columnCount(), 1);
    QCOMPARE(untimed.view->chartRect(0)->axis(QCPAxis::atBottom)->label(), QStringLiteral("trace entry (no time_us)"));
    QVERIFY2(untimed.view->headingText(0).contains(QStringLiteral("(entry 3)")), qPrintable(untimed.view->headingText(0)));

    Opened oom = open({fixture("snapshot_oom.pickle")});
    QCOMPARE(oom.view->columnCount(), 1);
    QCOMPARE(oom.view->oomMarkerText(0), QStringLiteral("OOM: asked 16.0 MiB\ndevice_free 1.0 MiB"));
  }

  void severalFilesAreRanks() {
    Opened o = open({fixture("snapshot_one_device.pickle"), fixture("snapshot_two_devices.pickle")});
    QCOMPARE(o.view->columnCount(), 3);
    QCOMPARE(o.view->columnTitle(0), QStringLiteral("rank 0 · cuda:0 · snapshot_one_device.pickle"));
    QCOMPARE(o.view->columnTitle(2), QStringLiteral("rank 1 · cuda:1 · snapshot_two_devices.pickle"));
    checkBars(o.view, 2, model("snapshot_two_devices.pickle").devices[1].peak_by_category);
    // The table follows the column picked: rank 1's cuda:1 lists the 2 MiB from before the trace first.
    o.view->setTableColumn(2);
    QCOMPARE(o.view->largestTable()->item(0, 0)->data(Qt::UserRole).toLongLong(), qint64(2 << 20));
    QCOMPARE(o.view->largestTable()->item(0, 3)->text(), QStringLiteral("before the trace"));
  }

  void badFilesGiveOneError() {
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": "big"}]]})");
    f.close();
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY(!w.openTrace(bad, &error));
    QVERIFY2(error.contains(QStringLiteral("device_traces[0][0].size must be an integer >= 0")), qPrintable(error));
    QVERIFY2(error.startsWith(bad), qPrintable(error));
    QVERIFY(!w.pages().find(QStringLiteral("snapshot"))->unavailable().isEmpty());
    // Several files open together only as snapshots: the one that is not is named.
    const QString trace = QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/straggler_job");
    QVERIFY(!w.openFiles({fixture("snapshot_oom.pickle"), trace}, &error));
    QVERIFY2(error.startsWith(trace + QStringLiteral(" is not a PyTorch memory snapshot")), qPrintable(error));
    // The profiler's memory timeline opens on its own page (test_memory_timeline_view.cpp), not as a snapshot.
    const QString timeline = QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/memory_timeline/run.raw.json.gz");
    QVERIFY2(w.openTrace(timeline, &error), qPrintable(error));
    QVERIFY(!w.pages().find(QStringLiteral("snapshot"))->unavailable().isEmpty());
  }

  void figureAndThinning() {
    QTemporaryDir dir;
    const QString big = dir.filePath(QStringLiteral("big.pickle"));
    QProcess gen;
    gen.start(QStringLiteral("/usr/bin/python3"),
              {QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/postmortem/make_fixtures.py"), QStringLiteral("--big"),
               QStringLiteral("50000"), big});
    if (!gen.waitForFinished(60000) || gen.exitCode() != 0) QSKIP("python3 could not write the generated snapshot");
    Opened o = open({big});
    QCOMPARE(o.view->columnCount(), 1);
    QCOMPARE(o.view->device(0).entries(), size_t(50000));
    o.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(o.window.get()));
    // The chart holds the trace thinned to its width (at least 200 columns), not 50 000 points.
    const int columns = std::max(200, o.view->plot()->width());
    QVERIFY2(o.view->chartPoints(0) <= 2 * columns + 8,
             qPrintable(QStringLiteral("%1 points, %2 px").arg(o.view->chartPoints(0)).arg(columns)));
    QVERIFY(o.view->chartPoints(0) > 100);
    const QString png = dir.filePath(QStringLiteral("snapshot.png"));
    QString error;
    QVERIFY2(o.window->exportViewFigure(QStringLiteral("snapshot"), png, 1280, 720, &error), qPrintable(error));
    QImage image(png);
    QCOMPARE(image.size(), QSize(1280, 720));
  }
};

QTEST_MAIN(TestSnapshotView)
#include "test_snapshot_view.moc"
