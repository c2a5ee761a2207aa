// step_times in `analyze`'s JSON and text: every ProfilerStep#N span per rank
// (the last one too, though HTA's tables leave it out), per step number the
// min / median / max across the ranks that have it and the slowest rank, and
// per rank how many steps it was the slowest in. Two jobs, worked by hand:
//
// Hand job (integer µs), ranks 0, 1, 2:
//   rank 0: #1 [0,100] #2 [100,220] #3 [220,300] #4 [300,350]  -> 100 120 80 50
//   rank 1: #1 [0,110] #2 [110,230] #3 [230,325] #4 [325,375]  -> 110 120 95 50
//   rank 2: #1 [0,90]  #2 [90,240]  #5 [240,310]                -> 90 150 70
//   step 1: 3 ranks, min 90, median 100, max 110, spread 20, slowest 1
//   step 2: 3 ranks, min 120, median 120, max 150, spread 30, slowest 2
//   step 3: 2 ranks, min 80, median (80+95)/2 = 87.5, max 95, spread 15, slowest 1
//   step 4: 2 ranks, 50 and 50: median 50, spread 0, slowest 0 (a tie: the lowest rank)
//   step 5: rank 2 only: median 70, no slowest (not counted)
//   slowest counts: rank 0: 1 (step 4), rank 1: 2 (steps 1, 3), rank 2: 1 (step 2).
// Real-shaped job (kineto_real_job.h), ranks 1 and 3:
//   rank 1: #10 1000.25, #11 1100.5, #12 950.125; rank 3: 1200.75, 1000, 950.125
//   step 10: min 1000.25, median 1100.5, max 1200.75, spread 200.5, slowest 3
//   step 11: min 1000, median 1050.25, max 1100.5, spread 100.5, slowest 1
//   step 12: both 950.125: spread 0, slowest 1 (tie: the lower rank)
//   slowest counts: rank 1: 2, rank 3: 1.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <sstream>

#include "kineto/step_times.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"
#include "kineto_real_job.h"

using namespace shardscope::kineto;

namespace {

constexpr int64_t kUs = KinetoTraceWriter::kUs;

// analyze's JSON and text for a folder, the JSON parsed.
QJsonObject analyzeJson(const std::string& folder, std::string* text = nullptr) {
  const TraceSet set = loadTraceSet({folder});
  const JobAnalysis job = analyzeTraceSet(set, {});
  std::ostringstream json, out;
  writeAnalysisJson(job, set, json);
  printAnalysisText(job, set, out);
  if (text) *text = out.str();
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(json.str()), &error);
  if (error.error != QJsonParseError::NoError) qWarning("%s", qPrintable(error.errorString()));
  return doc.object();
}

void checkRankSteps(const QJsonObject& rank, int number, int slowest, const std::vector<std::pair<int, double>>& steps) {
  QCOMPARE(rank["rank"].toInt(), number);
  QCOMPARE(rank["slowest_steps"].toInt(), slowest);
  const QJsonArray got = rank["steps"].toArray();
  QCOMPARE(got.size(), qsizetype(steps.size()));
  for (size_t i = 0; i < steps.size(); ++i) {
    QCOMPARE(got[qsizetype(i)].toObject()["step"].toInt(), steps[i].first);
    QCOMPARE(got[qsizetype(i)].toObject()["dur_us"].toDouble(), steps[i].second);
  }
}

// step, ranks, min, median, max, spread, slowest rank (-1: null)
void checkSpread(const QJsonObject& s, int step, int ranks, double min, double median, double max, double spread,
                 int slowest) {
  QCOMPARE(s["step"].toInt(), step);
  QCOMPARE(s["ranks"].toInt(), ranks);
  QCOMPARE(s["min_us"].toDouble(), min);
  QCOMPARE(s["median_us"].toDouble(), median);
  QCOMPARE(s["max_us"].toDouble(), max);
  QCOMPARE(s["spread_us"].toDouble(), spread);
  if (slowest < 0) QVERIFY(s["slowest_rank"].isNull());
  else QCOMPARE(s["slowest_rank"].toInt(), slowest);
}

}  // namespace

class TestKinetoStepTimes : public QObject {
  Q_OBJECT

 private slots:
  void handJob() {
    QTemporaryDir dir;
    KinetoTraceWriter r0(0, 3), r1(1, 3), r2(2, 3);
    const int64_t d0[] = {100, 120, 80, 50}, d1[] = {110, 120, 95, 50};
    int64_t t0 = 0, t1 = 0;
    for (int k = 0; k < 4; ++k) {
      r0.step(k + 1, t0 * kUs, d0[k] * kUs);
      r1.step(k + 1, t1 * kUs, d1[k] * kUs);
      t0 += d0[k];
      t1 += d1[k];
    }
    r2.step(1, 0, 90 * kUs);
    r2.step(2, 90 * kUs, 150 * kUs);
    r2.step(5, 240 * kUs, 70 * kUs);
    r0.write(dir, "r0.json");
    r1.write(dir, "r1.json");
    r2.write(dir, "r2.json");
    std::string text;
    const QJsonObject root = analyzeJson(dir.path().toStdString(), &text);
    // HTA's own tables leave the last step out; step_times does not.
    QCOMPARE(root["ranks"].toArray()[0].toObject()["steps_analyzed"].toInt(), 3);
    const QJsonObject st = root["step_times"].toObject();
    QCOMPARE(st["all_steps"].toBool(), true);
    const QJsonArray ranks = st["ranks"].toArray();
    QCOMPARE(ranks.size(), 3);
    checkRankSteps(ranks[0].toObject(), 0, 1, {{1, 100}, {2, 120}, {3, 80}, {4, 50}});
    checkRankSteps(ranks[1].toObject(), 1, 2, {{1, 110}, {2, 120}, {3, 95}, {4, 50}});
    checkRankSteps(ranks[2].toObject(), 2, 1, {{1, 90}, {2, 150}, {5, 70}});
    const QJsonArray steps = st["steps"].toArray();
    QCOMPARE(steps.size(), 5);
    checkSpread(steps[0].toObject(), 1, 3, 90, 100, 110, 20, 1);
    checkSpread(steps[1].toObject(), 2, 3, 120, 120, 150, 30, 2);
    checkSpread(steps[2].toObject(), 3, 2, 80, 87.5, 95, 15, 1);
    checkSpread(steps[3].toObject(), 4, 2, 50, 50, 50, 0, 0);
    checkSpread(steps[4].toObject(), 5, 1, 70, 70, 70, 0, -1);
    // The text: a row per step and the counts.
    QVERIFY2(text.find("step times (every ProfilerStep#N span, the last one included") != std::string::npos, text.c_str());
    QVERIFY(text.find("87.500") != std::string::npos);
    QVERIFY(text.find("- (one rank)") != std::string::npos);
    QVERIFY(text.find("rank 0: 1  rank 1: 2  rank 2: 1") != std::string::npos);
    // ProfilerStep spans are steps, not annotations.
    for (const auto& r : root["annotation_breakdown"].toObject()["ranks"].toArray())
      QCOMPARE(r.toObject()["annotations"].toArray().size(), 0);
  }

  void realShapedJob() {
    QTemporaryDir dir;
    const QJsonObject root = analyzeJson(writeRealShapedJob(dir, "job"));
    const QJsonObject st = root["step_times"].toObject();
    const QJsonArray ranks = st["ranks"].toArray();
    QCOMPARE(ranks.size(), 2);
    checkRankSteps(ranks[0].toObject(), 1, 2, {{10, 1000.25}, {11, 1100.5}, {12, 950.125}});
    checkRankSteps(ranks[1].toObject(), 3, 1, {{10, 1200.75}, {11, 1000}, {12, 950.125}});
    const QJsonArray steps = st["steps"].toArray();
    QCOMPARE(steps.size(), 3);
    checkSpread(steps[0].toObject(), 10, 2, 1000.25, 1100.5, 1200.75, 200.5, 3);
    checkSpread(steps[1].toObject(), 11, 2, 1000, 1050.25, 1100.5, 100.5, 1);
    checkSpread(steps[2].toObject(), 12, 2, 950.125, 950.125, 950.125, 0, 1);
  }

  void noStepsNoRows() {
    // A trace without ProfilerStep spans: the ranks are listed with no steps.
    QTemporaryDir dir;
    KinetoTraceWriter w(0, 1);
    w.op("aten::mm", 0, 10 * kUs);
    w.write(dir, "r0.json");
    const StepTimes s = computeStepTimes(loadTraceSet({dir.path().toStdString()}));
    QCOMPARE(s.ranks.size(), size_t(1));
    QVERIFY(s.ranks[0].steps.empty());
    QVERIFY(s.steps.empty());
    std::ostringstream text;
    printStepTimesText(s, text);
    QVERIFY(text.str().empty());
  }
};

QTEST_GUILESS_MAIN(TestKinetoStepTimes)
#include "test_kineto_step_times.moc"
