// The PyTorch profiler's memory timeline (export_memory_timeline) in the
// window: each fixture form of tests/data/kineto/memory_timeline
// (make_memory_timeline.py) opened as File ▸ Open does fills the
// "memory-timeline" page with one stacked graph per category, named as the
// profiler names them, whose top reaches the peak core's reader reports; the
// page takes the timeline's place; a bad file gives the reader's one error.
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "kineto/memory_timeline.h"
#include "main_window.h"
#include "memory_timeline_view.h"
#include "page.h"
#include "timeline_view.h"

using namespace shardscope;

namespace {

QString fixture(const QString& name) {
  return QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/memory_timeline/") + name;
}

}  // namespace

class TestMemoryTimelineView : public QObject {
  Q_OBJECT

 private slots:
  void drawsEveryCategoryStacked_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("raw.json.gz") << "run.raw.json.gz";
    QTest::newRow("json.gz") << "run.json.gz";
    QTest::newRow("json") << "run.json";
  }
  void drawsEveryCategoryStacked() {
    QFETCH(QString, file);
    const kineto::MemoryTimeline core = kineto::readMemoryTimeline(fixture(file).toStdString());
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1400, 900);
    QString error;
    QVERIFY2(w.openTrace(fixture(file), &error), qPrintable(error));
    Page* page = w.pages().find(QStringLiteral("memory-timeline"));
    QVERIFY(page);
    QCOMPARE(page->unavailable(), QString());
    auto* view = w.findChild<MemoryTimelineView*>();
    QVERIFY(view && view->hasTimeline());
    QCustomPlot* plot = view->plot();
    QCOMPARE(plot->graphCount(), kineto::kMemoryTimelineCategories);
    for (int c = 0; c < kineto::kMemoryTimelineCategories; ++c) {
      const std::string_view name = kineto::memoryTimelineCategoryName(c);
      QCOMPARE(plot->graph(c)->name(), QString::fromUtf8(name.data(), int(name.size())));
      QCOMPARE(plot->graph(c)->dataCount(), int(core.times_ns.size()));
      if (c > 0) QCOMPARE(plot->graph(c)->channelFillGraph(), plot->graph(c - 1));  // stacked on the one below
    }
    // The stack's top at its highest is the core's peak total, to the byte.
    const int64_t peak = core.total(core.peak());
    QVERIFY(peak > 0);
    QCOMPARE(qRound64(view->drawnPeakBytes()), peak);
    // At the peak point, each graph is the categories up to it: the bottom one is Parameter's bytes alone.
    const double mib = 1024.0 * 1024.0;
    const auto at = [&](int c) { return (plot->graph(c)->data()->constBegin() + int(core.peak()))->value * mib; };
    QCOMPARE(qRound64(at(0)), core.bytes[core.peak()][0]);
    QCOMPARE(qRound64(at(1) - at(0)), core.bytes[core.peak()][1]);
    QVERIFY2(view->headingText().contains(QStringLiteral("peak %1 MiB").arg(double(peak) / mib, 0, 'f', 2)),
             qPrintable(view->headingText()));
    // It takes the timeline's place.
    QVERIFY(!w.timeline()->isVisibleTo(&w));
    QVERIFY(view->isVisibleTo(&w));
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("timeline.png"));
    QVERIFY2(w.exportViewFigure(QStringLiteral("memory-timeline"), png, 1000, 600, &error), qPrintable(error));
    QCOMPARE(QImage(png).size(), QSize(1000, 600));
  }

  void badFileIsNamedAndPageSaysWhy() {
    MainWindow w;
    w.setPersistSettings(false);
    QVERIFY(!w.pages().find(QStringLiteral("memory-timeline"))->unavailable().isEmpty());
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("[[5, 1], [[0,0,0,0,0,0,0,0,0],[0,0,0,0,0,0,0,0,0]]]");
    f.close();
    QString error;
    QVERIFY(!w.openTrace(bad, &error));
    QVERIFY2(error.contains(QStringLiteral("times[1] must not go back in time")), qPrintable(error));
    QVERIFY(!w.pages().find(QStringLiteral("memory-timeline"))->unavailable().isEmpty());
  }
};

QTEST_MAIN(TestMemoryTimelineView)
#include "test_memory_timeline_view.moc"
