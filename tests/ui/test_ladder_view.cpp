// The ladder page: each flight-recorder fixture set (missing rank, size,
// dtype, op mismatch, p2p, truncated ring) opened as a folder in the window
// shows its first mismatch's row shaded at the right (group, seq) with the
// culprit rank's cell marked and the diagnosis above; a click on a cell shows
// that row's entry and stack on every rank; the rank-dependent-hang preset's
// own run gives the same ladder; the figure exports; with nothing open the
// page says why; dumps and snapshots hide the form's fields and the step
// walkthrough, which do not apply to them.
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "experiment_panel.h"
#include "inspection.h"
#include "ladder_view.h"
#include "main_window.h"
#include "page.h"
#include "postmortem/flight_recorder.h"
#include "preset_run.h"

using namespace shardscope;
using namespace shardscope::postmortem;

namespace {
const QString kData = QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/postmortem/");

// The on-screen sentence (the plot's text element), unwrapped.
QString shownSentence(LadderView* view) {
  auto* element = view->plot()->findChild<QCPTextElement*>(QStringLiteral("ladderSentence"));
  return element ? element->text().replace(QLatin1Char('\n'), QLatin1Char(' ')) : QString();
}

void click(LadderView* view, int row, int column) {
  view->plot()->replot();  // laid out: cells have their pixels
  QTest::mouseClick(view->plot(), Qt::LeftButton, {}, view->cellCenter(row, column));
}
}  // namespace

class TestLadderView : public QObject {
  Q_OBJECT

 private slots:
  void fixtureSets_data() {
    QTest::addColumn<QString>("set");
    QTest::addColumn<int>("seq");
    QTest::addColumn<int>("rank");
    QTest::addColumn<QString>("words");  // the sentence begins so
    QTest::newRow("missing rank") << "fr_missing_rank" << 4 << 2 << "rank 2 never joined all_reduce #4 of pg 0 (default_pg)";
    QTest::newRow("size") << "fr_size_mismatch" << 2 << 1 << "rank 1 disagrees on the size of all_reduce #2";
    QTest::newRow("dtype") << "fr_dtype_mismatch" << 3 << 1 << "rank 1 disagrees on the dtype of broadcast #3";
    QTest::newRow("op") << "fr_op_mismatch" << 5 << 2 << "rank 2 ran something else as #5 of pg 0 (default_pg)";
    QTest::newRow("p2p") << "fr_p2p" << 2 << 1 << "rank 1 never joined all_reduce #2 of pg 0 (default_pg)";
    QTest::newRow("truncated ring") << "fr_truncated_ring" << 7 << 1 << "rank 1 never joined all_reduce #7";
  }
  void fixtureSets() {
    QFETCH(QString, set);
    QFETCH(int, seq);
    QFETCH(int, rank);
    QFETCH(QString, words);
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    w.show();
    Page* page = w.pages().find(QStringLiteral("ladder"));
    QVERIFY(page);
    QString error;
    QVERIFY2(w.openTrace(kData + set, &error), qPrintable(error));
    QCOMPARE(page->unavailable(), QString());
    auto* view = w.findChild<LadderView*>();
    QVERIFY(view);
    QVERIFY(view->isVisible());  // opening dumps brings the ladder into view
    const FrLadder& l = view->ladder();
    QVERIFY(l.mismatch_row >= 0);
    const FrLadderRow& row = l.rows[static_cast<size_t>(l.mismatch_row)];
    QCOMPARE(row.pg, std::string("default_pg"));
    QCOMPARE(row.seq, int64_t(seq));
    QVERIFY(!row.p2p);
    for (size_t c = 0; c < l.ranks.size(); ++c)
      QCOMPARE(l.cell(l.mismatch_row, static_cast<int>(c)).culprit, l.ranks[c] == rank);
    QVERIFY2(view->sentenceText().startsWith(words), qPrintable(view->sentenceText()));
    QCOMPARE(shownSentence(view), view->sentenceText());
    // Opened on the mismatch: its row selected, its stacks below.
    QCOMPARE(view->selectedRow(), l.mismatch_row);
    QVERIFY2(view->detailText().contains(QStringLiteral("(the first mismatch)")), qPrintable(view->detailText()));
    // A click on another row's cell shows that row on every rank, with the stacks.
    const int other = l.mismatch_row > 0 ? 0 : 1;
    QVERIFY(other < static_cast<int>(l.rows.size()));
    click(view, other, 0);
    QCOMPARE(view->selectedRow(), other);
    for (int r : l.ranks)
      QVERIFY2(view->detailText().contains(QStringLiteral("rank %1: ").arg(r)), qPrintable(view->detailText()));
    QVERIFY2(view->detailText().contains(QStringLiteral("train.py:")), qPrintable(view->detailText()));
    QVERIFY(!view->detailText().contains(QStringLiteral("(the first mismatch)")));
    // And back on the culprit's cell.
    click(view, l.mismatch_row, l.column(rank));
    QCOMPARE(view->selectedRow(), l.mismatch_row);
    QVERIFY2(view->detailText().contains(QStringLiteral("rank %1: ").arg(rank) + QString::fromUtf8(frCellName(
                                             l.cell(l.mismatch_row, l.column(rank)).state).data()) + QStringLiteral("  <- culprit")),
             qPrintable(view->detailText()));
  }

  void postmortemFilesHideFormAndWalkthrough() {
    // Dumps and snapshots ran no experiment and no step of ShardScope's: the form
    // says what is open (its fields hidden, Run off) and the step walkthrough goes;
    // picking a preset brings the form back, the next run shown the walkthrough.
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* walk = w.findChild<QDockWidget*>(QStringLiteral("walkthroughDock"));
    QVERIFY(walk && walk->isVisible());
    ExperimentPanel* panel = w.experimentPanel();
    QString error;
    QVERIFY2(w.openTrace(kData + "fr_op_mismatch", &error), qPrintable(error));
    QCoreApplication::processEvents();
    QVERIFY(!walk->isVisible());
    QVERIFY(panel->showsImported());
    QVERIFY2(panel->importedText().contains(QStringLiteral("Flight-recorder dumps")) &&
                 panel->importedText().contains(QStringLiteral("4 ranks")),
             qPrintable(panel->importedText()));
    QVERIFY(!panel->findChild<QWidget*>(QStringLiteral("strategy"))->isVisibleTo(panel));
    QVERIFY(!panel->canRun());
    // Back to an experiment: the form and the walkthrough return.
    QVERIFY(panel->selectPreset(QStringLiteral("ddp-basics")));
    QVERIFY(!panel->showsImported());
    // A memory snapshot: the same.
    QVERIFY2(w.openFiles({kData + "snapshot_one_device.pickle"}, &error), qPrintable(error));
    QCoreApplication::processEvents();
    QVERIFY(!walk->isVisible());
    QVERIFY(panel->showsImported());
    QVERIFY2(panel->importedText().contains(QStringLiteral("memory snapshot")), qPrintable(panel->importedText()));
    // A profiler trace shown next: the walkthrough is back.
    QVERIFY2(w.openTrace(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/rank1_of_2.json"), &error),
             qPrintable(error));
    QCoreApplication::processEvents();
    QVERIFY(walk->isVisible());
  }

  void figureExports() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    QString error;
    QVERIFY2(w.openTrace(kData + "fr_op_mismatch", &error), qPrintable(error));
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("ladder.png"));
    QVERIFY2(w.exportViewFigure(QStringLiteral("ladder"), png, 1280, 720, &error), qPrintable(error));
    QImage image(png);
    QCOMPARE(image.size(), QSize(1280, 720));
    // The culprit's outline is in it: some pixels of the culprit red.
    int red = 0;
    for (int y = 0; y < image.height(); y += 2)
      for (int x = 0; x < image.width(); x += 2) {
        const QColor c = image.pixelColor(x, y);
        if (c.red() > 170 && c.green() < 60 && c.blue() < 60) ++red;
      }
    QVERIFY2(red > 50, qPrintable(QString::number(red)));
  }

  void theHangPresetsOwnLadder() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    runPreset(w, "rank-dependent-hang");
    if (QTest::currentTestFailed()) return;
    Page* page = w.pages().find(QStringLiteral("ladder"));
    QCOMPARE(page->unavailable(), QString());
    // Derived when the page is seen (not for every run shown).
    auto* view = w.findChild<LadderView*>();
    QVERIFY(view->ladder().ranks.empty());
    w.show();
    w.showView(QStringLiteral("ladder"));
    QCoreApplication::processEvents();
    const FrLadder& l = view->ladder();
    QCOMPARE(l.ranks, (std::vector<int>{0, 1, 2, 3}));
    QVERIFY(l.mismatch_row >= 0);
    QVERIFY(l.cell(l.mismatch_row, 1).culprit);
    QCOMPARE(l.cell(l.mismatch_row, 1).state, FrCell::Missing);
    QCOMPARE(l.cell(l.mismatch_row, 0).state, FrCell::Started);
    QVERIFY2(view->sentenceText().startsWith(QStringLiteral("rank 1 never joined all_reduce #")), qPrintable(view->sentenceText()));
    QVERIFY2(view->sentenceText().contains(QStringLiteral("ms into the run")), qPrintable(view->sentenceText()));
  }

  // A ladder dock behind another tab is "visible" to Qt (moved off the
  // window), yet a run must not derive its ladder there: at 512 ranks that
  // cost seconds at every run's end. Raising the tab derives it.
  void aLadderBehindAnotherTabWaitsForTheTab() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.showView(QStringLiteral("memory"));  // the ladder's tab group shows memory
    auto* view = w.findChild<LadderView*>();
    runPreset(w, "rank-dependent-hang");
    if (QTest::currentTestFailed()) return;
    QCoreApplication::processEvents();
    QVERIFY(view->ladder().ranks.empty());
    w.showView(QStringLiteral("ladder"));
    QCoreApplication::processEvents();
    QCOMPARE(view->ladder().ranks, (std::vector<int>{0, 1, 2, 3}));
  }

  void unavailableWithNothingOpen() {
    MainWindow w;
    w.setPersistSettings(false);
    Page* page = w.pages().find(QStringLiteral("ladder"));
    QVERIFY(page);
    QCOMPARE(page->unavailable(), QStringLiteral("there is no run to draw: run a preset or open a trace first"));
    QString error;
    QVERIFY(!w.openTrace(kData + "refused_object.pickle", &error));
    QVERIFY(!error.isEmpty());
  }
};

QTEST_MAIN(TestLadderView)
#include "test_ladder_view.moc"
