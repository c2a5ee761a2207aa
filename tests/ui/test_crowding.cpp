// Nothing crowds at a lecture's window sizes: at 1280×720 and at the default
// size every entry of the timeline's legend is inside the plot (it wraps
// instead of being clipped); the communication view's per-rank labels never
// overlap at any width; the Loss pane is tall enough to read; each colour of
// the communication figure means one thing.
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>
#include <qcustomplot.h>

#include "comm_view.h"
#include "engine_bridge.h"
#include "experiment_panel.h"
#include "loss_view.h"
#include "main_window.h"
#include "timeline_view.h"

using namespace shardscope;

namespace {

RunConfig fsdp() {
  RunConfig c;
  c.strategy = Strategy::Fsdp;
  c.ranks = 8;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.batch = 16;
  c.steps = 2;
  c.clock = ClockKind::Modeled;
  c.profile = "h100-sxm";
  c.timeout_ms = 20000;
  return c;
}

void runToEnd(MainWindow& w, const RunConfig& c) {
  w.experimentPanel()->setConfig(c);
  QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
  QString error;
  QVERIFY2(w.startRun(&error), qPrintable(error));
  QVERIFY(finished.wait(120000));
  QVERIFY(finished.at(0).at(0).toBool());
}

// Visible text items of a plot as pixel rectangles (bottom-centre anchored, as the views place them).
QList<QRectF> labelRects(QCustomPlot* plot) {
  QList<QRectF> out;
  for (int i = 0; i < plot->itemCount(); ++i) {
    auto* t = qobject_cast<QCPItemText*>(plot->item(i));
    if (!t || !t->visible() || t->text().isEmpty()) continue;
    const QPointF p = t->position->pixelPosition();
    const QFontMetricsF m(t->font());
    const double w = m.horizontalAdvance(t->text()), h = m.height();
    out << QRectF(p.x() - w / 2, p.y() - h - t->padding().bottom(), w, h);
  }
  return out;
}

}  // namespace

class TestCrowding : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_crowding"));
  }

  void legendLossAndLabelsFit_data() {
    QTest::addColumn<QSize>("size");
    QTest::newRow("1280x720") << QSize(1280, 720);
    QTest::newRow("default") << QSize();
    QTest::newRow("1920x1080") << QSize(1920, 1080);
  }
  void legendLossAndLabelsFit() {
    QFETCH(QSize, size);
    MainWindow w;
    w.setPersistSettings(false);
    if (size.isValid()) w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    runToEnd(w, fsdp());
    w.showView(QStringLiteral("comm"));
    QTest::qWait(300);

    // Timeline legend: every entry fully inside the plot.
    QCustomPlot* timeline = w.timeline()->plot();
    timeline->replot(QCustomPlot::rpImmediateRefresh);
    int entries = 0;
    for (int i = 0; i < timeline->legend->itemCount(); ++i) {
      if (!timeline->legend->item(i)) continue;  // an empty cell of the last wrapped row
      ++entries;
      const QRect r = timeline->legend->item(i)->outerRect();
      QVERIFY2(r.left() >= 0 && r.right() <= timeline->width() && r.width() > 0,
               qPrintable(QStringLiteral("legend entry %1 at %2..%3 in a %4 px plot")
                              .arg(i)
                              .arg(r.left())
                              .arg(r.right())
                              .arg(timeline->width())));
    }
    QVERIFY(entries >= 6);  // forward, backward, all-gather, reduce-scatter, optimizer, wait

    // The Loss pane can show a curve.
    QVERIFY2(w.lossView()->plot()->height() >= 150,
             qPrintable(QStringLiteral("loss plot %1 px tall").arg(w.lossView()->plot()->height())));
  }

  void commLabelsNeverOverlap() {
    MainWindow w;
    w.setPersistSettings(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    runToEnd(w, fsdp());
    w.showView(QStringLiteral("comm"));
    CommView* comm = w.commView();
    for (int width : {240, 320, 480, 640, 900, 1400, 2000}) {
      for (QCustomPlot* plot : {comm->timePlot(), comm->bytesPlot()}) {
        plot->resize(width, 260);
        plot->replot(QCustomPlot::rpImmediateRefresh);
        const QList<QRectF> rects = labelRects(plot);
        for (int a = 0; a < rects.size(); ++a)
          for (int b = a + 1; b < rects.size(); ++b)
            QVERIFY2(!rects[a].intersects(rects[b]),
                     qPrintable(QStringLiteral("%1 px: labels %2 and %3 overlap").arg(width).arg(a).arg(b)));
        if (width >= 1400) QCOMPARE(rects.size(), 8);  // wide enough: every rank labelled
      }
    }
  }

  void oneColourOneMeaningInTheCommFigure() {
    MainWindow w;
    w.setPersistSettings(false);
    runToEnd(w, fsdp());
    CommView* comm = w.commView();
    QHash<QRgb, QString> meaning;
    for (QCustomPlot* plot : {comm->bytesPlot(), comm->timePlot()})
      for (int i = 0; i < plot->plottableCount(); ++i) {
        auto* bars = qobject_cast<QCPBars*>(plot->plottable(i));
        if (!bars || bars->brush().style() == Qt::NoBrush) continue;
        const QRgb c = bars->brush().color().rgb();
        QVERIFY2(!meaning.contains(c) || meaning.value(c) == bars->name(),
                 qPrintable(QStringLiteral("one colour for '%1' and '%2'").arg(meaning.value(c), bars->name())));
        meaning.insert(c, bars->name());
      }
    QVERIFY(meaning.size() >= 5);  // all-reduce, reduce-scatter, all-gather, hidden, exposed
  }
};

QTEST_MAIN(TestCrowding)
#include "test_crowding.moc"
