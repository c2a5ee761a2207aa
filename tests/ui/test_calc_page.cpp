// The Capacity page is `shardscope-cli calc` in the window: for the same inputs
// its text is the CLI's output and its bars are the CLI's GB per rank; a bad
// field shows one error naming the field; it is a page of the window.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QTemporaryDir>
#include <sstream>

#include "analysis/schedule_comparison.h"
#include "capacity_page.h"
#include "cli/calc_command.h"
#include "cli/calc_stages.h"
#include "main_window.h"
#include "page_registry.h"
#include "schedule_compare_table.h"

using namespace shardscope;

namespace {

struct Cli {
  int code;
  QString out, err;
};

Cli calc(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = commandCalc(args, out, err);
  return {code, QString::fromStdString(out.str()), QString::fromStdString(err.str())};
}

}  // namespace

class TestCalcPage : public QObject {
  Q_OBJECT

 private slots:
  void matchesTheCli_data() {
    QTest::addColumn<QStringList>("fields");  // params, model, ranks, capacity, shard group, tp
    QTest::addColumn<QStringList>("flags");
    QTest::newRow("70e9 at 80 GB, no ranks") << QStringList{"70e9", "", "", "80", "", "1"}
                                             << QStringList{"--params", "70e9", "--capacity-gb", "80"};
    QTest::newRow("llama2-70b on 64") << QStringList{"", "llama2-70b", "64", "80", "", "1"}
                                      << QStringList{"--model", "llama2-70b", "--ranks", "64"};
    QTest::newRow("hsdp row") << QStringList{"7B", "", "16", "40", "8", "1"}
                              << QStringList{"--params", "7B", "--ranks", "16", "--capacity-gb", "40", "--shard-group", "8"};
    QTest::newRow("tp") << QStringList{"", "llama2-70b", "64", "2", "", "2"}
                        << QStringList{"--model", "llama2-70b", "--ranks", "64", "--capacity-gb", "2", "--tp", "2"};
  }
  void matchesTheCli() {
    QFETCH(QStringList, fields);
    QFETCH(QStringList, flags);
    CapacityPage page(nullptr);
    page.setInputs(fields[0], fields[1], fields[2], fields[3], fields[4], fields[5]);
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    std::vector<std::string> args;
    for (const QString& f : flags) args.push_back(f.toStdString());
    const Cli text = calc(args);
    QCOMPARE(text.code, 0);
    QCOMPARE(page.answerText(), text.out);
    args.push_back("--json");
    const Cli json = calc(args);
    const QJsonArray stages = QJsonDocument::fromJson(json.out.toUtf8()).object().value("stages").toArray();
    const QVector<double> bars = page.barGb();
    QCOMPARE(bars.size(), stages.size());
    for (int i = 0; i < stages.size(); ++i) {
      QCOMPARE(page.barStages()[i], stages[i].toObject().value("stage").toString());
      QCOMPARE(bars[i], stages[i].toObject().value("gb_per_rank").toDouble());
    }
  }

  void answersTheSmallestZero3P() {
    CapacityPage page(nullptr);
    page.setInputs("70e9", "", "", "80");
    QVERIFY(page.answerText().startsWith("smallest P for zero3: 14 ranks"));
    QCOMPARE(page.barStages(), (QStringList{"ddp", "zero1", "zero2", "zero3"}));
    QCOMPARE(page.barGb().back(), 70e9 * 16 / 14 / 1e9);
  }

  void aBadFieldShowsItsNamedError_data() {
    QTest::addColumn<QStringList>("fields");
    QTest::addColumn<QString>("error");
    QTest::newRow("ranks") << QStringList{"70e9", "", "abc", "80", "", "1"} << "Ranks expects an integer, got 'abc'";
    QTest::newRow("capacity") << QStringList{"70e9", "", "", "-3", "", "1"} << "Capacity (GB) must be in (0, 1e6] GB, got -3";
    QTest::newRow("params") << QStringList{"lots", "", "", "80", "", "1"} << "Parameters";
    QTest::newRow("no params") << QStringList{"", "", "", "80", "", "1"} << "enter a parameter count";
    QTest::newRow("tp") << QStringList{"70e9", "", "6", "80", "", "4"} << "Tensor parallel 4 must divide Ranks 6";
    QTest::newRow("shard group") << QStringList{"70e9", "", "", "80", "4", "1"} << "Shard group needs Ranks P";
  }
  void aBadFieldShowsItsNamedError() {
    QFETCH(QStringList, fields);
    QFETCH(QString, error);
    CapacityPage page(nullptr);
    page.setInputs(fields[0], fields[1], fields[2], fields[3], fields[4], fields[5]);
    QVERIFY2(page.error().contains(error), qPrintable(page.error()));
    QVERIFY(!page.error().contains("--"));  // the page's words, not the CLI's flags
    QVERIFY(page.answerText().isEmpty());
    QVERIFY(page.barGb().isEmpty());
    // Fixing the field clears it.
    page.setInputs("70e9", "", "", "80");
    QVERIFY(page.error().isEmpty());
  }

  // Pipeline stages given: the page is calc's stage plan, text and bars the CLI's.
  void stagePlanMatchesTheCli() {
    CapacityPage page(nullptr);
    page.setInputs("", "llama2-7b", "8", "80", "", "2");
    page.setStageInputs("4", "16", "1f1b", "selective", true, "zero1");
    QVERIFY2(page.error().isEmpty(), qPrintable(page.error()));
    QVERIFY(page.stagePlan());
    std::vector<std::string> args = {"--model", "llama2-7b", "--ranks", "8", "--capacity-gb", "80", "--tp", "2",
                                     "--pp", "4", "--microbatches", "16", "--pp-schedule", "1f1b",
                                     "--activation-checkpointing", "selective", "--strategy", "zero1", "--sp", "on"};
    const Cli text = calc(args);
    QCOMPARE(text.code, 0);
    QCOMPARE(page.answerText(), text.out);
    args.push_back("--json");
    const QJsonArray stages =
        QJsonDocument::fromJson(calc(args).out.toUtf8()).object().value("plan").toObject().value("stages").toArray();
    const QVector<double> peaks = page.stagePeakGb();
    QCOMPARE(peaks.size(), 4);
    for (int i = 0; i < stages.size(); ++i) QCOMPARE(peaks[i], stages[i].toObject().value("peak_bytes").toDouble() / 1e9);
    QVERIFY2(page.summaryText().contains("stage 0 is the most loaded") && page.summaryText().contains("fits"),
             qPrintable(page.summaryText()));
    // The chart: three stacked layers (model states, activations, buffers) and the capacity line.
    QCOMPARE(page.plot()->plottableCount(), 4);
    QTemporaryDir dir;
    QString error;
    QVERIFY2(page.figure(dir.filePath("stages.svg"), 1200, 700, {}, &error), qPrintable(error));
    // Clearing the stages goes back to the model-state table.
    page.setStageInputs("", "");
    QVERIFY(!page.stagePlan());
    QCOMPARE(page.barStages(), (QStringList{"ddp", "zero1", "zero2", "zero3"}));
  }

  // The schedules side by side: three meta runs off the GUI thread, their
  // rows the CLI's --compare-schedules numbers.
  void comparesSchedules() {
    CapacityPage page(nullptr);
    page.setInputs("", "llama2-7b", "8", "80", "", "2");
    page.setStageInputs("4", "16");
    QVERIFY(page.stagePlan());
    page.compareSchedules();
    QVERIFY(page.comparing());
    QTRY_VERIFY_WITH_TIMEOUT(!page.comparing(), 60000);
    const ScheduleCompareTable* table = page.compareTable();
    QCOMPARE(table->rowCount(), 3);
    QCOMPARE(table->cell(0, ScheduleCompareTable::Schedule), QString("gpipe"));
    QCOMPARE(table->cell(1, ScheduleCompareTable::Schedule), QString("1f1b"));
    QVERIFY(table->cell(2, ScheduleCompareTable::Schedule).startsWith("interleaved"));
    const ParallelPlan& plan = *page.stagePlan()->plan;
    const ScheduleComparison core = shardscope::compareSchedules(plan.config, plan.capacity_bytes);
    for (int r = 0; r < 3; ++r) {
      const ScheduleRow& row = core.rows[size_t(r)];
      QCOMPARE(table->cell(r, ScheduleCompareTable::StepMs), QString::number(row.step_ms, 'f', 1));
      QCOMPARE(table->cell(r, ScheduleCompareTable::BubbleFormula),
               QStringLiteral("%1 %").arg(100.0 * row.bubble_formula, 0, 'f', 1));
      const ScheduleStageRow& loaded = row.stages[size_t(row.most_loaded)];
      QCOMPARE(table->cell(r, ScheduleCompareTable::PeakMeasured), QString::number(double(loaded.peak_measured) / 1e9, 'f', 2));
      QCOMPARE(table->cell(r, ScheduleCompareTable::PeakPlanned), QString::number(double(loaded.peak_planned) / 1e9, 'f', 2));
    }
    // Changing an input clears the comparison (it belonged to the old plan).
    page.setStageInputs("2", "16");
    QCOMPARE(table->rowCount(), 0);
  }

  void aBadStageFieldIsNamed() {
    CapacityPage page(nullptr);
    page.setInputs("", "llama2-7b", "8", "80", "", "1");
    page.setStageInputs("3", "");
    QVERIFY2(page.error().startsWith("Pipeline stages 3 times Tensor parallel 1 must divide Ranks 8"),
             qPrintable(page.error()));
    QVERIFY(page.answerText().isEmpty() && page.stagePeakGb().isEmpty());
    page.setInputs("70e9", "", "8", "80", "", "1");
    page.setStageInputs("2", "");
    QVERIFY2(page.error().contains("Model: pick a model preset"), qPrintable(page.error()));
    QVERIFY(!page.error().contains("--"));
  }

  void typingRecomputes() {
    CapacityPage page(nullptr);
    auto* ranks = page.widget()->findChild<QLineEdit*>("capacityRanks");
    QVERIFY(ranks);
    ranks->setText("64");
    QVERIFY(page.answerText().startsWith("model: 70,000,000,000 params"));
    QVERIFY(page.answerText().contains("64 ranks"));
  }

  // 70B at 2 GB per rank: ZeRO-3's model state fits from 552 ranks, but one
  // 3.42 GB layer fits on none; the page (and its figure's title) lead with that.
  void leadsWithALayerThatFitsNowhere() {
    CapacityPage page(nullptr);
    page.setInputs("", "llama2-70b", "", "2");
    QVERIFY2(page.verdict().startsWith(QStringLiteral("A single layer does not fit 2 GB per rank")),
             qPrintable(page.verdict()));
    QVERIFY(page.verdict().contains(QStringLiteral("3.42 GB")));
    QVERIFY(page.verdict().contains(QStringLiteral("tensor parallelism")));
    QVERIFY(page.summaryText().startsWith(page.verdict()));
    QVERIFY(page.summaryText().contains(QStringLiteral("ZeRO-3 fits from 552 ranks")));
    QVERIFY(page.answerText().contains(QStringLiteral("a single layer does not fit 2 GB")));  // the CLI says it too
    page.setInputs("", "llama2-70b", "", "80");
    QCOMPARE(page.verdict(), QString());
    QVERIFY2(page.summaryText().startsWith(QStringLiteral("14 ranks (the smallest for ZeRO-3)")), qPrintable(page.summaryText()));
  }

  void isAPageWithAFigure() {
    MainWindow w;
    w.setPersistSettings(false);
    Page* page = w.pages().find("capacity");
    QVERIFY(page);
    QCOMPARE(page->unavailable(), QString());  // needs no run
    QTemporaryDir dir;
    QString error;
    const QString path = dir.filePath("capacity.png");
    QVERIFY2(w.exportViewFigure("capacity", path, 1280, 720, &error), qPrintable(error));
    QVERIFY(QFileInfo(path).size() > 1000);
  }
};

QTEST_MAIN(TestCalcPage)
#include "test_calc_page.moc"
