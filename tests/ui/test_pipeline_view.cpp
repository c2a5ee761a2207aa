// The pipeline schedule view, offscreen: a modeled meta run of 4 stages × TP 2
// under 1F1B, GPipe and interleaved draws 2·M·V boxes per stage, every box
// labelled ("F3", "B3"; interleaved "F3.5"), one arrow per send, the idle time
// shaded and both pass colours painted; the rows name the stage's ranks, the
// caption's bubble and formula are the run's own (RunResult), the right axis
// gives the ledger's activation peak and the microbatches in flight beside the
// schedule's count. In the window: the "pipeline" page says why it is empty
// for a run without stages and exports its figure for a pipelined preset.
#include <QFileInfo>
#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "engine/run.h"
#include "inspect/event_store.h"
#include "main_window.h"
#include "page.h"
#include "palette.h"
#include "pipeline_plottable.h"
#include "pipeline_view.h"
#include "preset.h"

using namespace shardscope;

namespace {

RunConfig pipelined(PipelineSchedule schedule, int microbatches) {
  RunConfig c;
  c.backend = Backend::Meta;
  c.clock = ClockKind::Modeled;
  c.model.kind = ModelKind::Gpt;
  c.model.layers = 16;
  c.model.hidden = 2048;
  c.model.heads = 16;
  c.model.seq = 2048;
  c.model.vocab = 256;
  c.ranks = 8;
  c.tp = 2;
  c.pp = 4;
  c.microbatches = microbatches;
  c.pp_schedule = schedule;
  if (schedule == PipelineSchedule::Interleaved) c.virtual_stages = 2;
  c.batch = microbatches;
  c.steps = 1;
  return c;
}

RunResult runInto(const RunConfig& c, EventStore& store) {
  Run run(c);
  RunResult result = run.execute();
  RunTrace trace = run.trace();
  trace.config = c;
  store.setFromTrace(std::move(trace));
  return result;
}

// Pixels of exactly this colour in the plot as drawn at its size.
int pixelsOf(QCustomPlot* plot, const QColor& color) {
  const QImage image = plot->toPixmap(plot->width(), plot->height()).toImage();
  int n = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x)
      if (image.pixelColor(x, y).rgb() == color.rgb()) ++n;
  return n;
}

QString percent(double share) { return QString::number(100.0 * share, 'f', 1) + QChar(0x00A0) + QLatin1Char('%'); }

}  // namespace

class TestPipelineView : public QObject {
  Q_OBJECT

 private slots:
  void drawsTheRunsSchedule_data() {
    QTest::addColumn<int>("schedule");
    QTest::addColumn<int>("microbatches");
    QTest::addColumn<int>("chunks");
    QTest::addRow("1f1b") << int(PipelineSchedule::OneFOneB) << 8 << 1;
    QTest::addRow("gpipe") << int(PipelineSchedule::GPipe) << 8 << 1;
    QTest::addRow("interleaved") << int(PipelineSchedule::Interleaved) << 4 << 2;
  }

  void drawsTheRunsSchedule() {
    QFETCH(int, schedule);
    QFETCH(int, microbatches);
    QFETCH(int, chunks);
    const RunConfig c = pipelined(static_cast<PipelineSchedule>(schedule), microbatches);
    EventStore store;
    const RunResult result = runInto(c, store);
    PipelineView view(&store);
    view.resize(1800, 700);
    view.show();
    view.refresh(true);
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const PipelineBoxes& boxes = view.boxes();
    QCOMPARE(boxes.stages(), 4);
    for (int s = 0; s < 4; ++s) {
      int n = 0;
      for (const PipelineBox& b : boxes.boxes()) n += b.stage == s;
      QCOMPARE(n, 2 * microbatches * chunks);
    }
    const int all = 4 * 2 * microbatches * chunks;
    QCOMPARE(static_cast<int>(boxes.boxes().size()), all);
    QCOMPARE(view.schedule()->lastLabels(), all);  // wide enough: every box names its microbatch
    const int transfers = 2 * microbatches * (4 * chunks - 1);
    QCOMPARE(boxes.sends(), transfers);
    QCOMPARE(view.schedule()->lastArrows(), transfers);
    const PipelineBox& first = boxes.boxes().front();
    QCOMPARE(QString::fromStdString(boxes.label(first)), chunks > 1 ? QStringLiteral("F0.0") : QStringLiteral("F0"));
    QCOMPARE(view.stageLabel(2), QStringLiteral("stage 2 · ranks 4–5"));
    // The caption: the run's own bubble beside the formula's.
    const QString caption = view.captionText();
    QVERIFY2(caption.contains(QStringLiteral("bubble measured ") + percent(result.pipeline.bubble)), qPrintable(caption));
    QVERIFY2(caption.contains(percent(result.pipeline.formula_bubble)), qPrintable(caption));
    QVERIFY2(caption.contains(chunks > 1 ? QStringLiteral("3/(2·4 + 3)") : QStringLiteral("3/(8 + 3)")), qPrintable(caption));
    for (int s = 0; s < 4; ++s) {
      const PipelineRow& row = boxes.rows()[static_cast<size_t>(s)];
      QCOMPARE(row.in_flight, row.schedule_in_flight);
      QVERIFY(view.stageFigures(s).endsWith(QStringLiteral("%1 (%1)").arg(row.schedule_in_flight)));
      QCOMPARE(row.activation_peak_bytes,
               result.ranks[static_cast<size_t>(row.rank)].ledger.peak[static_cast<size_t>(Category::Activation)]);
    }
    if (static_cast<PipelineSchedule>(schedule) == PipelineSchedule::OneFOneB)
      QCOMPARE(boxes.rows()[0].in_flight, 4);  // stage 0 of 4 holds S − 0 microbatches
    if (static_cast<PipelineSchedule>(schedule) == PipelineSchedule::GPipe)
      QCOMPARE(boxes.rows()[0].in_flight, microbatches);  // GPipe holds them all
    // Both passes' colours and the bubble's shade are painted.
    QVERIFY(pixelsOf(view.plot(), Palette::kind(EventKind::Forward)) > 500);
    QVERIFY(pixelsOf(view.plot(), Palette::kind(EventKind::Backward)) > 500);
    QVERIFY(pixelsOf(view.plot(), PipelinePlottable::idleColor()) > 100);
  }

  void pageInTheWindow() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    Page* page = w.pages().find(QStringLiteral("pipeline"));
    QVERIFY(page);
    QVERIFY(presetViews().contains(QStringLiteral("pipeline")));
    QVERIFY(!page->unavailable().isEmpty());  // no run at all
    QSignalSpy done(&w, &MainWindow::presetFinished);
    QString error;
    // A run without pipeline stages: the page says so.
    const QByteArray flat = R"({"title": "flat", "text": "t", "view": "timeline", "runs": [{"label": "ddp",
        "config": {"backend": "meta", "model": "gpt2-124m", "strategy": "ddp", "ranks": 2, "batch": 4, "steps": 1}}]})";
    QVERIFY2(w.runPreset(parsePreset(flat, QStringLiteral("flat")), &error), qPrintable(error));
    QVERIFY(done.wait(60000));
    QVERIFY2(page->unavailable().contains(QStringLiteral("--pp")), qPrintable(page->unavailable()));
    const QByteArray staged = R"({"title": "staged", "text": "t", "view": "pipeline", "runs": [{"label": "1f1b",
        "config": {"backend": "meta", "model": "gpt2-124m", "ranks": 4, "pp": 4, "microbatches": 8,
                   "batch": 8, "steps": 1, "clock": "modeled"}}]})";
    QVERIFY2(w.runPreset(parsePreset(staged, QStringLiteral("staged")), &error), qPrintable(error));
    QVERIFY(done.wait(60000));
    QCOMPARE(page->unavailable(), QString());
    auto* view = qobject_cast<PipelineView*>(page->widget());
    QVERIFY(view);
    QCOMPARE(static_cast<int>(view->boxes().boxes().size()), 4 * 2 * 8);
    QTemporaryDir dir;
    for (const char* suffix : {"png", "svg", "pdf"}) {
      const QString path = dir.filePath(QStringLiteral("pipeline.%1").arg(suffix));
      QVERIFY2(w.exportViewFigure(QStringLiteral("pipeline"), path, 1200, 600, &error), qPrintable(error));
      QVERIFY(QFileInfo(path).size() > 1000);
    }
    QCOMPARE(QImage(dir.filePath(QStringLiteral("pipeline.png"))).size(), QSize(1200, 600));
  }
};

QTEST_MAIN(TestPipelineView)
#include "test_pipeline_view.moc"
