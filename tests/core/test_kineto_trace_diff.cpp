// The trace diff (`analyze --diff CONTROL TEST`): per CPU op and GPU kernel
// name, count and time on each side, per profiled step of one rank (a side's
// totals in its ProfilerStep spans / its (rank, step) pairs), the change, the
// biggest regression first. Worked by hand, in µs:
//
// CONTROL, rank 0, steps #1 [0,100], #2 [100,200]: 2 rank-steps.
//   step 1: aten::mm [10,30] > launch [12,14] c1 -> gemm [20,50] (30)
//           aten::relu [40,45] > launch [41,42] c2 -> relu_k [50,54] (4)
//   step 2: aten::mm [110,130] > launch c3 -> gemm [120,150] (30)
//           aten::dropout [140,150] > launch c4 -> drop_k [150,156] (6)
//           aten::copy_ [190,199] > cudaMemcpyAsync [195,196] c6 -> Memcpy DtoH [205,215] (10):
//             runs after the step, counts by its launch
//   outside the steps: aten::mm [250,300] > launch c5 -> gemm [270,400]: left out
//   ops per step: aten::mm 2 x 20 -> 1, 20; relu 0.5, 2.5; dropout 0.5, 5; copy_ 0.5, 4.5
//   kernels per step: gemm 2 x 30 -> 1, 30; relu_k 0.5, 2; drop_k 0.5, 3; Memcpy DtoH 0.5, 5
// TEST, ranks 1 and 2 (no rank 0), two steps each: 4 rank-steps.
//   rank 1: #1 [0,100]: aten::mm [10,40] -> gemm [20,60] (40); aten::gelu [50,55] -> gelu_k [60,66] (6)
//           #2 [100,200]: aten::mm [110,140] -> gemm [120,160] (40)
//   rank 2: #5 [1000,1100]: aten::mm [1010,1040] -> gemm [1020,1060] (40)
//           #6 [1100,1200]: aten::mm [1110,1140] -> gemm [1120,1160]; aten::relu [1150,1152] -> relu_k [1160,1162] (2)
//   ops per step: aten::mm 4 x 30 -> 1, 30; gelu 0.25, 1.25; relu 0.25, 0.5
//   kernels per step: gemm 4 x 40 -> 1, 40; gelu_k 0.25, 1.5; relu_k 0.25, 0.5
// Kernels by delta: gemm +10 (n 0, +33.33 %), gelu_k +1.5 (test only, n +0.25),
//   relu_k -1.5 (n -0.25, -75 %), drop_k -3 (control only, n -0.5, -100 %), Memcpy DtoH -5 (-100 %).
// Ops by delta: aten::mm +10 (+50 %), aten::gelu +1.25 (test only), aten::relu -2 (-80 %),
//   aten::copy_ -4.5 (control only), aten::dropout -5 (control only).
// Real-shaped (kineto_real_job.h): CONTROL 3 steps of ranks 1, 3 (6 rank-steps), backward gemm 20.5;
//   TEST 2 steps (4 rank-steps), backward gemm 30.5.
//   sm90_xmma_gemm_bf16: control 12 kernels, 6 x 11.5 + 6 x 20.5 = 192 -> 2, 32 per step;
//     test 8, 4 x 11.5 + 4 x 30.5 = 168 -> 2, 42: +10, +31.25 %.
//   Memcpy DtoH: 6 x 1.5 = 9 -> 1, 1.5; 4 x 1.5 = 6 -> 1, 1.5: 0.
//   ops aten::addmm (58.5), aten::linear (70), aten::mm (90): 1 per step each side, delta 0; by name.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <sstream>

#include "kineto/trace_diff.h"
#include "kineto/trace_set.h"
#include "kineto_real_job.h"

using namespace shardscope::kineto;

namespace {

constexpr int64_t kUs = KinetoTraceWriter::kUs;
int64_t us(int64_t v) { return v * kUs; }

std::string writeControl(const QTemporaryDir& dir) {
  QDir(dir.path()).mkpath("control");
  KinetoTraceWriter w(0, 1);
  w.step(1, 0, us(100));
  w.step(2, us(100), us(100));
  w.op("aten::mm", us(10), us(20));
  w.launch("cudaLaunchKernel", us(12), us(2), 1);
  w.kernel("gemm", us(20), us(30), 1);
  w.op("aten::relu", us(40), us(5));
  w.launch("cudaLaunchKernel", us(41), us(1), 2);
  w.kernel("relu_k", us(50), us(4), 2);
  w.op("aten::mm", us(110), us(20));
  w.launch("cudaLaunchKernel", us(112), us(2), 3);
  w.kernel("gemm", us(120), us(30), 3);
  w.op("aten::dropout", us(140), us(10));
  w.launch("cudaLaunchKernel", us(141), us(1), 4);
  w.kernel("drop_k", us(150), us(6), 4);
  w.op("aten::copy_", us(190), us(9));
  w.launch("cudaMemcpyAsync", us(195), us(1), 6);
  w.gpu("gpu_memcpy", "Memcpy DtoH", us(205), us(10), 6);
  w.op("aten::mm", us(250), us(50));
  w.launch("cudaLaunchKernel", us(260), us(1), 5);
  w.kernel("gemm", us(270), us(130), 5);
  w.write(dir, "control/rank0.json");
  return dir.filePath("control").toStdString();
}

std::string writeTest(const QTemporaryDir& dir) {
  QDir(dir.path()).mkpath("test");
  KinetoTraceWriter r1(1, 3), r2(2, 3);
  r1.step(1, 0, us(100));
  r1.step(2, us(100), us(100));
  r1.op("aten::mm", us(10), us(30));
  r1.launch("cudaLaunchKernel", us(12), us(2), 1);
  r1.kernel("gemm", us(20), us(40), 1);
  r1.op("aten::gelu", us(50), us(5));
  r1.launch("cudaLaunchKernel", us(51), us(1), 2);
  r1.kernel("gelu_k", us(60), us(6), 2);
  r1.op("aten::mm", us(110), us(30));
  r1.launch("cudaLaunchKernel", us(112), us(2), 3);
  r1.kernel("gemm", us(120), us(40), 3);
  r2.step(5, us(1000), us(100));
  r2.step(6, us(1100), us(100));
  r2.op("aten::mm", us(1010), us(30));
  r2.launch("cudaLaunchKernel", us(1012), us(2), 1);
  r2.kernel("gemm", us(1020), us(40), 1);
  r2.op("aten::mm", us(1110), us(30));
  r2.launch("cudaLaunchKernel", us(1112), us(2), 2);
  r2.kernel("gemm", us(1120), us(40), 2);
  r2.op("aten::relu", us(1150), us(2));
  r2.launch("cudaLaunchKernel", us(1150), us(1), 3);
  r2.kernel("relu_k", us(1160), us(2), 3);
  r1.write(dir, "test/rank1.json");
  r2.write(dir, "test/rank2.json");
  return dir.filePath("test").toStdString();
}

QJsonObject diffJson(const TraceDiff& d) {
  std::ostringstream out;
  writeTraceDiffJson(d, out);
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(out.str()), &error);
  if (error.error != QJsonParseError::NoError) qWarning("%s", qPrintable(error.errorString()));
  return doc.object();
}

struct RowExpect {
  const char* name;
  const char* in;
  int control_count, test_count;
  double control_total, test_total;
  double control_n, test_n, delta_n;
  double control_us, test_us, delta_us;
  double delta_pct;  // NaN: null
};

void checkRows(const QJsonArray& rows, const std::vector<RowExpect>& expect) {
  QCOMPARE(rows.size(), qsizetype(expect.size()));
  for (size_t i = 0; i < expect.size(); ++i) {
    const QJsonObject r = rows[qsizetype(i)].toObject();
    const RowExpect& e = expect[i];
    QCOMPARE(r["name"].toString(), QString(e.name));
    QCOMPARE(r["in"].toString(), QString(e.in));
    QCOMPARE(r["control_count"].toInt(), e.control_count);
    QCOMPARE(r["test_count"].toInt(), e.test_count);
    QCOMPARE(r["control_total_us"].toDouble(), e.control_total);
    QCOMPARE(r["test_total_us"].toDouble(), e.test_total);
    QCOMPARE(r["control_count_per_step"].toDouble(), e.control_n);
    QCOMPARE(r["test_count_per_step"].toDouble(), e.test_n);
    QCOMPARE(r["delta_count_per_step"].toDouble(), e.delta_n);
    QCOMPARE(r["control_us_per_step"].toDouble(), e.control_us);
    QCOMPARE(r["test_us_per_step"].toDouble(), e.test_us);
    QCOMPARE(r["delta_us_per_step"].toDouble(), e.delta_us);
    if (std::isnan(e.delta_pct)) QVERIFY2(r["delta_pct"].isNull(), e.name);
    else QCOMPARE(r["delta_pct"].toDouble(), e.delta_pct);
  }
}

const double kNull = std::nan("");

}  // namespace

class TestKinetoTraceDiff : public QObject {
  Q_OBJECT

 private slots:
  void handJobs() {
    QTemporaryDir dir;
    const TraceSet control = loadTraceSet({writeControl(dir)});
    const TraceSet test = loadTraceSet({writeTest(dir)});
    const QJsonObject d = diffJson(computeTraceDiff(control, test));
    QCOMPARE(d["normalised"].toString(), QString("per profiled step of one rank"));
    const QJsonObject c = d["control"].toObject(), t = d["test"].toObject();
    QCOMPARE(c["ranks"].toArray(), QJsonArray{QJsonValue(0)});
    QCOMPARE(c["rank_steps"].toInt(), 2);
    QCOMPARE(c["ranks_without_steps"].toInt(), 0);
    QCOMPARE(t["ranks"].toArray(), QJsonArray({1, 2}));
    QCOMPARE(t["rank_steps"].toInt(), 4);
    QCOMPARE(t["ranks_without_steps"].toInt(), 0);
    checkRows(d["kernels"].toArray(), {
                                          {"gemm", "both", 2, 4, 60, 160, 1, 1, 0, 30, 40, 10, 33.33},
                                          {"gelu_k", "test", 0, 1, 0, 6, 0, 0.25, 0.25, 0, 1.5, 1.5, kNull},
                                          {"relu_k", "both", 1, 1, 4, 2, 0.5, 0.25, -0.25, 2, 0.5, -1.5, -75},
                                          {"drop_k", "control", 1, 0, 6, 0, 0.5, 0, -0.5, 3, 0, -3, -100},
                                          {"Memcpy DtoH", "control", 1, 0, 10, 0, 0.5, 0, -0.5, 5, 0, -5, -100},
                                      });
    checkRows(d["ops"].toArray(), {
                                      {"aten::mm", "both", 2, 4, 40, 120, 1, 1, 0, 20, 30, 10, 50},
                                      {"aten::gelu", "test", 0, 1, 0, 5, 0, 0.25, 0.25, 0, 1.25, 1.25, kNull},
                                      {"aten::relu", "both", 1, 1, 5, 2, 0.5, 0.25, -0.25, 2.5, 0.5, -2, -80},
                                      {"aten::copy_", "control", 1, 0, 9, 0, 0.5, 0, -0.5, 4.5, 0, -4.5, -100},
                                      {"aten::dropout", "control", 1, 0, 10, 0, 0.5, 0, -0.5, 5, 0, -5, -100},
                                  });
  }

  void textAndCsv() {
    QTemporaryDir dir;
    TraceDiff d = computeTraceDiff(loadTraceSet({writeControl(dir)}), loadTraceSet({writeTest(dir)}));
    d.control.inputs = {"ctl"};
    d.test.inputs = {"tst"};
    std::ostringstream text, csv;
    printTraceDiffText(d, text);
    writeTraceDiffCsv(d, csv);
    const std::string t = text.str();
    QVERIFY2(t.find("control ctl: 1 rank, 2 rank-steps") != std::string::npos, t.c_str());
    QVERIFY(t.find("test    tst: 2 ranks, 4 rank-steps") != std::string::npos);
    // The first kernel row is the biggest regression.
    const size_t kernels = t.find("GPU kernels (5; biggest regression first)");
    QVERIFY(kernels != std::string::npos);
    QVERIFY(t.find("10.000", kernels) < t.find("gelu_k", kernels));
    QVERIFY(t.find("gemm", kernels) < t.find("gelu_k", kernels));
    std::istringstream lines(csv.str());
    std::string line;
    std::vector<std::string> rows;
    while (std::getline(lines, line)) rows.push_back(line);
    QCOMPARE(rows.size(), size_t(11));  // header, 5 kernels, 5 ops
    QCOMPARE(rows[0], std::string("kind,name,in,control_count,test_count,control_total_us,test_total_us,"
                                  "control_count_per_step,test_count_per_step,delta_count_per_step,control_us_per_step,"
                                  "test_us_per_step,delta_us_per_step,delta_pct"));
    QCOMPARE(rows[1], std::string("kernel,gemm,both,2,4,60.000,160.000,1.000,1.000,0.000,30.000,40.000,10.000,33.33"));
    QCOMPARE(rows[2], std::string("kernel,gelu_k,test,0,1,0.000,6.000,0.000,0.250,0.250,0.000,1.500,1.500,"));
    QCOMPARE(rows[6], std::string("op,aten::mm,both,2,4,40.000,120.000,1.000,1.000,0.000,20.000,30.000,10.000,50.00"));
  }

  void rankWithoutStepsCountsWhole() {
    // A file without ProfilerStep spans against itself: every event, one step, no change.
    QTemporaryDir dir;
    KinetoTraceWriter w(0, 1);
    w.op("aten::mm", 0, us(10));
    w.launch("cudaLaunchKernel", us(1), us(1), 1);
    w.kernel("gemm", us(5), us(20), 1);
    const std::string path = w.write(dir, "r0.json");
    const TraceSet set = loadTraceSet({path});
    const TraceDiff d = computeTraceDiff(set, set);
    QCOMPARE(d.control.rank_steps, 1);
    QCOMPARE(d.control.ranks_without_steps, 1);
    QCOMPARE(d.kernels.size(), size_t(1));
    QCOMPARE(d.kernels[0].control_ns, us(20));
    QCOMPARE(d.kernels[0].deltaNsPerStep(), 0.0);
    QCOMPARE(d.kernels[0].deltaPct(), 0.0);
  }

  void realShapedJobs() {
    QTemporaryDir dir;
    const TraceSet control = loadTraceSet({writeRealShapedJob(dir, "control", 3, 20'500)});
    const TraceSet test = loadTraceSet({writeRealShapedJob(dir, "test", 2, 30'500)});
    const QJsonObject d = diffJson(computeTraceDiff(control, test));
    QCOMPARE(d["control"].toObject()["ranks"].toArray(), QJsonArray({1, 3}));
    QCOMPARE(d["control"].toObject()["rank_steps"].toInt(), 6);
    QCOMPARE(d["test"].toObject()["rank_steps"].toInt(), 4);
    checkRows(d["kernels"].toArray(),
              {
                  {"sm90_xmma_gemm_bf16", "both", 12, 8, 192, 168, 2, 2, 0, 32, 42, 10, 31.25},
                  {"Memcpy DtoH (Device -> Pinned)", "both", 6, 4, 9, 6, 1, 1, 0, 1.5, 1.5, 0, 0},
              });
    checkRows(d["ops"].toArray(), {
                                      {"aten::addmm", "both", 6, 4, 351, 234, 1, 1, 0, 58.5, 58.5, 0, 0},
                                      {"aten::linear", "both", 6, 4, 420, 280, 1, 1, 0, 70, 70, 0, 0},
                                      {"aten::mm", "both", 6, 4, 540, 360, 1, 1, 0, 90, 90, 0, 0},
                                  });
  }
};

QTEST_GUILESS_MAIN(TestKinetoTraceDiff)
#include "test_kineto_trace_diff.moc"
