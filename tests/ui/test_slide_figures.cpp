// Slide figures (--slide, the export dialog's "Slide (presentation)"): every
// view's slide figure at 1920×1080 draws no text under 18 px, measured from
// the text the figure actually paints (the SVG paint engine records each
// text item with its font's pixel size), while a page figure of the same run
// fails that check. Figures name a real font family in SVG (never the generic
// "Sans") and embed it in PDF; the timeline's slide figure has no cursor line
// and names its folded boxes in the legend; subtitles say each part once.
// Timeline figures of 4+ ranks identical to rank 0 draw them as one band
// "ranks 1–7: same as rank 0" (not with --all-ranks, not for a hung run), and
// in the window a double-click on the band shows every rank again. A figure
// whose write fails (a file-size limit) leaves the previous file whole.
#include <QFile>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/resource.h>

#include <csignal>

#include "config/run_config.h"
#include "experiment_panel.h"
#include "figure_export.h"
#include "main_window.h"
#include "preset.h"
#include "inspect/timeline_layout.h"
#include "timeline_view.h"
#include <qcustomplot.h>
#include "preset_run.h"

using namespace shardscope;

namespace {

// A tiny zero3 run on the modeled clock: it has losses (the meta backend has
// none) and FSDP units.
void runTinyZero3(MainWindow& w) {
  RunConfig c = parseRunArgs({"--strategy", "zero3", "--ranks", "4", "--layers", "3", "--hidden", "48", "--batch", "8",
                              "--steps", "3", "--clock", "modeled", "--timeout-ms", "20000"});
  w.experimentPanel()->setConfig(c);
  QSignalSpy finished(&w, &MainWindow::runFinished);
  QString error;
  QVERIFY2(w.startRun(&error), qPrintable(error));
  QVERIFY(finished.wait(120000));
}

void runArgs(MainWindow& w, const std::vector<std::string>& args, bool expect_ok = true) {
  w.experimentPanel()->setConfig(parseRunArgs(args));
  QSignalSpy finished(&w, &MainWindow::runFinished);
  QString error;
  QVERIFY2(w.startRun(&error), qPrintable(error));
  QVERIFY(finished.wait(120000));
  QCOMPARE(finished.at(0).at(0).toBool(), expect_ok);
}

QByteArray figure(MainWindow& w, const QString& view, const QString& path, bool slide, int width = 1920,
                  int height = 1080, bool all_ranks = false) {
  FigureOptions options;
  options.slide = slide;
  options.collapseRanks = !all_ranks;
  QString error;
  if (!w.exportViewFigure(view, path, width, height, &error, options)) {
    qWarning("%s", qPrintable(error));
    return {};
  }
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

struct TextSizes {
  int count = 0;
  double smallest = 1e9;
  QString smallestText;
  QSet<QString> families;
};

// Every text item the figure painted: its pixel size (the SVG engine writes the
// font's px at the figure's 96 dpi) and family. Groups are never scaled (the
// check fails if one is), so a font-size is the size on the slide.
TextSizes textSizes(const QByteArray& svg) {
  TextSizes out;
  const QString s = QString::fromUtf8(svg);
  static const QRegularExpression text(
      QStringLiteral("<text [^>]*font-family=\"([^\"]*)\" font-size=\"([0-9.]+)\"[^>]*>([^<]*)</text>"));
  for (auto it = text.globalMatch(s); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    if (m.captured(3).trimmed().isEmpty()) continue;
    ++out.count;
    out.families.insert(m.captured(1));
    const double px = m.captured(2).toDouble();
    if (px < out.smallest) {
      out.smallest = px;
      out.smallestText = m.captured(3).trimmed();
    }
  }
  static const QRegularExpression matrix(QStringLiteral("transform=\"matrix\\(([-0-9.e]+),([-0-9.e]+),([-0-9.e]+),([-0-9.e]+),"));
  for (auto it = matrix.globalMatch(s); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    // Rotated axis labels are fine; a scale is not.
    const double sx = std::hypot(m.captured(1).toDouble(), m.captured(2).toDouble());
    const double sy = std::hypot(m.captured(3).toDouble(), m.captured(4).toDouble());
    if (std::abs(sx - 1) > 1e-6 || std::abs(sy - 1) > 1e-6)
      out.smallest = -1;  // a scaled group: its font-size is not what the slide shows
  }
  return out;
}

bool hasText(const QByteArray& svg, const QString& what) {
  return QString::fromUtf8(svg).contains(QStringLiteral(">%1</text>").arg(what.toHtmlEscaped()));
}

}  // namespace

class TestSlideFigures : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_slide_figures"));
  }

  void slideFiguresHaveNoTextUnder18px() {
    QTemporaryDir dir;
    struct Case {
      const char* source;  // a preset, or "" for the tiny zero3 run
      QStringList views;
    };
    for (const Case& c : {Case{"ddp-basics", {"timeline", "memory", "buckets", "comm"}},
                          Case{"", {"timeline", "units", "loss", "memory", "comm"}}}) {
      MainWindow w;
      w.setPersistSettings(false);
      w.resize(1600, 1000);
      w.show();
      if (*c.source)
        runPreset(w, c.source);
      else
        runTinyZero3(w);
      if (QTest::currentTestFailed()) return;
      for (const QString& view : c.views) {
        const QString tag = QStringLiteral("%1-%2").arg(*c.source ? c.source : "zero3", view);
        const TextSizes slide = textSizes(figure(w, view, dir.filePath(tag + QStringLiteral("-slide.svg")), true));
        QVERIFY2(slide.count > 5, qPrintable(tag));
        QVERIFY2(slide.smallest >= 18.0, qPrintable(QStringLiteral("%1 slide: '%2' is %3 px")
                                                      .arg(tag, slide.smallestText).arg(slide.smallest)));
        // The same check fails for the page figure of the same run: it can fail.
        const TextSizes page = textSizes(figure(w, view, dir.filePath(tag + QStringLiteral("-page.svg")), false));
        QVERIFY2(page.count > 5, qPrintable(tag));
        QVERIFY2(page.smallest < 18.0, qPrintable(QStringLiteral("%1 page figure: smallest text %2 px").arg(tag).arg(page.smallest)));
      }
    }
  }

  void figuresNameAndEmbedARealFont() {
    const QString family = FigureExport::fontFamily();
    for (const char* generic : {"Sans", "Sans Serif", "sans-serif", "Serif", "Monospace"})
      QVERIFY2(family.compare(QLatin1String(generic), Qt::CaseInsensitive) != 0, qPrintable(family));
    QVERIFY(QFontDatabase::hasFamily(family));
    QTemporaryDir dir;
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    w.show();
    runPreset(w, "ddp-basics");
    for (bool slide : {false, true}) {
      for (const QString& view : {QStringLiteral("timeline"), QStringLiteral("memory"), QStringLiteral("buckets")}) {
        const TextSizes sizes = textSizes(figure(w, view, dir.filePath(view + QStringLiteral(".svg")), slide));
        QVERIFY(sizes.count > 0);
        QCOMPARE(sizes.families, QSet<QString>{family});
      }
      const QByteArray pdf = figure(w, QStringLiteral("timeline"), dir.filePath(QStringLiteral("t.pdf")), slide);
      QVERIFY(pdf.startsWith("%PDF"));
      QVERIFY2(pdf.contains("/FontFile"), "the PDF embeds no font program");
      QVERIFY(pdf.contains(QStringLiteral("/BaseFont /%1").arg(QString(family).remove(' ')).toLatin1()) ||
              pdf.contains(QString(family).remove(' ').toLatin1()));
    }
  }

  void slideTimelineHasNoCursorAndNamesFolds() {
    QTemporaryDir dir;
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    w.show();
    runPreset(w, "ddp-basics");
    w.setCursorTime(5'000'000);
    const QByteArray cursor = QByteArrayLiteral("stroke=\"#c00040\"");
    const QByteArray page = figure(w, QStringLiteral("timeline"), dir.filePath(QStringLiteral("page.svg")), false);
    const QByteArray slide = figure(w, QStringLiteral("timeline"), dir.filePath(QStringLiteral("slide.svg")), true);
    QVERIFY2(page.contains(cursor), "the page figure draws the cursor");
    QVERIFY2(!slide.contains(cursor), "the slide figure draws no cursor");
    // ddp-basics folds its forward blocks at 1920 px: every figure's legend says
    // what the stripes are (issue 31, defect 10: every mark drawn has an entry).
    QVERIFY(hasText(slide, QStringLiteral("folded: several short ops")));
    QVERIFY(hasText(page, QStringLiteral("folded: several short ops")));
    // The window's own legend is left as it was.
    const QStringList legend = w.timeline()->legendNames();
    figure(w, QStringLiteral("timeline"), dir.filePath(QStringLiteral("again.svg")), false);
    QCOMPARE(w.timeline()->legendNames(), legend);
  }

  void subtitleSaysEachPartOnce() {
    QCOMPARE(FigureExport::labelBesides(QStringLiteral("fsdp · prefetch both"),
                                        QStringLiteral("fsdp · 8 ranks · gpt2-124m (124 M params) · 1 block/unit · prefetch both")),
             QString());
    QCOMPARE(FigureExport::labelBesides(QStringLiteral("ddp · 4 ranks · gpt2-124m"),
                                        QStringLiteral("ddp · 4 ranks · gpt2-124m (124 M params), meta backend")),
             QString());
    QCOMPARE(FigureExport::labelBesides(QStringLiteral("fsdp · prefetch off"), QStringLiteral("fsdp · 8 ranks · prefetch none")),
             QStringLiteral("prefetch off"));
    // The figure's own subtitle: fsdp-prefetch-on-off's last run is "fsdp · prefetch both".
    QTemporaryDir dir;
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    w.show();
    runPreset(w, "fsdp-prefetch-on-off");
    QVERIFY(w.showHistoryRun(1));  // the lesson ends compared: its last run alone
    const QString svg = QString::fromUtf8(figure(w, QStringLiteral("units"), dir.filePath(QStringLiteral("u.svg")), true));
    QVERIFY(svg.contains(QStringLiteral("preset fsdp-prefetch-on-off")));
    QCOMPARE(svg.count(QStringLiteral("prefetch both")), 1);
  }

  void symmetricTimelineFiguresCollapseRanks() {
    QTemporaryDir dir;
    const QString band = QStringLiteral("ranks 1–7: same as rank 0");
    {
      MainWindow w;  // zero3 (fsdp), 8 ranks, meta backend on the modeled clock
      w.setPersistSettings(false);
      w.resize(1600, 1000);
      w.show();
      runPreset(w, "fsdp-prefetch-on-off");
      QVERIFY(w.showHistoryRun(1));  // the lesson ends compared: its last run alone
      const size_t rows = w.timeline()->layout().rows().size();
      for (bool slide : {false, true}) {
        QVERIFY(hasText(figure(w, QStringLiteral("timeline"), dir.filePath(QStringLiteral("z3.svg")), slide), band));
        QVERIFY(!hasText(figure(w, QStringLiteral("timeline"), dir.filePath(QStringLiteral("z3-all.svg")), slide, 1920,
                                1080, /*all_ranks=*/true),
                         band));
      }
      QCOMPARE(w.timeline()->layout().rows().size(), rows);  // the window still shows every rank
      QVERIFY(!w.timeline()->ranksCollapsed());
    }
    {
      MainWindow w;  // ddp, 8 ranks, on the CPU with the modeled clock
      w.setPersistSettings(false);
      w.resize(1600, 1000);
      w.show();
      runArgs(w, {"--strategy", "ddp", "--ranks", "8", "--layers", "3", "--hidden", "48", "--batch", "16", "--steps", "2",
                  "--clock", "modeled", "--timeout-ms", "20000"});
      QVERIFY(hasText(figure(w, QStringLiteral("timeline"), dir.filePath(QStringLiteral("ddp.svg")), true), band));
    }
  }

  void asymmetricRunsKeepEveryRank() {
    QTemporaryDir dir;
    MainWindow w;  // rank 1 skips a block: the others hang in its all-reduce
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    w.show();
    runArgs(w, {"--strategy", "ddp", "--ranks", "4", "--layers", "4", "--hidden", "64", "--batch", "8", "--steps", "2",
                "--bucket-mb", "0.05", "--inject-branch", "1:2", "--clock", "modeled", "--timeout-ms", "1500"},
            /*expect_ok=*/false);
    const QString svg = QString::fromUtf8(figure(w, QStringLiteral("timeline"), dir.filePath(QStringLiteral("hang.svg")), true));
    QVERIFY(!svg.contains(QStringLiteral("same as rank 0")));
    QVERIFY(svg.contains(QStringLiteral("rank 3 · compute")));
    QVERIFY(!w.timeline()->setCollapseIdenticalRanks(true));
  }

  void doubleClickOnTheBandShowsEveryRank() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    w.show();
    runPreset(w, "fsdp-prefetch-on-off");
    QVERIFY(w.showHistoryRun(1));  // the lesson ends compared: its last run alone
    TimelineView* view = w.timeline();
    const size_t rows = view->layout().rows().size();
    QVERIFY(view->setCollapseIdenticalRanks(true));
    QCOMPARE(view->collapsedBandText(), QStringLiteral("ranks 1–7: same as rank 0"));
    const auto& shown = view->layout().rows();
    QVERIFY(shown.size() < rows);
    int band = -1;
    for (size_t i = 0; i < shown.size(); ++i)
      if (shown[i].isBand()) band = static_cast<int>(i);
    QVERIFY(band > 0);
    QCOMPARE(view->layout().rowOf(3, Lane::Compute), -1);
    view->plot()->replot();
    const QPoint at(view->plot()->axisRect()->rect().center().x(),
                    static_cast<int>(view->plot()->yAxis->coordToPixel(shown[static_cast<size_t>(band)].center())));
    QVERIFY(view->tooltipAt(at).contains(QStringLiteral("same as rank 0")));
    QTest::mouseDClick(view->plot(), Qt::LeftButton, Qt::NoModifier, at);
    QVERIFY(!view->ranksCollapsed());
    QCOMPARE(view->layout().rows().size(), rows);
    QVERIFY(view->layout().rowOf(3, Lane::Compute) >= 0);
  }

  // Under a file-size limit of 4 KiB (SIGXFSZ ignored, so the write fails
  // with EFBIG) a 1920×1080 PNG cannot be written: write() says so, and the
  // figure already at the path keeps every byte, with no temporary left.
  void aFailedWriteLeavesThePreviousFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("figure.png"));
    const QByteArray previous = QByteArrayLiteral("the previous figure");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly) && f.write(previous) == previous.size());
    }
    QCustomPlot plot;
    plot.addGraph()->setData({0, 1, 2, 3}, {1, 3, 2, 4});
    plot.rescaleAxes();
    rlimit old{};
    QCOMPARE(getrlimit(RLIMIT_FSIZE, &old), 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old;
    small.rlim_cur = 4096;
    QCOMPARE(setrlimit(RLIMIT_FSIZE, &small), 0);
    QString error;
    const bool written = FigureExport::write(path, QStringLiteral("A figure"), QString(), {{&plot, 1.0}}, 1920, 1080,
                                             &error);
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    QVERIFY(!written);
    QVERIFY2(error.contains(path), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), previous);
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{QStringLiteral("figure.png")});
    // Without the limit the same call writes the whole figure in its place.
    QVERIFY2(FigureExport::write(path, QStringLiteral("A figure"), QString(), {{&plot, 1.0}}, 1920, 1080, &error),
             qPrintable(error));
    QVERIFY(QImage(path).width() == 1920);
  }
};

QTEST_MAIN(TestSlideFigures)
#include "test_slide_figures.moc"
