// annotation_breakdown in `analyze`'s JSON: per user_annotation name its
// count, span time and the GPU kernels launched inside it (self: innermost
// annotation; inclusive: with every enclosing one, a name once), and per
// annotation the CPU ops with most kernel time, their kernels and HTA's launch
// delay max(0, gpu ts - (cpu ts + cpu dur)). Worked by hand, in µs:
//
// Hand rank 0 (host tid 1000, stream 7; two steps, so HTA's own tables drop
// step 2, which the breakdown keeps):
//   ProfilerStep#1 [0,500], #2 [500,1000] (left out of the rows)
//   "## forward ##" [10,300]
//     "FSDP::unit0" [20,150]
//       aten::linear [30,80] > aten::addmm [35,75]
//         cudaLaunchKernel [40,45] c1 -> gemm_a [50,90] (40): delay 50-45 = 5
//         cudaLaunchKernel [60,62] c2 -> bias_add [95,105] (10): delay 33
//       aten::relu [90,120] > cudaLaunchKernel [100,104] c3 -> relu_k [110,115] (5): delay 6
//     "FSDP::unit1" [160,290] > aten::linear [170,220] > aten::addmm [175,215]
//         > cudaLaunchKernel [180,184] c4 -> gemm_a [200,260] (60): delay 16
//     cudaMemsetAsync [295,298] c5 (no op) -> Memset (Device) [300,302] (2): delay 2
//   "## forward ##" [510,700] > "FSDP::unit0" [520,600]
//       aten::addmm [530,560] > cudaLaunchKernel [540,545] c6 -> gemm_a [545,575] (30): delay 0
//       "FSDP::unit0" [580,595] (nested in itself) > cudaLaunchKernel [585,586] c7 -> relu_k [590,594] (4): delay 4
//   "many_ops" [710,780] > op_a..op_f [712+10i, +8], each cudaLaunchKernel [713+10i, +1]
//       c20+i -> k_<letter> [715+10i, +(6-i)]: 6, 5, 4, 3, 2, 1; delay 1 each
//   aten::add_ [790,810] > cudaLaunchKernel [800,805] c8 -> add_k [820,830] (10): no annotation
//   orphan_k [900,903] c99: its launch is not in the trace
//   gpu_user_annotation on stream 7: "## forward ##" [50,302] > "FSDP::unit0" [50,120], and
//   "ProfilerStep#1" [50,350] around them (left out, as the host's steps are)
// Totals: 15 kernels, 40+10+5+60+2+30+4+21+10+3 = 185; annotated 13 (all but
// add_k, orphan_k): 172; without launch 1.
// CPU rows, by inclusive kernel time:
//   "## forward ##": 2 spans, 290+190 = 480; self: Memset 1 kernel 2; inclusive c1..c7: 7, 151
//   "FSDP::unit0": 3 spans, 130+80+15 = 225; self = inclusive: c1,c2,c3,c6,c7: 5, 89 (c7 once)
//   "FSDP::unit1": 1, 130; 1 kernel, 60
//   "many_ops": 1, 70; 6 kernels, 21; ops: op_a..op_e kept (6..2), op_f left out (1)
// unit0's ops: aten::addmm 3 kernels 80 (gemm_a x2 70, delays 5 and 0: mean 2.5 max 5;
//   bias_add x1 10, delay 33), aten::relu 1 kernel 5 (delay 6), cudaLaunchKernel 1 kernel 4 (delay 4).
// GPU rows: "## forward ##": 1 span 252; self c4, c5: 2, 62; inclusive c1..c5: 5, 117.
//   "FSDP::unit0": 1 span 70; c1..c3: 3, 55.
// Real-shaped job (kineto_real_job.h), each of ranks 1 and 3, three steps:
//   9 kernels, 3 x (11.5 + 20.5 + 1.5) = 100.5, all annotated.
//   "## backward ##": 3 spans, 1200; 6 kernels, 66 (self = inclusive); ops aten::mm 3 kernels 61.5
//     (delay 176.875), cudaMemcpyAsync 3 kernels 4.5 (delay 48)
//   "## forward ##": 3 spans, 1170; self 0; inclusive 3, 34.5
//   "FullyShardedDataParallel.forward": 3 spans, 840; 3 kernels, 34.5; aten::addmm (delay 5.25)
//   gpu "## forward ##": 3 spans, 34.5; 3 kernels, 34.5.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <sstream>

#include "kineto/annotation_breakdown.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"
#include "kineto_real_job.h"

using namespace shardscope::kineto;

namespace {

constexpr int64_t kUs = KinetoTraceWriter::kUs;

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

// name, side, count, span, kernels self, kernel us self, kernels inclusive, kernel us inclusive, ops left out
void checkRow(const QJsonObject& a, const char* name, const char* side, int count, double span, int kself, double uself,
              int kincl, double uincl, int left_out = 0) {
  QCOMPARE(a["name"].toString(), QString(name));
  QCOMPARE(a["side"].toString(), QString(side));
  QCOMPARE(a["count"].toInt(), count);
  QCOMPARE(a["span_us"].toDouble(), span);
  QCOMPARE(a["kernels_self"].toInt(), kself);
  QCOMPARE(a["kernel_us_self"].toDouble(), uself);
  QCOMPARE(a["kernels_inclusive"].toInt(), kincl);
  QCOMPARE(a["kernel_us_inclusive"].toDouble(), uincl);
  QCOMPARE(a["ops_left_out"].toInt(), left_out);
}

// An op and its kernels: name, kernels, kernel us; per kernel name, count, us, delay mean, delay max.
struct KernelExpect {
  const char* name;
  int count;
  double us, delay_mean, delay_max;
};
void checkOp(const QJsonObject& op, const char* name, int kernels, double us, const std::vector<KernelExpect>& by) {
  QCOMPARE(op["name"].toString(), QString(name));
  QCOMPARE(op["kernels"].toInt(), kernels);
  QCOMPARE(op["kernel_us"].toDouble(), us);
  const QJsonArray got = op["by_kernel"].toArray();
  QCOMPARE(got.size(), qsizetype(by.size()));
  for (size_t i = 0; i < by.size(); ++i) {
    const QJsonObject k = got[qsizetype(i)].toObject();
    QCOMPARE(k["name"].toString(), QString(by[i].name));
    QCOMPARE(k["count"].toInt(), by[i].count);
    QCOMPARE(k["kernel_us"].toDouble(), by[i].us);
    QCOMPARE(k["launch_delay_mean_us"].toDouble(), by[i].delay_mean);
    QCOMPARE(k["launch_delay_max_us"].toDouble(), by[i].delay_max);
  }
}

std::string writeHandJob(const QTemporaryDir& dir) {
  KinetoTraceWriter w(0, 1);
  const auto us = [](int64_t v) { return v * kUs; };
  w.step(1, 0, us(500));
  w.step(2, us(500), us(500));
  w.annotation("## forward ##", us(10), us(290));
  w.annotation("FSDP::unit0", us(20), us(130));
  w.op("aten::linear", us(30), us(50));
  w.op("aten::addmm", us(35), us(40));
  w.launch("cudaLaunchKernel", us(40), us(5), 1);
  w.kernel("gemm_a", us(50), us(40), 1);
  w.launch("cudaLaunchKernel", us(60), us(2), 2);
  w.kernel("bias_add", us(95), us(10), 2);
  w.op("aten::relu", us(90), us(30));
  w.launch("cudaLaunchKernel", us(100), us(4), 3);
  w.kernel("relu_k", us(110), us(5), 3);
  w.annotation("FSDP::unit1", us(160), us(130));
  w.op("aten::linear", us(170), us(50));
  w.op("aten::addmm", us(175), us(40));
  w.launch("cudaLaunchKernel", us(180), us(4), 4);
  w.kernel("gemm_a", us(200), us(60), 4);
  w.launch("cudaMemsetAsync", us(295), us(3), 5);
  w.gpu("gpu_memset", "Memset (Device)", us(300), us(2), 5);
  w.annotation("## forward ##", us(510), us(190));
  w.annotation("FSDP::unit0", us(520), us(80));
  w.op("aten::addmm", us(530), us(30));
  w.launch("cudaLaunchKernel", us(540), us(5), 6);
  w.kernel("gemm_a", us(545), us(30), 6);
  w.annotation("FSDP::unit0", us(580), us(15));
  w.launch("cudaLaunchKernel", us(585), us(1), 7);
  w.kernel("relu_k", us(590), us(4), 7);
  w.annotation("many_ops", us(710), us(70));
  for (int i = 0; i < 6; ++i) {
    const std::string letter(1, char('a' + i));
    w.op("op_" + letter, us(712 + 10 * i), us(8));
    w.launch("cudaLaunchKernel", us(713 + 10 * i), us(1), 20 + i);
    w.kernel("k_" + letter, us(715 + 10 * i), us(6 - i), 20 + i);
  }
  w.op("aten::add_", us(790), us(20));
  w.launch("cudaLaunchKernel", us(800), us(5), 8);
  w.kernel("add_k", us(820), us(10), 8);
  w.kernel("orphan_k", us(900), us(3), 99);
  w.gpuAnnotation("ProfilerStep#1", us(50), us(300));  // the step's GPU copy: a step, not an annotation
  w.gpuAnnotation("## forward ##", us(50), us(252));
  w.gpuAnnotation("FSDP::unit0", us(50), us(70));
  w.write(dir, "rank0.json");
  return dir.path().toStdString();
}

}  // namespace

class TestKinetoAnnotations : public QObject {
  Q_OBJECT

 private slots:
  void handJob() {
    QTemporaryDir dir;
    std::string text;
    const QJsonObject root = analyzeJson(writeHandJob(dir), &text);
    QVERIFY(root["ranks"].toArray()[0].toObject()["last_step_dropped"].toBool());  // HTA's tables: step 1 only
    const QJsonObject ab = root["annotation_breakdown"].toObject();
    QCOMPARE(ab["launch_delay"].toString(), QString("max(0, gpu ts - (cpu ts + cpu dur))"));
    QCOMPARE(ab["top_ops"].toInt(), 5);
    const QJsonObject r = ab["ranks"].toArray()[0].toObject();
    QCOMPARE(r["rank"].toInt(), 0);
    QCOMPARE(r["kernels"].toInt(), 15);
    QCOMPARE(r["kernel_us"].toDouble(), 185.0);
    QCOMPARE(r["kernels_annotated"].toInt(), 13);
    QCOMPARE(r["kernel_us_annotated"].toDouble(), 172.0);
    QCOMPARE(r["kernels_without_launch"].toInt(), 1);
    const QJsonArray rows = r["annotations"].toArray();
    QCOMPARE(rows.size(), 6);
    checkRow(rows[0].toObject(), "## forward ##", "cpu", 2, 480, 1, 2, 7, 151);
    checkRow(rows[1].toObject(), "FSDP::unit0", "cpu", 3, 225, 5, 89, 5, 89);
    checkRow(rows[2].toObject(), "FSDP::unit1", "cpu", 1, 130, 1, 60, 1, 60);
    checkRow(rows[3].toObject(), "many_ops", "cpu", 1, 70, 6, 21, 6, 21, 1);
    checkRow(rows[4].toObject(), "## forward ##", "gpu", 1, 252, 2, 62, 5, 117);
    checkRow(rows[5].toObject(), "FSDP::unit0", "gpu", 1, 70, 3, 55, 3, 55);

    const QJsonArray fwd_ops = rows[0].toObject()["ops"].toArray();
    QCOMPARE(fwd_ops.size(), 1);
    checkOp(fwd_ops[0].toObject(), "cudaMemsetAsync", 1, 2, {{"Memset (Device)", 1, 2, 2, 2}});
    const QJsonArray unit0_ops = rows[1].toObject()["ops"].toArray();
    QCOMPARE(unit0_ops.size(), 3);
    checkOp(unit0_ops[0].toObject(), "aten::addmm", 3, 80, {{"gemm_a", 2, 70, 2.5, 5}, {"bias_add", 1, 10, 33, 33}});
    checkOp(unit0_ops[1].toObject(), "aten::relu", 1, 5, {{"relu_k", 1, 5, 6, 6}});
    checkOp(unit0_ops[2].toObject(), "cudaLaunchKernel", 1, 4, {{"relu_k", 1, 4, 4, 4}});
    const QJsonArray unit1_ops = rows[2].toObject()["ops"].toArray();
    QCOMPARE(unit1_ops.size(), 1);
    checkOp(unit1_ops[0].toObject(), "aten::addmm", 1, 60, {{"gemm_a", 1, 60, 16, 16}});
    const QJsonArray many = rows[3].toObject()["ops"].toArray();
    QCOMPARE(many.size(), 5);
    for (int i = 0; i < 5; ++i) {
      const std::string letter(1, char('a' + i));
      checkOp(many[i].toObject(), ("op_" + letter).c_str(), 1, 6 - i, {{("k_" + letter).c_str(), 1, double(6 - i), 1, 1}});
    }
    QCOMPARE(rows[4].toObject()["ops"].toArray().size(), 0);  // GPU rows have no CPU ops

    QVERIFY2(text.find("annotation breakdown, rank 0") != std::string::npos, text.c_str());
    QVERIFY(text.find("13 of 15 kernels (172.000 of 185.000 us) launched inside an annotation; 1 without their "
                      "launch in the trace") != std::string::npos);
    QVERIFY(text.find("op aten::addmm: 3 kernels, 80.000 us; gemm_a x2 70.000 us, launch delay mean 2.500 max "
                      "5.000 us") != std::string::npos);
  }

  void launchDelayIsHtas() {
    // The breakdown's delays come from the function HTA's launch statistics use:
    // on rank 0 of the hand job, step 1 (HTA's window) has c1..c5 with
    // delays 5, 33, 6, 16, 2: their max is launch_delay's max.
    QTemporaryDir dir;
    const TraceSet set = loadTraceSet({writeHandJob(dir)});
    const JobAnalysis job = analyzeTraceSet(set, {});
    QCOMPARE(job.ranks[0].hta_analyses.launch.pairs, 5);
    QCOMPARE(job.ranks[0].hta_analyses.launch.launch_delay.max, 33000.0);
    QCOMPARE(job.annotations[0].rows[1].ops[0].by_kernel[1].max_launch_delay_ns, 33000);
  }

  void realShapedJob() {
    QTemporaryDir dir;
    const QJsonObject root = analyzeJson(writeRealShapedJob(dir, "job"));
    QVERIFY(root["ranks"].toArray()[0].toObject()["rounded_to_us"].toBool());  // HTA's tables round; this does not
    const QJsonArray ranks = root["annotation_breakdown"].toObject()["ranks"].toArray();
    QCOMPARE(ranks.size(), 2);
    for (int i = 0; i < 2; ++i) {
      const QJsonObject r = ranks[i].toObject();
      QCOMPARE(r["rank"].toInt(), i == 0 ? 1 : 3);
      QCOMPARE(r["kernels"].toInt(), 9);
      QCOMPARE(r["kernel_us"].toDouble(), 100.5);
      QCOMPARE(r["kernels_annotated"].toInt(), 9);
      QCOMPARE(r["kernel_us_annotated"].toDouble(), 100.5);
      QCOMPARE(r["kernels_without_launch"].toInt(), 0);
      const QJsonArray rows = r["annotations"].toArray();
      QCOMPARE(rows.size(), 4);
      checkRow(rows[0].toObject(), "## backward ##", "cpu", 3, 1200, 6, 66, 6, 66);
      checkRow(rows[1].toObject(), "## forward ##", "cpu", 3, 1170, 0, 0, 3, 34.5);
      checkRow(rows[2].toObject(), "FullyShardedDataParallel.forward", "cpu", 3, 840, 3, 34.5, 3, 34.5);
      checkRow(rows[3].toObject(), "## forward ##", "gpu", 3, 34.5, 3, 34.5, 3, 34.5);
      const QJsonArray bwd = rows[0].toObject()["ops"].toArray();
      QCOMPARE(bwd.size(), 2);
      checkOp(bwd[0].toObject(), "aten::mm", 3, 61.5, {{"sm90_xmma_gemm_bf16", 3, 61.5, 176.875, 176.875}});
      checkOp(bwd[1].toObject(), "cudaMemcpyAsync", 3, 4.5, {{"Memcpy DtoH (Device -> Pinned)", 3, 4.5, 48, 48}});
      QCOMPARE(rows[1].toObject()["ops"].toArray().size(), 0);
      const QJsonArray fsdp = rows[2].toObject()["ops"].toArray();
      QCOMPARE(fsdp.size(), 1);
      checkOp(fsdp[0].toObject(), "aten::addmm", 3, 34.5, {{"sm90_xmma_gemm_bf16", 3, 34.5, 5.25, 5.25}});
    }
  }
};

QTEST_GUILESS_MAIN(TestKinetoAnnotations)
#include "test_kineto_annotations.moc"
