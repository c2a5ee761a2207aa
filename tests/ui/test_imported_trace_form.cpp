// An imported PyTorch job on screen (issue 31, defect 11): the Experiment form
// says what is shown (the trace, its ranks, "imported PyTorch trace") instead
// of a ddp · 4 ranks · mlp config that never ran it, Run is off until an
// experiment is picked, the status bar names the trace (no "backend cpu"),
// and the Runs table's "comm hidden" is the communication view's number.
// SHARDSCOPE_SCREENSHOT_DIR=DIR also writes the window with the trace there.
#include <QtTest>

#include <QLabel>
#include <QPushButton>
#include <QStatusBar>

#include "comm_stats_model.h"
#include "comm_view.h"
#include "experiment_panel.h"
#include "main_window.h"
#include "run_history_model.h"

using namespace shardscope;

namespace {

const QString kJob = QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/fsdp_job");

QStringList statusTexts(MainWindow& w) {
  QStringList texts;
  for (const QLabel* label : w.statusBar()->findChildren<QLabel*>())
    if (label->isVisibleTo(w.statusBar())) texts << label->text();
  return texts;
}

}  // namespace

class TestImportedTraceForm : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_imported_trace_form"));
  }

  void theFormAndStatusBarNameTheTrace() {
    MainWindow w;
    w.setPersistSettings(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ExperimentPanel* panel = w.experimentPanel();
    QVERIFY(panel->runButton()->isEnabled());
    QString error;
    QVERIFY2(w.openTrace(kJob, &error), qPrintable(error));
    QCoreApplication::processEvents();

    // The form: what the trace is, not a config.
    QVERIFY(panel->showsImported());
    const QString said = panel->importedText();
    QVERIFY2(said.contains(QStringLiteral("Imported PyTorch trace")) && said.contains(QStringLiteral("fsdp_job")) &&
                 said.contains(QStringLiteral("4 ranks")),
             qPrintable(said));
    auto* note = panel->findChild<QLabel*>(QStringLiteral("importedNote"));
    QVERIFY(note && note->isVisibleTo(panel));
    for (const char* field : {"strategy", "ranks", "model"}) {
      QWidget* widget = panel->findChild<QWidget*>(QLatin1String(field));
      QVERIFY2(widget && !widget->isVisibleTo(panel), field);
    }
    QVERIFY(!panel->runButton()->isEnabled());
    QVERIFY(!panel->canRun());

    // The status bar: the trace, and no backend or clock of ShardScope's own.
    const QStringList texts = statusTexts(w);
    QVERIFY2(texts.filter(QStringLiteral("imported PyTorch trace · fsdp_job")).size() == 1, qPrintable(texts.join(" | ")));
    QVERIFY2(texts.filter(QStringLiteral("backend")).isEmpty(), qPrintable(texts.join(" | ")));

    if (const QString dir = qEnvironmentVariable("SHARDSCOPE_SCREENSHOT_DIR"); !dir.isEmpty()) {
      w.resize(1280, 720);
      QCoreApplication::processEvents();
      QVERIFY(w.grab().save(dir + QStringLiteral("/window-imported-fsdp-job-1280x720.png")));
    }

    // "Edit an experiment" brings the form back, Run with it.
    QTest::mouseClick(panel->findChild<QPushButton*>(QStringLiteral("leaveImported")), Qt::LeftButton);
    QVERIFY(!panel->showsImported());
    QVERIFY(panel->findChild<QWidget*>(QStringLiteral("strategy"))->isVisibleTo(panel));
    QVERIFY(panel->runButton()->isEnabled());
    // Opening the trace again, then picking a preset, does too.
    QVERIFY2(w.openTrace(kJob, &error), qPrintable(error));
    QVERIFY(panel->showsImported());
    QVERIFY(panel->selectPreset(QStringLiteral("ddp-basics")));
    QVERIFY(!panel->showsImported());
    QVERIFY(panel->runButton()->isEnabled());
  }

  void runsTableHidesWhatTheCommunicationViewHides() {
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY2(w.openTrace(kJob, &error), qPrintable(error));
    QCoreApplication::processEvents();
    RunHistoryModel* runs = w.history();
    QCOMPARE(runs->runCount(), 1);
    const CommStatsModel* comm = w.commView()->model();
    QVERIFY(comm->step() >= 0);
    const double hidden = comm->hiddenShare();
    QVERIFY2(hidden > 0 && hidden < 100, qPrintable(QString::number(hidden)));
    const QString table = runs->index(0, RunHistoryModel::Overlap).data().toString();
    const QString number = QString::number(hidden, 'f', 1);
    QCOMPARE(table, number + QStringLiteral(" %"));
    QVERIFY2(w.commView()->sourceText().contains(number + QStringLiteral(" % of communication hidden")),
             qPrintable(w.commView()->sourceText()));
    // And the table's step time is the view's step's (the profiler's last-but-one).
    int64_t slowest = 0;
    for (const CommStatsModel::RankTiming& t : comm->timing()) slowest = std::max(slowest, t.step_ns);
    QCOMPARE(runs->index(0, RunHistoryModel::Step).data().toString(),
             QString::number(static_cast<double>(slowest) * 1e-6, 'f', 3));
  }
};

QTEST_MAIN(TestImportedTraceForm)
#include "test_imported_trace_form.moc"
