// Compare mode: the classic ZeRO figure of zero-stages-compared (four bars of
// measured model state, each equal to its run's summary, beside the formulas),
// a stacked prefetch-off/on timeline whose step-time difference is the
// summaries' difference, the difference readout's B/A against the summaries'
// ratios, and `--runs` parsing. Figures are rendered at 1280×720 and 1920×1080.
#include <QImage>
#include <QItemSelectionModel>
#include <QProcess>
#include <QProgressBar>
#include <QSignalSpy>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>
#include <qcustomplot.h>
#include <sstream>

#include "analysis/run_summary.h"
#include "compare_comm_view.h"
#include "compare_controller.h"
#include "compare_memory_view.h"
#include "comm_view.h"
#include "compare_timeline_view.h"
#include "memory_view.h"
#include "timeline_view.h"
#include "figure_job.h"
#include "inspect/run_selection.h"
#include "main_window.h"
#include "preset.h"
#include "run_history_model.h"
#include "view_pages.h"
#include "preset_run.h"

using namespace shardscope;
using nlohmann::json;

namespace {

// A run's summary, as `shardscope-cli run --summary` writes it.
json summaryOf(const RunRecord& record) {
  std::ostringstream out;
  writeSummaryJson(*record.result, out);
  return json::parse(out.str());
}

int64_t largestSent(const json& summary) {
  int64_t sent = 0;
  for (const json& rank : summary["per_rank"]) {
    const json& b = rank["comm_bytes"];
    sent = std::max(sent, b["all_reduce"].get<int64_t>() + b["reduce_scatter"].get<int64_t>() +
                              b["all_gather"].get<int64_t>());
  }
  return sent;
}

int64_t largestPeak(const json& summary) {
  int64_t peak = 0;
  for (const json& rank : summary["per_rank"]) peak = std::max(peak, rank["total_peak_bytes"].get<int64_t>());
  return peak;
}

template <class P>
P* page(MainWindow& w, const char* name) {
  return static_cast<P*>(w.pages().find(QString::fromLatin1(name)));
}

QStackedWidget* stackOf(Page* p) { return qobject_cast<QStackedWidget*>(p->widget()); }

// Writes a view's figure at both lecture sizes; checks each is a real PNG of that size.
void renderBoth(MainWindow& w, const QString& view, const QTemporaryDir& dir) {
  for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)}) {
    const QString path = dir.filePath(QStringLiteral("%1-%2x%3.png").arg(view).arg(size.width()).arg(size.height()));
    QString error;
    QVERIFY2(w.exportViewFigure(view, path, size.width(), size.height(), &error), qPrintable(error));
    const QImage image(path);
    QCOMPARE(image.size(), size);
    QVERIFY(QFileInfo(path).size() > 10000);
    if (qEnvironmentVariableIsSet("SHARDSCOPE_KEEP_FIGURES")) {
      const QString keep = qEnvironmentVariable("SHARDSCOPE_KEEP_FIGURES") + QLatin1Char('/') + QFileInfo(path).fileName();
      QFile::remove(keep);
      QFile::copy(path, keep);
    }
  }
}

// With SHARDSCOPE_KEEP_FIGURES=DIR: the window itself at both sizes, to look at.
void keepWindow(MainWindow& w, const QString& name) {
  if (!qEnvironmentVariableIsSet("SHARDSCOPE_KEEP_FIGURES")) return;
  const QSize before = w.size();
  for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)}) {
    w.resize(size);
    QTest::qWait(400);
    w.grab().save(qEnvironmentVariable("SHARDSCOPE_KEEP_FIGURES") +
                  QStringLiteral("/window-%1-%2x%3.png").arg(name).arg(size.width()).arg(size.height()));
  }
  w.resize(before);
}

}  // namespace

class TestCompare : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_compare"));
  }

  void zeroStagesSideBySide() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    runPreset(w, "zero-stages-compared");
    QCOMPARE(w.history()->runCount(), 4);
    QString error;
    QVERIFY(!w.compareRuns({0}, &error));  // one run is not a comparison
    QVERIFY(error.contains(QStringLiteral("two or more")));
    QVERIFY2(w.compareRuns({0, 1, 2, 3}, &error), qPrintable(error));
    QVERIFY(w.inspection().comparing());

    auto* memory = page<MemoryPage>(w, "memory");
    QCOMPARE(stackOf(memory)->currentWidget(), static_cast<QWidget*>(memory->compareView()));
    const CompareMemoryView* view = memory->compareView();
    QCOMPARE(view->measuredBytes().size(), size_t(4));
    const QStringList formulas = {QStringLiteral("16"), QStringLiteral("4 + 12/P"), QStringLiteral("2 + 14/P"),
                                  QStringLiteral("16/P")};
    const double expected_bpp[] = {16.0, 7.0, 5.5, 4.0};  // P = 4
    for (int i = 0; i < 4; ++i) {
      const json s = summaryOf(w.history()->run(i));
      const int64_t state = s["per_rank"][0]["model_state_peak_bytes"].get<int64_t>();
      // The bar is the run's measured model state, the outline its formula.
      QCOMPARE(view->measuredBytes()[static_cast<size_t>(i)], state);
      const double predicted = s["per_rank"][0]["expected_model_state_bytes_per_param"].get<double>() * s["params"].get<double>();
      QVERIFY(std::abs(view->predictedBytes()[static_cast<size_t>(i)] - predicted) < 1.0);
      QVERIFY2(view->formulaLabels()[i].startsWith(formulas[i] + QStringLiteral("\n= ")), qPrintable(view->formulaLabels()[i]));
      QVERIFY(std::abs(s["per_rank"][0]["model_state_bytes_per_param"].get<double>() - expected_bpp[i]) < 0.05);
    }
    // What is drawn: the stacked bars' height at each run and the labels on the plot.
    QCustomPlot* plot = view->plot();
    QStringList texts;
    for (int i = 0; i < plot->itemCount(); ++i)
      if (auto* t = qobject_cast<QCPItemText*>(plot->item(i))) texts << t->text();
    for (const QString& f : formulas)
      QVERIFY2(std::any_of(texts.begin(), texts.end(), [&](const QString& t) { return t.startsWith(f + QLatin1Char('\n')); }),
               qPrintable(f));
    for (int i = 0; i < 4; ++i) {
      double stacked = 0;
      for (int p = 0; p < plot->plottableCount(); ++p) {
        auto* bars = qobject_cast<QCPBars*>(plot->plottable(p));
        if (!bars || bars->brush().style() == Qt::NoBrush) continue;
        for (const QCPBarsData& d : *bars->data())
          if (std::abs(d.key - (i - 0.18)) < 0.01) stacked += d.value;
      }
      QVERIFY(std::abs(stacked * 1024 * 1024 - static_cast<double>(view->measuredBytes()[static_cast<size_t>(i)])) < 1.0);
    }
    QTemporaryDir dir;
    renderBoth(w, QStringLiteral("memory"), dir);
    keepWindow(w, QStringLiteral("memory"));
    // The comm view tables the runs in columns; zero3 sends 1.5× what ddp sends.
    auto* comm = page<CommPage>(w, "comm");
    QCOMPARE(stackOf(comm)->currentWidget(), static_cast<QWidget*>(comm->compareView()));
    QCOMPARE(comm->compareView()->table()->columnCount(), 4);
    QCOMPARE(comm->compareView()->table()->horizontalHeaderItem(3)->text(), QStringLiteral("zero3"));
    renderBoth(w, QStringLiteral("comm"), dir);

    // Unpin: back to one run in every page.
    w.unpinRuns();
    QVERIFY(!w.inspection().comparing());
    QCOMPARE(stackOf(memory)->currentWidget(), static_cast<QWidget*>(memory->view()));
    QCOMPARE(stackOf(comm)->currentWidget(), static_cast<QWidget*>(comm->view()));
    QCOMPARE(stackOf(page<TimelinePage>(w, "timeline"))->currentWidget(), static_cast<QWidget*>(w.timeline()));
  }

  // unit-size's lesson is the gathered slice: its preset draws model state and
  // gathered parameters, so compared runs stack both beside the ZeRO formula
  // plus FSDP's gathered-peak formula, and its figure compares the three runs.
  void unitSizeComparesGathered() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    runPreset(w, "unit-size");
    QCOMPARE(w.memoryView()->shownCategories().describe(), std::string("model state, gathered"));
    QString error;
    QVERIFY2(w.compareRuns({0, 1, 2}, &error), qPrintable(error));
    const CompareMemoryView* view = page<MemoryPage>(w, "memory")->compareView();
    QCOMPARE(view->measuredBytes().size(), size_t(3));
    for (int i = 0; i < 3; ++i) {
      const json s = summaryOf(w.history()->run(i));
      const json& r0 = s["per_rank"][0];
      const int64_t expected = r0["model_state_peak_bytes"].get<int64_t>() + r0["peak_bytes"]["gathered"].get<int64_t>();
      QCOMPARE(view->measuredBytes()[static_cast<size_t>(i)], expected);
      const double predicted = r0["expected_model_state_bytes_per_param"].get<double>() * s["params"].get<double>() +
                               r0["expected_gathered_peak_bytes"].get<double>();
      QVERIFY(std::abs(view->predictedBytes()[static_cast<size_t>(i)] - predicted) < 1.0);
      QVERIFY2(view->formulaLabels()[i].contains(QStringLiteral("gathered")), qPrintable(view->formulaLabels()[i]));
    }
    QVERIFY(view->measuredBytes()[0] < view->measuredBytes()[1] && view->measuredBytes()[1] < view->measuredBytes()[2]);
    QVERIFY(view->figureTitle().contains(QStringLiteral("gathered")));
    // All categories shown: back to the ZeRO figure.
    w.memoryView()->setShownCategories(CategoryFilter::all());
    QVERIFY(view->formulaLabels()[0].startsWith(QStringLiteral("16/P\n= ")));
    QTemporaryDir dir;
    renderBoth(w, QStringLiteral("memory"), dir);

    // The headless figure of the lesson view compares the preset's runs, with --categories.
    FigureJob job;
    job.preset = QStringLiteral("unit-size");
    job.view = QStringLiteral("memory");
    job.out = dir.filePath(QStringLiteral("unit-size.png"));
    QString message;
    QCOMPARE(runFigureJob(job, &message), 0);
    QVERIFY2(message.contains(QStringLiteral("runs 1,2,3 compared")), qPrintable(message));
    job.runs = QStringLiteral("all");
    job.categories = QStringLiteral("model-state,gathered,activation");
    QCOMPARE(runFigureJob(job, &message), 0);
  }

  void stackedPrefetchTimeline() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    runPreset(w, "fsdp-prefetch-on-off");
    QString error;
    QVERIFY2(w.compareRuns({0, 1}, &error), qPrintable(error));
    auto* timeline = page<TimelinePage>(w, "timeline");
    QCOMPARE(stackOf(timeline)->currentWidget(), static_cast<QWidget*>(timeline->compareView()));
    const CompareTimelineView* view = timeline->compareView();
    QCOMPARE(view->bandCount(), 2);
    QCOMPARE(view->plot()->axisRectCount(), 2);
    // Aligned at the last step, as the summaries' last_step.
    const json off = summaryOf(w.history()->run(0)), on = summaryOf(w.history()->run(1));
    const int64_t off_ns = off["last_step"]["step_ns"].get<int64_t>(), on_ns = on["last_step"]["step_ns"].get<int64_t>();
    const StepAlignment& a = view->alignment();
    QCOMPARE(a.step, w.history()->run(0).config.steps - 1);
    QCOMPARE(a.runs[0].step_ns, off_ns);
    QCOMPARE(a.runs[1].step_ns, on_ns);
    QCOMPARE(a.runs[1].diff_ns, on_ns - off_ns);
    QVERIFY(on_ns < off_ns);  // prefetch hides the gathers: a shorter step
    // The band says the measured difference.
    const QString diff = QStringLiteral("−%1 ms (%2×)")
                             .arg(static_cast<double>(off_ns - on_ns) * 1e-6, 0, 'f', 3)
                             .arg(static_cast<double>(on_ns) / static_cast<double>(off_ns), 0, 'f', 2);
    QVERIFY2(view->bandText(1).contains(diff), qPrintable(view->bandText(1) + QStringLiteral(" lacks ") + diff));
    QVERIFY(view->bandText(1).contains(QStringLiteral("vs fsdp · prefetch none")));
    QVERIFY(view->bandText(0).contains(QString::number(static_cast<double>(off_ns) * 1e-6, 'f', 3)));
    QTemporaryDir dir;
    renderBoth(w, QStringLiteral("timeline"), dir);
    w.showView(QStringLiteral("comm"));
    keepWindow(w, QStringLiteral("timeline"));
    // Every band's time axis starts the aligned step at 0.
    for (int i = 0; i < 2; ++i) {
      const QCPRange r = view->plot()->axisRect(i)->axis(QCPAxis::atBottom)->range();
      const double offset = static_cast<double>(a.runs[static_cast<size_t>(i)].begin_ns) * 1e-6;
      QVERIFY(r.lower - offset < 0 && r.upper - offset > 0);
    }
    const QCPRange r0 = view->plot()->axisRect(0)->axis(QCPAxis::atBottom)->range();
    const QCPRange r1 = view->plot()->axisRect(1)->axis(QCPAxis::atBottom)->range();
    QVERIFY(std::abs((r0.lower - a.runs[0].begin_ns * 1e-6) - (r1.lower - a.runs[1].begin_ns * 1e-6)) < 1e-9);
  }

  void readoutRatios() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    runPreset(w, "zero-stages-compared");
    // Select ddp (A) and zero3 (B) in the Runs table.
    QTableView* table = w.runsTable();
    table->clearSelection();
    table->selectionModel()->select(w.history()->index(0, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    table->selectionModel()->select(w.history()->index(3, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    const QString text = w.compare()->readoutText();
    QVERIFY(!text.isEmpty());
    QCOMPARE(w.statusBar()->currentMessage(), text);
    QVERIFY(!w.statusBar()->findChild<QProgressBar*>()->isVisible());  // made room for the readout
    keepWindow(w, QStringLiteral("readout"));
    QVERIFY(w.compare()->pinAction()->isEnabled());
    const json a = summaryOf(w.history()->run(0)), b = summaryOf(w.history()->run(3));
    const double ratios[] = {
        b["last_step"]["step_ns"].get<double>() / a["last_step"]["step_ns"].get<double>(),
        b["last_step"]["exposed_comm_ns"].get<double>() / a["last_step"]["exposed_comm_ns"].get<double>(),
        static_cast<double>(largestPeak(b)) / static_cast<double>(largestPeak(a)),
        static_cast<double>(largestSent(b)) / static_cast<double>(largestSent(a))};
    const std::optional<ComparedRun> ra = CompareController::comparedRun(w.history()->run(0));
    const std::optional<ComparedRun> rb = CompareController::comparedRun(w.history()->run(3));
    QVERIFY(ra && rb);
    const std::vector<FigureRatio> figures = compareFigures(runFigures(*ra), runFigures(*rb));
    QCOMPARE(figures.size(), size_t(4));
    const char* names[] = {"step time", "exposed comm", kTotalPeakName, "bytes sent"};
    for (size_t i = 0; i < 4; ++i) {
      QCOMPARE(QString::fromStdString(figures[i].name), QString::fromLatin1(names[i]));
      QVERIFY(figures[i].ratio);
      QVERIFY2(std::abs(*figures[i].ratio - ratios[i]) < 1e-9 * std::max(1.0, ratios[i]), names[i]);
      const QString shown = QStringLiteral("(B/A %1×)").arg(ratios[i], 0, 'f', 2);
      QVERIFY2(text.contains(QString::fromLatin1(names[i]) + QLatin1Char(' ')) && text.contains(shown),
               qPrintable(text + QStringLiteral(" lacks ") + shown));
    }
    QCOMPARE(*figures[3].a, static_cast<double>(largestSent(a)));
    // An opened trace has no result: the same figures from its events.
    ComparedRun trace_only = *ra;
    trace_only.result.reset();
    const RunFigures from_events = runFigures(trace_only);
    QCOMPARE(*from_events.step_ns, a["last_step"]["step_ns"].get<int64_t>());
    QCOMPARE(*from_events.exposed_comm_ns, a["last_step"]["exposed_comm_ns"].get<int64_t>());
    QCOMPARE(*from_events.total_peak_bytes, largestPeak(a));
    QCOMPARE(*from_events.model_state_bytes, a["per_rank"][0]["model_state_peak_bytes"].get<int64_t>());
    QVERIFY(std::abs(static_cast<double>(*from_events.sent_bytes - largestSent(a))) <= 0.01 * static_cast<double>(largestSent(a)));
    QCOMPARE(*figures[0].b, b["last_step"]["step_ns"].get<double>());
    QVERIFY(std::abs(ratios[3] - 1.5) < 0.01);  // ZeRO-3 sends 3N to DDP's 2N
    // A third row: no readout; Ctrl+K pins the three.
    table->selectionModel()->select(w.history()->index(1, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    QVERIFY(w.compare()->readoutText().isEmpty());
    QVERIFY(w.statusBar()->currentMessage().isEmpty());
    QVERIFY(w.statusBar()->findChild<QProgressBar*>()->isVisible());  // the run's labels are back
    w.compare()->pinAction()->trigger();
    QCOMPARE(w.compare()->pinnedRows(), QList<int>({0, 1, 3}));
    QCOMPARE(w.inspection().compared().size(), size_t(3));
    QVERIFY(w.compare()->unpinAction()->isEnabled());
    w.compare()->unpinAction()->trigger();
    QVERIFY(!w.inspection().comparing());
  }

  void runsParsing() {
    QCOMPARE(parseRunSelection("all", 4), std::vector<int>({0, 1, 2, 3}));
    QCOMPARE(parseRunSelection("2", 4), std::vector<int>({1}));
    QCOMPARE(parseRunSelection("3,1", 4), std::vector<int>({2, 0}));
    for (const char* bad : {"", "0", "5", "1,,2", "1,", "a", "1,1", "2-3", " 1", "+1", "-1", "99999999999"}) {
      try {
        parseRunSelection(bad, 4);
        QFAIL(qPrintable(QStringLiteral("'%1' was accepted").arg(QString::fromLatin1(bad))));
      } catch (const RunSelectionError& e) {
        const QString message = QString::fromStdString(e.what());
        QVERIFY2(message.startsWith(QStringLiteral("--runs must be all, N or N,M")) && message.contains(QStringLiteral("1..4")),
                 qPrintable(message));
      }
    }
    // The figure job: a bad value, one the view cannot draw, and the default
    // that no longer fails (zero-stages-compared's last run has no buckets).
    QTemporaryDir dir;
    FigureJob job;
    job.preset = QStringLiteral("zero-stages-compared");
    job.view = QStringLiteral("memory");
    job.out = dir.filePath(QStringLiteral("x.png"));
    job.runs = QStringLiteral("7");
    QString message;
    QCOMPARE(runFigureJob(job, &message), 2);
    QVERIFY2(message.contains(QStringLiteral("--runs must be")) && message.contains(QStringLiteral("1..4")), qPrintable(message));
    job.view = QStringLiteral("buckets");
    job.runs = QStringLiteral("1,2");
    QCOMPARE(runFigureJob(job, &message), 2);
    QVERIFY2(message.contains(QStringLiteral("--runs: the buckets view draws one run")), qPrintable(message));
    QVERIFY(!QFile::exists(job.out));
    job.runs.clear();
    QCOMPARE(runFigureJob(job, &message), 0);
    QVERIFY2(message.contains(QStringLiteral("run 3 (zero2")), qPrintable(message));
    job.runs = QStringLiteral("1");
    job.out = dir.filePath(QStringLiteral("ddp-buckets.png"));
    QCOMPARE(runFigureJob(job, &message), 0);
    QVERIFY2(message.contains(QStringLiteral("run 1 (ddp)")), qPrintable(message));
    QVERIFY(QFile::exists(job.out));
#ifdef SHARDSCOPE_GUI_PATH
    // The app: --runs without --figure, and an empty value.
    for (const QStringList& args : {QStringList{QStringLiteral("--runs"), QStringLiteral("2")},
                                    QStringList{QStringLiteral("--figure"), QStringLiteral("--preset"),
                                                QStringLiteral("ddp-basics"), QStringLiteral("--view"),
                                                QStringLiteral("memory"), QStringLiteral("--out"), job.out,
                                                QStringLiteral("--runs"), QString()}}) {
      QProcess p;
      p.start(QStringLiteral(SHARDSCOPE_GUI_PATH), args);
      QVERIFY(p.waitForFinished(60000));
      QCOMPARE(p.exitCode(), 2);
      const QString err = QString::fromUtf8(p.readAllStandardError());
      QVERIFY2(err.contains(QStringLiteral("error: --runs")), qPrintable(err));
    }
#endif
  }
};

QTEST_MAIN(TestCompare)
#include "test_compare.moc"
